// The coverage rule's classes (issue 23): operands not aligned, reductions that are not
// sums, accumulators that do not start from zero, and every linalg op between a slice and its
// reduction followed or refused. Chip c reads its slice of %x [1, 16] and its rows of
// %w [16, 4]. Each refused case has a sound twin, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// Each side covers on its own, but chip 0 multiplies x[0:8] with rows 8..16 of w and chip 1
// x[8:16] with rows 0..8: the sum pairs the wrong positions.
// CHECK-LABEL: error: the all-reduce sums chip 0's and chip 1's partials, whose operands pair different positions of the summed axis (chip 0 pairs +0, +8, chip 1 +0, -8): every chip must pair its operands alike [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @crossed(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// The same ranges listed in another order on each side: position by position they differ.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, which reads %x0 holding [0, 4) + [8, 12) of 16 and %w0 holding [8, 12) + [0, 4) of 16 along its summed loop d2: the operands of a contraction must hold the same positions of the summed axis, element by element [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reordered(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4), (8, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 4), (0, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4), (12, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4), (12, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// An activation cut from a spine tensor by extract_slice, crossed with the weight's rows.
// CHECK-LABEL: error: the all-reduce sums chip 0's and chip 1's partials, whose operands pair different positions of the summed axis (chip 0 pairs +0, -8, chip 1 +0, +8): every chip must pair its operands alike [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @spine_window_crossed(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tensor.extract_slice %x[0, 8] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tensor.extract_slice %x[0, 0] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// The same windows aligned with the rows: sound.
// CHECK-LABEL: func.func @spine_window
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @spine_window(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tensor.extract_slice %x[0, 0] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tensor.extract_slice %x[0, 8] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Per-chip maxima over covering slices: the sum of the chips' maxima is not the maximum.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0 = 'linalg.generic', whose body does not add one term per point to its accumulator (a max, a product, an overwrite): the sum over chips of such reductions is not the reduction over the whole axis [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @max_of_products(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %ten = arith.constant 10.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.maximumf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.maximumf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A body that ignores its accumulator keeps the last product only: not a sum.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0 = 'linalg.generic', whose body does not add one term per point to its accumulator (a max, a product, an overwrite): the sum over chips of such reductions is not the reduction over the whole axis [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @overwrite(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %ten = arith.constant 10.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A sum of any term of the inputs (here exp(a) * b) is still a sum over the reduced points: sound.
// CHECK-LABEL: func.func @sum_of_terms
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sum_of_terms(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %ten = arith.constant 10.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %ea = math.exp %a : f32
      %m = arith.mulf %ea, %b : f32
      %r = arith.addf %m, %acc : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %ea = math.exp %a : f32
      %m = arith.mulf %ea, %b : f32
      %r = arith.addf %m, %acc : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// An accumulator starting from 10: the all-reduce adds it once per chip (20 at N = 2).
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, whose accumulator starts from %z0, not from zeros: the all-reduce would add that start once per chip [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @start_ten(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %ten = arith.constant 10.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%ten : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%ten : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) {
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
// A spine bias as the start: each chip adds the bias, so the sum holds it twice.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, whose accumulator starts from %b0, not from zeros: the all-reduce would add that start once per chip [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @bias_start(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>, %b: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %b0 = tp.shard %b at #tp.slice<axis = 0, ranges = [(0, 1)], full = [1, 4]> : tensor<1x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%b0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %b1 = tp.shard %b at #tp.slice<axis = 0, ranges = [(0, 1)], full = [1, 4]> : tensor<1x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%b1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// An empty tensor as the start: its contents are undefined (MLIR), so zero is not proven.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0, whose accumulator starts from %z0, not from zeros: the all-reduce would add that start once per chip [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @empty_start(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %z0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %z1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// linalg.reduce (not a structured op in xDSL 0.75): both chips sum rows 0..4 of %w [8, 4].
// CHECK-LABEL: error: the all-reduce sums contractions over axis 0 of %w, and chips 0 and 1 both hold [0, 4): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reduce_overlap(%w: tensor<8x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.reduce ins(%w0 : tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.reduce ins(%w1 : tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Its sound twin: rows 0..4 and 4..8.
// CHECK-LABEL: func.func @reduce_cover
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reduce_cover(%w: tensor<8x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.reduce ins(%w0 : tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.reduce ins(%w1 : tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// linalg.reduce with a max combiner: not a sum.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %p0 = 'linalg.reduce', whose body does not add one term per point to its accumulator (a max, a product, an overwrite): the sum over chips of such reductions is not the reduction over the whole axis [not-partial-sum]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reduce_max(%w: tensor<8x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.reduce ins(%w0 : tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.maximumf %in, %init : f32
        linalg.yield %r : f32
      }
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.reduce ins(%w1 : tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.maximumf %in, %init : f32
        linalg.yield %r : f32
      }
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Overlapping rows reaching the reduction through linalg.broadcast (a plain copy, dimensions = []).
// CHECK-LABEL: error: the all-reduce sums contractions over the summed axis as %c0 holds it, and chips 0 and 1 both hold [0, 4): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @broadcast_overlap(%w: tensor<8x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0b = tensor.empty() : tensor<4x4xf32, #tp.chip<0>>
    %c0 = linalg.broadcast ins(%w0 : tensor<4x4xf32, #tp.chip<0>>) outs(%e0b : tensor<4x4xf32, #tp.chip<0>>) dimensions = []
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.reduce ins(%c0 : tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1b = tensor.empty() : tensor<4x4xf32, #tp.chip<1>>
    %c1 = linalg.broadcast ins(%w1 : tensor<4x4xf32, #tp.chip<1>>) outs(%e1b : tensor<4x4xf32, #tp.chip<1>>) dimensions = []
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.reduce ins(%c1 : tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) dimensions = [0]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Overlapping rows reaching the reduction through linalg.transpose (summed along dim 1 after it).
// CHECK-LABEL: error: the all-reduce sums contractions over the summed axis as %c0 holds it, and chips 0 and 1 both hold [0, 4): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @transpose_overlap(%w: tensor<8x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0t = tensor.empty() : tensor<4x4xf32, #tp.chip<0>>
    %c0 = linalg.transpose ins(%w0 : tensor<4x4xf32, #tp.chip<0>>) outs(%e0t : tensor<4x4xf32, #tp.chip<0>>) permutation = [1, 0]
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.reduce ins(%c0 : tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) dimensions = [1]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1t = tensor.empty() : tensor<4x4xf32, #tp.chip<1>>
    %c1 = linalg.transpose ins(%w1 : tensor<4x4xf32, #tp.chip<1>>) outs(%e1t : tensor<4x4xf32, #tp.chip<1>>) permutation = [1, 0]
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.reduce ins(%c1 : tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) dimensions = [1]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// The transposed rows covering: sound.
// CHECK-LABEL: func.func @transpose_cover
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @transpose_cover(%w: tensor<8x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %e0t = tensor.empty() : tensor<4x4xf32, #tp.chip<0>>
    %c0 = linalg.transpose ins(%w0 : tensor<4x4xf32, #tp.chip<0>>) outs(%e0t : tensor<4x4xf32, #tp.chip<0>>) permutation = [1, 0]
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.reduce ins(%c0 : tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4xf32, #tp.chip<0>>) dimensions = [1]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e1t = tensor.empty() : tensor<4x4xf32, #tp.chip<1>>
    %c1 = linalg.transpose ins(%w1 : tensor<4x4xf32, #tp.chip<1>>) outs(%e1t : tensor<4x4xf32, #tp.chip<1>>) permutation = [1, 0]
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.reduce ins(%c1 : tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4xf32, #tp.chip<1>>) dimensions = [1]
      (%in: f32, %init: f32) {
        %r = arith.addf %in, %init : f32
        linalg.yield %r : f32
      }
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A named elementwise op (linalg.exp) between the activation's slice and the contraction is
// followed: here its positions are crossed with the rows.
// CHECK-LABEL: error: the all-reduce sums chip 0's and chip 1's partials, whose operands pair different positions of the summed axis (chip 0 pairs +0, -8, chip 1 +0, +8): every chip must pair its operands alike [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @exp_crossed(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %f0 = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %y0 = linalg.exp ins(%x0 : tensor<1x8xf32, #tp.chip<0>>) outs(%f0 : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%y0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %f1 = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %y1 = linalg.exp ins(%x1 : tensor<1x8xf32, #tp.chip<1>>) outs(%f1 : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%y1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// ... and aligned: sound.
// CHECK-LABEL: func.func @exp_aligned
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @exp_aligned(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %f0 = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %y0 = linalg.exp ins(%x0 : tensor<1x8xf32, #tp.chip<0>>) outs(%f0 : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%y0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %f1 = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %y1 = linalg.exp ins(%x1 : tensor<1x8xf32, #tp.chip<1>>) outs(%f1 : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%y1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Outlined, in several ranges: chip 1 holds positions 4..8, 12..16 of x but rows 12..16, 4..8
// of w (judged in the call chain from @decode).
// CHECK-LABEL: error: the all-reduce sums chip 1's partial %p1, which reads %x1 holding [4, 8) + [12, 16) of 16 and %w1 holding [12, 16) + [4, 8) of 16 along its summed loop d2: the operands of a contraction must hold the same positions of the summed axis, element by element [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4), (8, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4), (8, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4), (12, 4)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(12, 4), (4, 4)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
  func.func @decode(%x: tensor<1x16xf32> {tp.name = "x", tp.role = "input"}, %w: tensor<16x4xf32> {tp.name = "w", tp.role = "weight"}) -> (tensor<1x4xf32> {tp.name = "y"}) {
    %y = func.call @layer(%x, %w) : (tensor<1x16xf32>, tensor<16x4xf32>) -> tensor<1x4xf32>
    func.return %y : tensor<1x4xf32>
  }
}

// -----
// Rows cut to cover, but chip c also takes columns 4c..4c+4 of %w (scaled by a spine vector):
// the chips' partials hold different columns, which the all-reduce would add together.
// CHECK-LABEL: error: the all-reduce sums partials holding different parts of its result: along axis 1, chip 0's holds [0, 4) of 8 and chip 1's [4, 8) of 8: every chip must add into the same elements [slices-misaligned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @different_columns(%x: tensor<1x8xf32>, %w: tensor<8x8xf32>, %sv: tensor<4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]> : tensor<1x8xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %r0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %w0 = tensor.extract_slice %r0[0, 0] [4, 4] [1, 1] : tensor<4x8xf32, #tp.chip<0>> to tensor<4x4xf32, #tp.chip<0>>
    %f0 = tensor.empty() : tensor<4x4xf32, #tp.chip<0>>
    %v0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w0, %sv : tensor<4x4xf32, #tp.chip<0>>, tensor<4xf32>) outs(%f0 : tensor<4x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<4x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %v0 : tensor<1x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]> : tensor<1x8xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %r1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %w1 = tensor.extract_slice %r1[0, 4] [4, 4] [1, 1] : tensor<4x8xf32, #tp.chip<1>> to tensor<4x4xf32, #tp.chip<1>>
    %f1 = tensor.empty() : tensor<4x4xf32, #tp.chip<1>>
    %v1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w1, %sv : tensor<4x4xf32, #tp.chip<1>>, tensor<4xf32>) outs(%f1 : tensor<4x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<4x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %v1 : tensor<1x4xf32, #tp.chip<1>>, tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// Every chip taking columns 0..4: the same elements, sound.
// CHECK-LABEL: func.func @same_columns
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @same_columns(%x: tensor<1x8xf32>, %w: tensor<8x8xf32>, %sv: tensor<4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]> : tensor<1x8xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %r0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %w0 = tensor.extract_slice %r0[0, 0] [4, 4] [1, 1] : tensor<4x8xf32, #tp.chip<0>> to tensor<4x4xf32, #tp.chip<0>>
    %f0 = tensor.empty() : tensor<4x4xf32, #tp.chip<0>>
    %v0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w0, %sv : tensor<4x4xf32, #tp.chip<0>>, tensor<4xf32>) outs(%f0 : tensor<4x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<4x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %v0 : tensor<1x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]> : tensor<1x8xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %r1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %w1 = tensor.extract_slice %r1[0, 0] [4, 4] [1, 1] : tensor<4x8xf32, #tp.chip<1>> to tensor<4x4xf32, #tp.chip<1>>
    %f1 = tensor.empty() : tensor<4x4xf32, #tp.chip<1>>
    %v1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w1, %sv : tensor<4x4xf32, #tp.chip<1>>, tensor<4xf32>) outs(%f1 : tensor<4x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<4x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %v1 : tensor<1x4xf32, #tp.chip<1>>, tensor<4x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
