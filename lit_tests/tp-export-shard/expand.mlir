// tp-export-shard where the chips' program leaves the unsharded shape open: %w [8, 4] cut
// along its rows over 2 chips, expanded to [1, 8, 4]. Each chip holds [1, 4, 4], which an
// expand to [2, 4, 4] cut along dim 0 would give too; the outermost reading ([2, 4, 4])
// does not split back to this program (the whole %b reads the sum as [1, 8, 4]), so the
// export takes the innermost: the source's shape.
// RUN: tp-opt %s --tp-export-shard | filecheck %s
// RUN: tp-opt %s --tp-export-shard --tp-import-shard | filecheck %s --check-prefix=BACK

// CHECK-LABEL: builtin.module attributes {tp.chips = 1 : i64} {
// CHECK:         %w_sharded = shard.shard %w to %split0_r2 : tensor<8x4xf32>
// CHECK:         %e = tensor.expand_shape %w_sharded {{\[}}[0 : i64, 1 : i64], [2 : i64]] output_shape [1, 8, 4] : tensor<8x4xf32> into tensor<1x8x4xf32>
// CHECK:         %e_sharded = shard.shard %e to %split1_r3 : tensor<1x8x4xf32>
// CHECK:         %n = arith.addf %e_sharded, %b : tensor<1x8x4xf32>
// CHECK-NOT:     tp.

// BACK-LABEL: builtin.module attributes {tp.chips = 2 : i64
// BACK:         %e_c0 = tensor.expand_shape %e_weight_c0 {{\[}}[0 : i64, 1 : i64], [2 : i64]] output_shape [1, 4, 4]
// BACK:         %n = tp.unshard %n_c0, %n_c1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w.weight"}, %b: tensor<1x8x4xf32> {tp.name = "b"}) -> tensor<1x8x4xf32> {
    %e_weight_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e_weight_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e_c0 = tensor.expand_shape %e_weight_c0 [[0 : i64, 1 : i64], [2 : i64]] output_shape [1, 4, 4] : tensor<4x4xf32, #tp.chip<0>> into tensor<1x4x4xf32, #tp.chip<0>>
    %e_c1 = tensor.expand_shape %e_weight_c1 [[0 : i64, 1 : i64], [2 : i64]] output_shape [1, 4, 4] : tensor<4x4xf32, #tp.chip<1>> into tensor<1x4x4xf32, #tp.chip<1>>
    %n_b_c0 = tp.shard %b at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8, 4]> : tensor<1x8x4xf32> -> tensor<1x4x4xf32, #tp.chip<0>>
    %n_c0 = arith.addf %e_c0, %n_b_c0 : tensor<1x4x4xf32, #tp.chip<0>>
    %n_b_c1 = tp.shard %b at #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8, 4]> : tensor<1x8x4xf32> -> tensor<1x4x4xf32, #tp.chip<1>>
    %n_c1 = arith.addf %e_c1, %n_b_c1 : tensor<1x4x4xf32, #tp.chip<1>>
    %n = tp.unshard %n_c0, %n_c1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8, 4]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8, 4]>] : tensor<1x4x4xf32, #tp.chip<0>>, tensor<1x4x4xf32, #tp.chip<1>> -> tensor<1x8x4xf32>
    func.return %n : tensor<1x8x4xf32>
  }
}
