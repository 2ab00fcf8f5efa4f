// tp-export-shard: tp-split's output written back as the unsharded program with MLIR Shard
// annotations (the plan on the arguments, tp's propagation on the values it cuts or sums);
// tp-import-shard on it gives the program back.
// RUN: tp-opt %s --tp-export-shard | filecheck %s
// RUN: tp-opt %s --tp-export-shard --tp-import-shard | filecheck %s --check-prefix=BACK

// Megatron's MLP over 2 chips: up cut along its output features, down along its input
// features, the row-split product summed by one tp.allreduce. Exported: one grid, the two
// weights' shardings, the hidden activation claimed cut along its features, the product
// claimed replicated where tp sums it; chip 0's ops over whole values, no tp op left.
// CHECK-LABEL: builtin.module attributes {tp.chips = 1 : i64} {
// CHECK-NEXT:    shard.grid @chips(shape = 2)
// CHECK-NEXT:    func.func @mlp
// CHECK-DAG:     %replicated = shard.sharding @chips split_axes = [[], []] : !shard.sharding
// CHECK-DAG:     %split1_r2 = shard.sharding @chips split_axes = [[], [0]] : !shard.sharding
// CHECK-DAG:     %split0_r2 = shard.sharding @chips split_axes = [[0], []] : !shard.sharding
// CHECK:         %up_sharded = shard.shard %up to %split0_r2 : tensor<8x4xf32>
// CHECK-NEXT:    %down_sharded = shard.shard %down to %split1_r2 : tensor<4x8xf32>
// CHECK:         %e8 = tensor.empty() : tensor<1x8xf32>
// CHECK-NEXT:    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>)
// CHECK-NEXT:    %h = linalg.generic {{.*}} ins(%x, %up_sharded : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>)
// CHECK:         %h_sharded = shard.shard %h to %split1_r2 : tensor<1x8xf32>
// CHECK:         %y = linalg.generic {{.*}} ins(%h_sharded, %down_sharded : tensor<1x8xf32>, tensor<4x8xf32>)
// CHECK:         %y_sharded = shard.shard %y to %replicated : tensor<1x4xf32>
// CHECK-NEXT:    %out = arith.addf %x, %y_sharded : tensor<1x4xf32>
// CHECK-NEXT:    func.return %out : tensor<1x4xf32>
// CHECK-NOT:     tp.

// Imported again: the program itself (certified by the import).
// BACK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// BACK:         %h_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>
// BACK:         %y_weight_c1 = tp.shard %down at #tp.slice<axis = 1, ranges = [(4, 4)], full = [4, 8]>
// BACK:         %y_sum = tp.allreduce %y_c0, %y_c1
// BACK-NEXT:    %out = arith.addf %x, %y_sum
// BACK-NOT:     shard.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    %z = arith.constant 0.000000e+00 : f32
    %h_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %h_weight_c1 = tp.shard %up at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %h_e8_c0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %h_zeros8_c0 = linalg.fill ins(%z : f32) outs(%h_e8_c0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h_c0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %h_weight_c0 : tensor<1x4xf32>, tensor<4x4xf32, #tp.chip<0>>) outs(%h_zeros8_c0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %h_e8_c1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %h_zeros8_c1 = linalg.fill ins(%z : f32) outs(%h_e8_c1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %h_c1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %h_weight_c1 : tensor<1x4xf32>, tensor<4x4xf32, #tp.chip<1>>) outs(%h_zeros8_c1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a_1: f32, %w_1: f32, %acc_1: f32):
      %m_1 = arith.mulf %a_1, %w_1 : f32
      %s_1 = arith.addf %acc_1, %m_1 : f32
      linalg.yield %s_1 : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %y_weight_c0 = tp.shard %down at #tp.slice<axis = 1, ranges = [(0, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %y_weight_c1 = tp.shard %down at #tp.slice<axis = 1, ranges = [(4, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %y_e4_c0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %y_zeros4_c0 = linalg.fill ins(%z : f32) outs(%y_e4_c0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %y_c0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h_c0, %y_weight_c0 : tensor<1x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<0>>) outs(%y_zeros4_c0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a_2: f32, %w_2: f32, %acc_2: f32):
      %m_2 = arith.mulf %a_2, %w_2 : f32
      %s_2 = arith.addf %acc_2, %m_2 : f32
      linalg.yield %s_2 : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %y_e4_c1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %y_zeros4_c1 = linalg.fill ins(%z : f32) outs(%y_e4_c1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %y_c1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h_c1, %y_weight_c1 : tensor<1x4xf32, #tp.chip<1>>, tensor<4x4xf32, #tp.chip<1>>) outs(%y_zeros4_c1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a_3: f32, %w_3: f32, %acc_3: f32):
      %m_3 = arith.mulf %a_3, %w_3 : f32
      %s_3 = arith.addf %acc_3, %m_3 : f32
      linalg.yield %s_3 : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %y_sum = tp.allreduce %y_c0, %y_c1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %out = arith.addf %x, %y_sum : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}
