// A tp.all_gather makes the spine only of the chips' parts of one tensor: chip c's block
// must hold the run its slice names along the gathered axis (here the tokens of a
// reduce-scattered projection plus the residual's rows), every block computed from parts
// paired alike and computed row by row (`tp_dialect/analysis/certify/blocks.py`): the sound
// program first, certified, then the faults, each refused naming the chip, the op and why.
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

// -----
// Each chip subtracts the column sum over its own tokens (a reduction over part of the rows).
// CHECK-LABEL: error: the all-gather takes chip 0's block %h0, computed by 'linalg.generic' not row by row: it reduces or mixes over axis 0 of %r0, which holds part of that axis [slices-misaligned]
// CHECK-NEXT: %g = tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>) -> tensor<4x5xf32> {
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
    %ce0 = tensor.empty() : tensor<5xf32, #tp.chip<0>>
    %cz0 = linalg.fill ins(%zero : f32) outs(%ce0 : tensor<5xf32, #tp.chip<0>>) -> tensor<5xf32, #tp.chip<0>>
    %sum0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%r0 : tensor<2x5xf32, #tp.chip<0>>) outs(%cz0 : tensor<5xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %acc: f32):
      %q = arith.addf %acc, %a : f32
      linalg.yield %q : f32
    } -> tensor<5xf32, #tp.chip<0>>
    %oe0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r0, %sum0 : tensor<2x5xf32, #tp.chip<0>>, tensor<5xf32, #tp.chip<0>>) outs(%oe0 : tensor<2x5xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %m: f32, %o: f32):
      %d = arith.subf %a, %m : f32
      linalg.yield %d : f32
    } -> tensor<2x5xf32, #tp.chip<0>>
    %ce1 = tensor.empty() : tensor<5xf32, #tp.chip<1>>
    %cz1 = linalg.fill ins(%zero : f32) outs(%ce1 : tensor<5xf32, #tp.chip<1>>) -> tensor<5xf32, #tp.chip<1>>
    %sum1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%r1 : tensor<2x5xf32, #tp.chip<1>>) outs(%cz1 : tensor<5xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %acc: f32):
      %q = arith.addf %acc, %a : f32
      linalg.yield %q : f32
    } -> tensor<5xf32, #tp.chip<1>>
    %oe1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r1, %sum1 : tensor<2x5xf32, #tp.chip<1>>, tensor<5xf32, #tp.chip<1>>) outs(%oe1 : tensor<2x5xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %m: f32, %o: f32):
      %d = arith.subf %a, %m : f32
      linalg.yield %d : f32
    } -> tensor<2x5xf32, #tp.chip<1>>
    %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}

