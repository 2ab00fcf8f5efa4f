// tp-relocate spells a tp.reduce_scatter as each chip's work: chip c cuts its partial into
// blocks (one section per block), chip s folds block s of every partial in chip order into a
// spine tensor and retypes the sum as its own (tensor.cast). A ring folds block s from chip
// s+1 round to chip s, one add a section. The tp.all_gather stays one section on every chip;
// the work between them runs on each chip's block.
// RUN: tp-opt %s --split-input-file --tp-relocate | filecheck %s

// CHECK-LABEL: func.func @sp
// CHECK:      %r0_p0s0 = tp.section "r0.p0s0" on [0] {
// CHECK-NEXT:   tensor.extract_slice %p0[0, 0] [2, 5] [1, 1]
// CHECK:      %r0_p0s1 = tp.section "r0.p0s1" on [0] {
// CHECK-NEXT:   tensor.extract_slice %p0[2, 0] [2, 5] [1, 1]
// CHECK:      %r0 = tp.section "r0.rs0" on [0] {
// CHECK-NEXT:   %[[S0:.*]] = linalg.add ins(%r0_p0s0, %r0_p1s0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>) outs(%r0_z0 : tensor<2x5xf32>)
// CHECK-NEXT:   tensor.cast %[[S0]] : tensor<2x5xf32> to tensor<2x5xf32, #tp.chip<0>>
// CHECK:      %r1 = tp.section "r0.rs1" on [1] {
// CHECK-NEXT:   linalg.add ins(%r0_p0s1, %r0_p1s1
// CHECK:      %h0 = tp.section "h0" on [0] {
// CHECK:      %h1 = tp.section "h1" on [1] {
// CHECK:      %g = tp.section "g" on [0, 1] {
// CHECK-NEXT:   tp.all_gather %h0, %h1 slices
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

// -----
// CHECK-LABEL: func.func @sp
// CHECK:      %r0_rs0t1 = tp.section "r0.rs0.t1" on [2] {
// CHECK-NEXT:   linalg.add ins(%r0_p1s0, %r0_p2s0
// CHECK:      %r0 = tp.section "r0.rs0" on [0] {
// CHECK-NEXT:   %[[R0:.*]] = linalg.add ins(%r0_rs0t1, %r0_p0s0
// CHECK-NEXT:   tensor.cast %[[R0]] : tensor<1x5xf32> to tensor<1x5xf32, #tp.chip<0>>
// CHECK:      %g = tp.section "g" on [0, 1, 2] {
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @sp(%x: tensor<3x9xf32>, %w: tensor<9x5xf32>, %res: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 3)], full = [3, 9]> : tensor<3x9xf32> -> tensor<3x3xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 3)], full = [9, 5]> : tensor<9x5xf32> -> tensor<3x5xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<3x5xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5xf32, #tp.chip<0>>) -> tensor<3x5xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<3x3xf32, #tp.chip<0>>, tensor<3x5xf32, #tp.chip<0>>) outs(%z0 : tensor<3x5xf32, #tp.chip<0>>) -> tensor<3x5xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(3, 3)], full = [3, 9]> : tensor<3x9xf32> -> tensor<3x3xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 3)], full = [9, 5]> : tensor<9x5xf32> -> tensor<3x5xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<3x5xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5xf32, #tp.chip<1>>) -> tensor<3x5xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<3x3xf32, #tp.chip<1>>, tensor<3x5xf32, #tp.chip<1>>) outs(%z1 : tensor<3x5xf32, #tp.chip<1>>) -> tensor<3x5xf32, #tp.chip<1>>
    %x2 = tp.shard %x at #tp.slice<axis = 1, ranges = [(6, 3)], full = [3, 9]> : tensor<3x9xf32> -> tensor<3x3xf32, #tp.chip<2>>
    %w2 = tp.shard %w at #tp.slice<axis = 0, ranges = [(6, 3)], full = [9, 5]> : tensor<9x5xf32> -> tensor<3x5xf32, #tp.chip<2>>
    %e2 = tensor.empty() : tensor<3x5xf32, #tp.chip<2>>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x5xf32, #tp.chip<2>>) -> tensor<3x5xf32, #tp.chip<2>>
    %p2 = linalg.matmul ins(%x2, %w2 : tensor<3x3xf32, #tp.chip<2>>, tensor<3x5xf32, #tp.chip<2>>) outs(%z2 : tensor<3x5xf32, #tp.chip<2>>) -> tensor<3x5xf32, #tp.chip<2>>
    %r0, %r1, %r2 = tp.reduce_scatter %p0, %p1, %p2 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [3, 5]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [3, 5]>, #tp.slice<axis = 0, ranges = [(2, 1)], full = [3, 5]>] algorithm "ring" : tensor<3x5xf32, #tp.chip<0>>, tensor<3x5xf32, #tp.chip<1>>, tensor<3x5xf32, #tp.chip<2>> -> tensor<1x5xf32, #tp.chip<0>>, tensor<1x5xf32, #tp.chip<1>>, tensor<1x5xf32, #tp.chip<2>>
    %res0 = tensor.extract_slice %res[0, 0] [1, 5] [1, 1] : tensor<3x5xf32> to tensor<1x5xf32>
    %f0 = tensor.empty() : tensor<1x5xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%r0, %res0 : tensor<1x5xf32, #tp.chip<0>>, tensor<1x5xf32>) outs(%f0 : tensor<1x5xf32, #tp.chip<0>>) -> tensor<1x5xf32, #tp.chip<0>>
    %res1 = tensor.extract_slice %res[1, 0] [1, 5] [1, 1] : tensor<3x5xf32> to tensor<1x5xf32>
    %f1 = tensor.empty() : tensor<1x5xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%r1, %res1 : tensor<1x5xf32, #tp.chip<1>>, tensor<1x5xf32>) outs(%f1 : tensor<1x5xf32, #tp.chip<1>>) -> tensor<1x5xf32, #tp.chip<1>>
    %res2 = tensor.extract_slice %res[2, 0] [1, 5] [1, 1] : tensor<3x5xf32> to tensor<1x5xf32>
    %f2 = tensor.empty() : tensor<1x5xf32, #tp.chip<2>>
    %h2 = linalg.add ins(%r2, %res2 : tensor<1x5xf32, #tp.chip<2>>, tensor<1x5xf32>) outs(%f2 : tensor<1x5xf32, #tp.chip<2>>) -> tensor<1x5xf32, #tp.chip<2>>
    %g = tp.all_gather %h0, %h1, %h2 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [3, 5]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [3, 5]>, #tp.slice<axis = 0, ranges = [(2, 1)], full = [3, 5]>] : tensor<1x5xf32, #tp.chip<0>>, tensor<1x5xf32, #tp.chip<1>>, tensor<1x5xf32, #tp.chip<2>> -> tensor<3x5xf32>
    func.return %g : tensor<3x5xf32>
  }
}
