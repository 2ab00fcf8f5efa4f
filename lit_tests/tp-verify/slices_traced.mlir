// Sums over slices, followed through what hands data on unchanged (calls, casts, sections)
// and through what moves it by a rule (reshapes, windows), and refused where the summed
// positions cannot be proven (a scaled partial, an index expression, an accumulator holding
// weight data). Chip c contracts its slice of %x [1, 16] with its columns of %w [4, 16].
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// A slice reshaped and back before the contraction: its positions are followed, so the
// overlap is seen through the reshape.
// CHECK-LABEL: error: the all-reduce sums contractions over axis 1 of %x, and chips 0 and 1 both hold [0, 8): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reshaped_overlap(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %v0 = tensor.expand_shape %w0 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<0>> into tensor<4x2x4xf32, #tp.chip<0>>
    %r0 = tensor.collapse_shape %v0 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<0>> into tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %r0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %v1 = tensor.expand_shape %w1 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<1>> into tensor<4x2x4xf32, #tp.chip<1>>
    %r1 = tensor.collapse_shape %v1 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<1>> into tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %r1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// ... and covering: sound.
// CHECK-LABEL: func.func @reshaped_cover
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reshaped_cover(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %v0 = tensor.expand_shape %w0 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<0>> into tensor<4x2x4xf32, #tp.chip<0>>
    %r0 = tensor.collapse_shape %v0 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<0>> into tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %r0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %v1 = tensor.expand_shape %w1 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<1>> into tensor<4x2x4xf32, #tp.chip<1>>
    %r1 = tensor.collapse_shape %v1 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<1>> into tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %r1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// A reshape splitting a slice at blocks its runs do not fill (runs of 6 into blocks of 4):
// which positions each row holds cannot be told.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, which reads axis 1 of %r0 along its summed loop d2: which positions of the summed axis that holds cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reshaped_ragged(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 6), (12, 2)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 6), (12, 2)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %v0 = tensor.expand_shape %w0 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<0>> into tensor<4x2x4xf32, #tp.chip<0>>
    %r0 = tensor.collapse_shape %v0 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<0>> into tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %r0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(6, 6), (14, 2)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(6, 6), (14, 2)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %v1 = tensor.expand_shape %w1 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<1>> into tensor<4x2x4xf32, #tp.chip<1>>
    %r1 = tensor.collapse_shape %v1 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<1>> into tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %r1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// A partial that is a function of a contraction over slices (here scaled): not provable.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, which derives from a reduction through 'arith.mulf': which part of the summed axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @scaled(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %q0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %one0 = arith.constant dense<1.0> : tensor<1x4xf32, #tp.chip<0>>
    %p0 = arith.mulf %q0, %one0 : tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %q1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %one1 = arith.constant dense<1.0> : tensor<1x4xf32, #tp.chip<1>>
    %p1 = arith.mulf %q1, %one1 : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A contraction whose accumulator starts from another contraction over the weight: chip 1
// would add columns 0..8 a second time.
// CHECK-LABEL: error: the all-reduce sums chip 1's partial %p1, whose accumulator starts from %init1, not from zeros: the all-reduce would add that start once per chip [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chained(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %w1b = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %x1b = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %init1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1b, %w1b : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%init1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// Slices cut in two loader functions are slices of one weight: seen through the calls.
// CHECK-LABEL: error: the all-reduce sums contractions over axis 1 of %x, and chips 0 and 1 both hold [0, 16): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @load0(%v: tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<0>> {
    %s = tp.shard %v at #tp.slice<axis = 1, ranges = [(0, 16)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x16xf32, #tp.chip<0>>
    func.return %s : tensor<4x16xf32, #tp.chip<0>>
  }
  func.func private @load1(%v: tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<1>> {
    %s = tp.shard %v at #tp.slice<axis = 1, ranges = [(0, 16)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x16xf32, #tp.chip<1>>
    func.return %s : tensor<4x16xf32, #tp.chip<1>>
  }
  func.func @loaders(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 16)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x16xf32, #tp.chip<0>>
    %w0 = func.call @load0(%w) : (tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x16xf32, #tp.chip<0>>, tensor<4x16xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 16)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x16xf32, #tp.chip<1>>
    %w1 = func.call @load1(%w) : (tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x16xf32, #tp.chip<1>>, tensor<4x16xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// A slice cut from a window of the weight: its positions are the window's, here columns
// 8..16 again, paired with positions 0..8 of %x.
// CHECK-LABEL: error: the all-reduce sums chip 0's and chip 1's partials, whose operands pair different positions of the summed axis (chip 0 pairs +0, +8, chip 1 +0, +0): every chip must pair its operands alike [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @window_crossed(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %ws = tensor.extract_slice %w[0, 8] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %ws at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// ... the window of columns 0..8: sound.
// CHECK-LABEL: func.func @window
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @window(%x: tensor<1x16xf32>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %ws = tensor.extract_slice %w[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %ws at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