// -----
// Attention over the chip's own tokens: (r r^T) r, contracting over part of the rows.
// CHECK-LABEL: error: the all-gather takes chip 0's block %h0, computed by 'linalg.matmul' not row by row: it reduces or mixes over axis 1 of %sc0, which holds part of that axis [slices-misaligned]
// CHECK-NEXT: %g = tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>) -> tensor<4x5xf32> {
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
    %se0 = tensor.empty() : tensor<2x2xf32, #tp.chip<0>>
    %sz0 = linalg.fill ins(%zero : f32) outs(%se0 : tensor<2x2xf32, #tp.chip<0>>) -> tensor<2x2xf32, #tp.chip<0>>
    %sc0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r0, %r0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<0>>) outs(%sz0 : tensor<2x2xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %q = arith.addf %acc, %m : f32
      linalg.yield %q : f32
    } -> tensor<2x2xf32, #tp.chip<0>>
    %oe0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %oz0 = linalg.fill ins(%zero : f32) outs(%oe0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.matmul ins(%sc0, %r0 : tensor<2x2xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<0>>) outs(%oz0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %se1 = tensor.empty() : tensor<2x2xf32, #tp.chip<1>>
    %sz1 = linalg.fill ins(%zero : f32) outs(%se1 : tensor<2x2xf32, #tp.chip<1>>) -> tensor<2x2xf32, #tp.chip<1>>
    %sc1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r1, %r1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32, #tp.chip<1>>) outs(%sz1 : tensor<2x2xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %q = arith.addf %acc, %m : f32
      linalg.yield %q : f32
    } -> tensor<2x2xf32, #tp.chip<1>>
    %oe1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %oz1 = linalg.fill ins(%zero : f32) outs(%oe1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.matmul ins(%sc1, %r1 : tensor<2x2xf32, #tp.chip<1>>, tensor<2x5xf32, #tp.chip<1>>) outs(%oz1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}

// -----
// The block's first row broadcast over the block (its row axis collapsed away first).
// CHECK-LABEL: error: the all-gather takes chip 0's block %h0, computed by 'tensor.collapse_shape' not row by row: it drops axis 0 of %fr0, which holds part of that axis [slices-misaligned]
// CHECK-NEXT: %g = tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>) -> tensor<4x5xf32> {
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
    %fr0 = tensor.extract_slice %r0[0, 0] [1, 5] [1, 1] : tensor<2x5xf32, #tp.chip<0>> to tensor<1x5xf32, #tp.chip<0>>
    %fv0 = tensor.collapse_shape %fr0 [[0, 1]] : tensor<1x5xf32, #tp.chip<0>> into tensor<5xf32, #tp.chip<0>>
    %be0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%fv0 : tensor<5xf32, #tp.chip<0>>) outs(%be0 : tensor<2x5xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x5xf32, #tp.chip<0>>
    %fr1 = tensor.extract_slice %r1[0, 0] [1, 5] [1, 1] : tensor<2x5xf32, #tp.chip<1>> to tensor<1x5xf32, #tp.chip<1>>
    %fv1 = tensor.collapse_shape %fr1 [[0, 1]] : tensor<1x5xf32, #tp.chip<1>> into tensor<5xf32, #tp.chip<1>>
    %be1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%fv1 : tensor<5xf32, #tp.chip<1>>) outs(%be1 : tensor<2x5xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x5xf32, #tp.chip<1>>
    %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}

// -----
// Both chips add a's rows 2..4 and their own rows of b: the pairing differs per chip.
// CHECK-LABEL: error: the all-gather takes chip 0's block %h0, computed by 'linalg.add' not row by row: it pairs %b0's positions along axis 0 with others [slices-misaligned]
// CHECK-NEXT: %g = tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %a: tensor<6x5xf32>, %b: tensor<6x5xf32>) -> tensor<4x5xf32> {
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
    %a0 = tensor.extract_slice %a[2, 0] [2, 5] [1, 1] : tensor<6x5xf32> to tensor<2x5xf32>
    %b0 = tensor.extract_slice %b[0, 0] [2, 5] [1, 1] : tensor<6x5xf32> to tensor<2x5xf32>
    %ue0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %u0 = linalg.add ins(%r0, %a0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32>) outs(%ue0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %ve0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%u0, %b0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32>) outs(%ve0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %a1 = tensor.extract_slice %a[2, 0] [2, 5] [1, 1] : tensor<6x5xf32> to tensor<2x5xf32>
    %b1 = tensor.extract_slice %b[4, 0] [2, 5] [1, 1] : tensor<6x5xf32> to tensor<2x5xf32>
    %ue1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %u1 = linalg.add ins(%r1, %a1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32>) outs(%ue1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %ve1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%u1, %b1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32>) outs(%ve1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}

// -----

// A function taking chip data is checked in the call chains of what calls it; alone (the
// module's only function, so the entry a host binds) its blocks' positions are unknown.
// CHECK-LABEL: error: the all-gather takes chip 0's block %a, whose axis 0 holds positions that cannot be told: that it is the run [0, 2) of 4 cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @gather(%a: tensor<2x5xf32, #tp.chip<0>>, %b: tensor<2x5xf32, #tp.chip<1>>) -> tensor<4x5xf32> {
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}
