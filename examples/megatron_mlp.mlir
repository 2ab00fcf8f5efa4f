// A Megatron MLP over 2 chips: gate/up split by column, down_proj by row, one all-reduce,
// the residual add on the spine. Weights are full host tensors in Hugging Face layout
// [out_features, in_features]; tp.shard is the host's loading map (each chip's slice).
// No tp.name, no tp.role: tp-run binds the arguments by their SSA names (x, gate, up, down)
// from either file, e.g. `tp-run examples/megatron_mlp.mlir --inputs mlp.npz`.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x8xf32>, %gate: tensor<16x8xf32>, %up: tensor<16x8xf32>, %down: tensor<8x16xf32>) -> tensor<1x8xf32> {
    %zero = arith.constant 0.0 : f32  // sums start from zero: an empty tensor's contents are undefined
    // chip 0: columns 0..8 of gate/up, the matching columns of down_proj
    %gate0 = tp.shard %gate at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<0>>
    %up0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<0>>
    %down0 = tp.shard %down at #tp.slice<axis = 1, ranges = [(0, 8)], full = [8, 16]> : tensor<8x16xf32> -> tensor<8x8xf32, #tp.chip<0>>
    %g0_e = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %g0_init = linalg.fill ins(%zero : f32) outs(%g0_e : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %g0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %gate0 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<0>>) outs(%g0_init : tensor<1x8xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<0>>
    %u0_e = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %u0_init = linalg.fill ins(%zero : f32) outs(%u0_e : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %u0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up0 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<0>>) outs(%u0_init : tensor<1x8xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<0>>
    %a0_init = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %a0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%g0, %u0 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<0>>) outs(%a0_init : tensor<1x8xf32, #tp.chip<0>>) {
    ^bb0(%g: f32, %u: f32, %o: f32):
      %ng = arith.negf %g : f32
      %e = math.exp %ng : f32
      %one = arith.constant 1.0 : f32
      %d = arith.addf %one, %e : f32
      %silu = arith.divf %g, %d : f32
      %y = arith.mulf %silu, %u : f32
      linalg.yield %y : f32
    } -> tensor<1x8xf32, #tp.chip<0>>
    %p0_e = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %p0_init = linalg.fill ins(%zero : f32) outs(%p0_e : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %down0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x8xf32, #tp.chip<0>>) outs(%p0_init : tensor<1x8xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<0>>
    // chip 1: columns 8..16 of gate/up, the matching columns of down_proj
    %gate1 = tp.shard %gate at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<1>>
    %up1 = tp.shard %up at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<1>>
    %down1 = tp.shard %down at #tp.slice<axis = 1, ranges = [(8, 8)], full = [8, 16]> : tensor<8x16xf32> -> tensor<8x8xf32, #tp.chip<1>>
    %g1_e = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %g1_init = linalg.fill ins(%zero : f32) outs(%g1_e : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %g1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %gate1 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<1>>) outs(%g1_init : tensor<1x8xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<1>>
    %u1_e = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %u1_init = linalg.fill ins(%zero : f32) outs(%u1_e : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %u1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up1 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<1>>) outs(%u1_init : tensor<1x8xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<1>>
    %a1_init = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %a1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%g1, %u1 : tensor<1x8xf32, #tp.chip<1>>, tensor<1x8xf32, #tp.chip<1>>) outs(%a1_init : tensor<1x8xf32, #tp.chip<1>>) {
    ^bb0(%g: f32, %u: f32, %o: f32):
      %ng = arith.negf %g : f32
      %e = math.exp %ng : f32
      %one = arith.constant 1.0 : f32
      %d = arith.addf %one, %e : f32
      %silu = arith.divf %g, %d : f32
      %y = arith.mulf %silu, %u : f32
      linalg.yield %y : f32
    } -> tensor<1x8xf32, #tp.chip<1>>
    %p1_e = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %p1_init = linalg.fill ins(%zero : f32) outs(%p1_e : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %down1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x8xf32, #tp.chip<1>>) outs(%p1_init : tensor<1x8xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<1>>
    %sum = tp.allreduce %p0, %p1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>> -> tensor<1x8xf32>
    %out = arith.addf %x, %sum : tensor<1x8xf32>
    func.return %out : tensor<1x8xf32>
  }
}
