// tp-transfers moves a reduce-scatter's blocks to the chips that fold them (block s of chip
// c's partial from c to s) and every all-gather block to every other chip; nothing else
// crosses (the residual windows are host data every chip reads itself).
// RUN: tp-opt %S/Inputs/scatter.mlir --tp-transfers | filecheck %s

// CHECK-LABEL: func.func @sp
// CHECK:      tp.transfer %r0_p1s0 from 1 to 0
// CHECK-NEXT: %r0 = tp.section "r0.rs0" on [0] {
// CHECK:      tp.transfer %r0_p0s1 from 0 to 1
// CHECK-NEXT: %r1 = tp.section "r0.rs1" on [1] {
// CHECK:      tp.transfer %h0 from 0 to 1
// CHECK-NEXT: tp.transfer %h1 from 1 to 0
// CHECK-NEXT: %g = tp.section "g" on [0, 1] {
// CHECK-NEXT:   tp.all_gather %h0, %h1
// CHECK-NOT:  tp.transfer
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sp(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 3)], full = [4, 6]> : tensor<4x6xf32> -> tensor<4x3xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4x5xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x5xf32, #tp.chip<0>>) -> tensor<4x5xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<4x3xf32, #tp.chip<0>>, tensor<3x5xf32, #tp.chip<0>>) outs(%z0 : tensor<4x5xf32, #tp.chip<0>>) -> tensor<4x5xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(3, 3)], full = [4, 6]> : tensor<4x6xf32> -> tensor<4x3xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4x5xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5xf32, #tp.chip<1>>) -> tensor<4x5xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<4x3xf32, #tp.chip<1>>, tensor<3x5xf32, #tp.chip<1>>) outs(%z1 : tensor<4x5xf32, #tp.chip<1>>) -> tensor<4x5xf32, #tp.chip<1>>
    %r0, %r1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<4x5xf32, #tp.chip<0>>, tensor<4x5xf32, #tp.chip<1>> -> tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>
    %res0 = tensor.extract_slice %res[0, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
    %f0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%r0, %res0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32>) outs(%f0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %res1 = tensor.extract_slice %res[2, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
    %f1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%r1, %res1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32>) outs(%f1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}
