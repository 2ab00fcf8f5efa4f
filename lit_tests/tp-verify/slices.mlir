// An all-reduce over contractions sums the unsharded contraction only when, on every chip,
// the operands hold the same positions of the summed axis and the chips' positions are
// disjoint and cover it (`tp_dialect/analysis/certify/coverage.py` states the rule). Here: chip c
// contracts its slice of the activation %x [1, 16] with its rows of %w [16, 4]. Each refused
// case has a sound twin beside it, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// Two chips both holding positions 0..8 of the summed axis.
// CHECK-LABEL: error: the all-reduce sums contractions over axis 1 of %x, and chips 0 and 1 both hold [0, 8): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
// CHECK-NEXT: %s = tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @overlap(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Positions 0..4 and 8..12 of 16: nobody sums 4..8 (nor 12..16).
// CHECK-LABEL: error: the all-reduce sums contractions over axis 1 of %x, but no chip holds [4, 8): the partials' slices must cover the contracted axis, or the sum misses it [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @gap(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x4xf32, #tp.chip<1>>, tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Disjoint and covering, in any order and in several ranges (chip 0: 0..4 and 8..12): sound.
// CHECK-LABEL: func.func @cover
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cover(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4), (8, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4), (8, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(12, 4), (4, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(12, 4), (4, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Slices cut along an axis the contraction does not sum (the output features, here whole):
// every chip sums the whole summed axis, so the all-reduce counts it twice.
// CHECK-LABEL: error: the all-reduce sums 2 partials that each sum the whole of their summed axis (%x, 16 positions): the sum counts it 2 times [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @column_split_summed(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<16x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x, %w0 : tensor<1x16xf32>, tensor<16x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<16x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x, %w1 : tensor<1x16xf32>, tensor<16x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A slice read through a strided index (d2 * 2): which positions are summed cannot be proven.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, which reads axis 0 of %w0 along its summed loop d2: which positions of the summed axis that holds cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @strided(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2 * 2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x4xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2 * 2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x4xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A sum of squares reading one shard twice on each chip (sum over k of W_c[k]^2): each chip
// holds its rows once, so the rows cover: sound.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sum_of_squares(%w: tensor<16x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%w0, %w0 : tensor<8x4xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%w1, %w1 : tensor<8x4xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
