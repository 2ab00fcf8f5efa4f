// Sums over slices, followed through what hands data on unchanged (calls, casts, sections)
// and refused where the covered part cannot be proven (reshapes, windows, scaled partials,
// accumulators holding weight data).
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// A slice reshaped before the contraction: which columns it covers cannot be proven.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial, which reads its slice through 'tensor.collapse_shape': which part of the contracted axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%a0: tensor<1x8xf32, #tp.chip<0>>, %a1: tensor<1x8xf32, #tp.chip<1>>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e0 = tensor.expand_shape %w0 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<0>> into tensor<4x2x4xf32, #tp.chip<0>>
    %r0 = tensor.collapse_shape %e0 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<0>> into tensor<4x8xf32, #tp.chip<0>>
    %e1 = tensor.expand_shape %w1 [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32, #tp.chip<1>> into tensor<4x2x4xf32, #tp.chip<1>>
    %r1 = tensor.collapse_shape %e1 [[0], [1, 2]] : tensor<4x2x4xf32, #tp.chip<1>> into tensor<4x8xf32, #tp.chip<1>>
    %z0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %r0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %r1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A partial that is a function of a contraction over slices (here scaled): not provable.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial, which reads a contraction, through 'arith.mulf': which part of the contracted axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%a0: tensor<1x16xf32, #tp.chip<0>>, %a1: tensor<1x16xf32, #tp.chip<1>>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 16)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x16xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 16)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x16xf32, #tp.chip<1>>
    %z0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %w0 : tensor<1x16xf32, #tp.chip<0>>, tensor<4x16xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %w1 : tensor<1x16xf32, #tp.chip<1>>, tensor<4x16xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %one0 = arith.constant dense<1.0> : tensor<1x4xf32, #tp.chip<0>>
    %one1 = arith.constant dense<1.0> : tensor<1x4xf32, #tp.chip<1>>
    %q0 = arith.mulf %p0, %one0 : tensor<1x4xf32, #tp.chip<0>>
    %q1 = arith.mulf %p1, %one1 : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %q0, %q1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A contraction whose accumulator starts from another contraction over the weight.
// CHECK-LABEL: error: the all-reduce sums chip 1's partial, which reads an accumulator starting from %init1: which part of the contracted axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%a0: tensor<1x8xf32, #tp.chip<0>>, %a1: tensor<1x8xf32, #tp.chip<1>>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %w1b = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %z0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %init1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %w1b : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%init1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Slices cut in two loader functions are slices of one weight: seen through the calls.
// CHECK-LABEL: error: the all-reduce sums contractions over axis 1 of %w, and chips 0 and 1 both hold [0, 16): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @load0(%v: tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<0>> {
    %s = tp.shard %v at #tp.slice<axis = 1, ranges = [(0, 16)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x16xf32, #tp.chip<0>>
    func.return %s : tensor<4x16xf32, #tp.chip<0>>
  }
  func.func private @load1(%v: tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<1>> {
    %s = tp.shard %v at #tp.slice<axis = 1, ranges = [(0, 16)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x16xf32, #tp.chip<1>>
    func.return %s : tensor<4x16xf32, #tp.chip<1>>
  }
  func.func @decode(%a0: tensor<1x16xf32, #tp.chip<0>>, %a1: tensor<1x16xf32, #tp.chip<1>>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %w0 = func.call @load0(%w) : (tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<0>>
    %w1 = func.call @load1(%w) : (tensor<4x16xf32>) -> tensor<4x16xf32, #tp.chip<1>>
    %z0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %w0 : tensor<1x16xf32, #tp.chip<0>>, tensor<4x16xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %w1 : tensor<1x16xf32, #tp.chip<1>>, tensor<4x16xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A slice cut from a window of the weight, not from the argument itself.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial, which reads a slice cut from %ws, not from an argument: which part of the contracted axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%a0: tensor<1x8xf32, #tp.chip<0>>, %a1: tensor<1x8xf32, #tp.chip<1>>, %w: tensor<4x16xf32>) -> tensor<1x4xf32> {
    %ws = tensor.extract_slice %w[0, 8] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
    %w0 = tp.shard %ws at #tp.slice<axis = 1, ranges = [(0, 8)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 8)], full = [4, 16]> : tensor<4x16xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %z0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
