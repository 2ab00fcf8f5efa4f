// A tp.all_gather makes the spine only of the chips' parts of one tensor: chip c's block
// must hold the run its slice names along the gathered axis (here the tokens of a
// reduce-scattered projection plus the residual's rows), every block computed from parts
// paired alike (`tp_dialect/analysis/certify/blocks.py`). Each refused case has its sound
// twin first, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// CHECK-LABEL: func.func @sound
// CHECK: tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sound(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
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
// Chip 0 adds the residual's rows 2..4 to its block of rows 0..2.
// CHECK-LABEL: error: the all-gather's blocks were computed from parts paired otherwise: chip 1's %h1 along axis 0 pairs its parts position by position, chip 0's shifts parts by +2 of an axis of 4 [slices-misaligned]
// CHECK-NEXT: %g = tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @swapped(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
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
    %res0 = tensor.extract_slice %res[2, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
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
// Five tokens over two chips (3 and 2): chip 1 adds rows 2..4 to its block of rows 3..5.
// CHECK-LABEL: error: the all-gather's blocks were computed from parts paired otherwise: chip 1's %h1 along axis 0 shifts parts by -1 of an axis of 5, chip 0's pairs its parts position by position [slices-misaligned]
// CHECK-NEXT: %g = tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @shifted(%x: tensor<5x6xf32>, %w: tensor<6x5xf32>, %res: tensor<5x5xf32>) -> tensor<5x5xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 3)], full = [5, 6]> : tensor<5x6xf32> -> tensor<5x3xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<5x5xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<5x5xf32, #tp.chip<0>>) -> tensor<5x5xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<5x3xf32, #tp.chip<0>>, tensor<3x5xf32, #tp.chip<0>>) outs(%z0 : tensor<5x5xf32, #tp.chip<0>>) -> tensor<5x5xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(3, 3)], full = [5, 6]> : tensor<5x6xf32> -> tensor<5x3xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<5x5xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<5x5xf32, #tp.chip<1>>) -> tensor<5x5xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<5x3xf32, #tp.chip<1>>, tensor<3x5xf32, #tp.chip<1>>) outs(%z1 : tensor<5x5xf32, #tp.chip<1>>) -> tensor<5x5xf32, #tp.chip<1>>
    %r0, %r1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 5]>, #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 5]>] : tensor<5x5xf32, #tp.chip<0>>, tensor<5x5xf32, #tp.chip<1>> -> tensor<3x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>
    %res0 = tensor.extract_slice %res[0, 0] [3, 5] [1, 1] : tensor<5x5xf32> to tensor<3x5xf32>
    %f0 = tensor.empty() : tensor<3x5xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%r0, %res0 : tensor<3x5xf32, #tp.chip<0>>, tensor<3x5xf32>) outs(%f0 : tensor<3x5xf32, #tp.chip<0>>) -> tensor<3x5xf32, #tp.chip<0>>
    %res1 = tensor.extract_slice %res[2, 0] [2, 5] [1, 1] : tensor<5x5xf32> to tensor<2x5xf32>
    %f1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%r1, %res1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32>) outs(%f1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 5]>, #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 5]>] : tensor<3x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<5x5xf32>
    func.return %g : tensor<5x5xf32>
  }
}
