// Generated: tp-opt ../../../examples/megatron_mlp.mlir -p tp-relocate{allreduce=oneshot},tp-transfers,tp-phase,tp-link-points,tp-relay
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x8xf32>, %gate: tensor<16x8xf32>, %up: tensor<16x8xf32>, %down: tensor<8x16xf32>) -> tensor<1x8xf32> {
    %out = tp.chip_program on 0 (%gate, %up, %down, %x) {
    ^bb0(%gate_1: tensor<16x8xf32>, %up_1: tensor<16x8xf32>, %down_1: tensor<8x16xf32>, %x_1: tensor<1x8xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %g0_e = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
      %u0_e = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
      %a0_init = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
      %p0_e = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
      %gate0 = tp.section "gate0" on [0] {
        %0 = tp.shard %gate_1 at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<0>>
        tp.yield %0 : tensor<8x8xf32, #tp.chip<0>>
      } : tensor<8x8xf32, #tp.chip<0>>
      %up0 = tp.section "up0" on [0] {
        %1 = tp.shard %up_1 at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<0>>
        tp.yield %1 : tensor<8x8xf32, #tp.chip<0>>
      } : tensor<8x8xf32, #tp.chip<0>>
      %down0 = tp.section "down0" on [0] {
        %2 = tp.shard %down_1 at #tp.slice<axis = 1, ranges = [(0, 8)], full = [8, 16]> : tensor<8x16xf32> -> tensor<8x8xf32, #tp.chip<0>>
        tp.yield %2 : tensor<8x8xf32, #tp.chip<0>>
      } : tensor<8x8xf32, #tp.chip<0>>
      %g0_init = tp.section "g0_init" on [0] {
        %3 = linalg.fill ins(%zero : f32) outs(%g0_e : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %3 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %g0 = tp.section "g0" on [0] {
        %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x_1, %gate0 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<0>>) outs(%g0_init : tensor<1x8xf32, #tp.chip<0>>) {
        ^bb0(%a: f32, %b: f32, %acc: f32):
          %m = arith.mulf %a, %b : f32
          %s = arith.addf %acc, %m : f32
          linalg.yield %s : f32
        } -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %4 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %u0_init = tp.section "u0_init" on [0] {
        %5 = linalg.fill ins(%zero : f32) outs(%u0_e : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %5 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %u0 = tp.section "u0" on [0] {
        %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x_1, %up0 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<0>>) outs(%u0_init : tensor<1x8xf32, #tp.chip<0>>) {
        ^bb0(%a_1: f32, %b_1: f32, %acc_1: f32):
          %m_1 = arith.mulf %a_1, %b_1 : f32
          %s_1 = arith.addf %acc_1, %m_1 : f32
          linalg.yield %s_1 : f32
        } -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %6 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %a0 = tp.section "a0" on [0] {
        %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g0, %u0 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<0>>) outs(%a0_init : tensor<1x8xf32, #tp.chip<0>>) {
        ^bb0(%g: f32, %u: f32, %o: f32):
          %ng = arith.negf %g : f32
          %e = math.exp %ng : f32
          %one = arith.constant 1.000000e+00 : f32
          %d = arith.addf %one, %e : f32
          %silu = arith.divf %g, %d : f32
          %y = arith.mulf %silu, %u : f32
          linalg.yield %y : f32
        } -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %7 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %p0_init = tp.section "p0_init" on [0] {
        %8 = linalg.fill ins(%zero : f32) outs(%p0_e : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %8 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %p0 = tp.section "p0" on [0] {
        %9 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %down0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x8xf32, #tp.chip<0>>) outs(%p0_init : tensor<1x8xf32, #tp.chip<0>>) {
        ^bb0(%a_2: f32, %b_2: f32, %acc_2: f32):
          %m_2 = arith.mulf %a_2, %b_2 : f32
          %s_2 = arith.addf %acc_2, %m_2 : f32
          linalg.yield %s_2 : f32
        } -> tensor<1x8xf32, #tp.chip<0>>
        tp.yield %9 : tensor<1x8xf32, #tp.chip<0>>
      } : tensor<1x8xf32, #tp.chip<0>>
      %p1 = tp.link 1 sends(%p0) as ["p0"] receives ["p1"] : (tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<1>>
      %sum = tp.section "sum" on [0] {
        %10 = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>> -> tensor<1x8xf32>
        tp.yield %10 : tensor<1x8xf32>
      } : tensor<1x8xf32>
      %out_1 = tp.section "out" on [0] {
        %11 = arith.addf %x_1, %sum : tensor<1x8xf32>
        tp.yield %11 : tensor<1x8xf32>
      } : tensor<1x8xf32>
      tp.finish %out_1 : tensor<1x8xf32>
    } -> (tensor<1x8xf32>)
    tp.chip_program on 1 (%gate, %up, %down, %x) {
    ^bb0(%gate_1: tensor<16x8xf32>, %up_1: tensor<16x8xf32>, %down_1: tensor<8x16xf32>, %x_1: tensor<1x8xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %g1_e = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
      %u1_e = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
      %a1_init = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
      %p1_e = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
      %gate1 = tp.section "gate1" on [1] {
        %0 = tp.shard %gate_1 at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<1>>
        tp.yield %0 : tensor<8x8xf32, #tp.chip<1>>
      } : tensor<8x8xf32, #tp.chip<1>>
      %up1 = tp.section "up1" on [1] {
        %1 = tp.shard %up_1 at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<1>>
        tp.yield %1 : tensor<8x8xf32, #tp.chip<1>>
      } : tensor<8x8xf32, #tp.chip<1>>
      %down1 = tp.section "down1" on [1] {
        %2 = tp.shard %down_1 at #tp.slice<axis = 1, ranges = [(8, 8)], full = [8, 16]> : tensor<8x16xf32> -> tensor<8x8xf32, #tp.chip<1>>
        tp.yield %2 : tensor<8x8xf32, #tp.chip<1>>
      } : tensor<8x8xf32, #tp.chip<1>>
      %g1_init = tp.section "g1_init" on [1] {
        %3 = linalg.fill ins(%zero : f32) outs(%g1_e : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %3 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %g1 = tp.section "g1" on [1] {
        %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x_1, %gate1 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<1>>) outs(%g1_init : tensor<1x8xf32, #tp.chip<1>>) {
        ^bb0(%a: f32, %b: f32, %acc: f32):
          %m = arith.mulf %a, %b : f32
          %s = arith.addf %acc, %m : f32
          linalg.yield %s : f32
        } -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %4 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %u1_init = tp.section "u1_init" on [1] {
        %5 = linalg.fill ins(%zero : f32) outs(%u1_e : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %5 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %u1 = tp.section "u1" on [1] {
        %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x_1, %up1 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<1>>) outs(%u1_init : tensor<1x8xf32, #tp.chip<1>>) {
        ^bb0(%a_1: f32, %b_1: f32, %acc_1: f32):
          %m_1 = arith.mulf %a_1, %b_1 : f32
          %s_1 = arith.addf %acc_1, %m_1 : f32
          linalg.yield %s_1 : f32
        } -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %6 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %a1 = tp.section "a1" on [1] {
        %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g1, %u1 : tensor<1x8xf32, #tp.chip<1>>, tensor<1x8xf32, #tp.chip<1>>) outs(%a1_init : tensor<1x8xf32, #tp.chip<1>>) {
        ^bb0(%g: f32, %u: f32, %o: f32):
          %ng = arith.negf %g : f32
          %e = math.exp %ng : f32
          %one = arith.constant 1.000000e+00 : f32
          %d = arith.addf %one, %e : f32
          %silu = arith.divf %g, %d : f32
          %y = arith.mulf %silu, %u : f32
          linalg.yield %y : f32
        } -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %7 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %p1_init = tp.section "p1_init" on [1] {
        %8 = linalg.fill ins(%zero : f32) outs(%p1_e : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %8 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %p1 = tp.section "p1" on [1] {
        %9 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %down1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x8xf32, #tp.chip<1>>) outs(%p1_init : tensor<1x8xf32, #tp.chip<1>>) {
        ^bb0(%a_2: f32, %b_2: f32, %acc_2: f32):
          %m_2 = arith.mulf %a_2, %b_2 : f32
          %s_2 = arith.addf %acc_2, %m_2 : f32
          linalg.yield %s_2 : f32
        } -> tensor<1x8xf32, #tp.chip<1>>
        tp.yield %9 : tensor<1x8xf32, #tp.chip<1>>
      } : tensor<1x8xf32, #tp.chip<1>>
      %p0 = tp.link 1 sends(%p1) as ["p1"] receives ["p0"] : (tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<0>>
      %sum = tp.section "sum" on [1] {
        %10 = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>> -> tensor<1x8xf32>
        tp.yield %10 : tensor<1x8xf32>
      } : tensor<1x8xf32>
      %out_1 = tp.section "out" on [1] {
        %11 = arith.addf %x_1, %sum : tensor<1x8xf32>
        tp.yield %11 : tensor<1x8xf32>
      } : tensor<1x8xf32>
      tp.finish
    } -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
      tp.copy round 1 "p1" from 1 to 0
      tp.run_to round 1 chip 0 halt 2
      tp.copy round 1 "p0" from 0 to 1
      tp.run_to round 1 chip 1 halt 2
    }
    func.return %out : tensor<1x8xf32>
  }
}

