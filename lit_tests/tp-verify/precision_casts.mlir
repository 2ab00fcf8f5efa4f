// Precision casts (what tp-narrow-wire writes): a partial rounded to bf16 by arith.truncf
// (or widened by arith.extf) holds the same reals, so the coverage rule follows it to its
// contraction as it follows a copy; anything else between a partial and the all-reduce (a
// square) is refused as before. Chip c reads its slice of %x [1, 16] and its rows of %w [16, 4].
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// Each chip's partial rounded to bf16, the sum in bf16, widened: certified.
// CHECK-LABEL: tp.certificate = {checked = "shard-obligation"
// CHECK-NEXT: func.func @narrowed
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @narrowed(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %n0 = arith.truncf %p0 : tensor<1x4xf32, #tp.chip<0>> to tensor<1x4xbf16, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %n1 = arith.truncf %p1 : tensor<1x4xf32, #tp.chip<1>> to tensor<1x4xbf16, #tp.chip<1>>
    %sn = tp.allreduce %n0, %n1 : tensor<1x4xbf16, #tp.chip<0>>, tensor<1x4xbf16, #tp.chip<1>> -> tensor<1x4xbf16>
    %s = arith.extf %sn : tensor<1x4xbf16> to tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
// -----
// The casts hide nothing: chip 1 reads rows 0..8 as chip 0 does, refused through them.
// CHECK-LABEL: error: the all-reduce sums contractions over axis 1 of %x, and chips 0 and 1 both hold [0, 8): each chip's partial must sum its own part of the contracted axis, or the sum counts it twice [slices-overlap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @narrowed_overlap(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %n0 = arith.truncf %p0 : tensor<1x4xf32, #tp.chip<0>> to tensor<1x4xbf16, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %n1 = arith.truncf %p1 : tensor<1x4xf32, #tp.chip<1>> to tensor<1x4xbf16, #tp.chip<1>>
    %sn = tp.allreduce %n0, %n1 : tensor<1x4xbf16, #tp.chip<0>>, tensor<1x4xbf16, #tp.chip<1>> -> tensor<1x4xbf16>
    %s = arith.extf %sn : tensor<1x4xbf16> to tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
// -----
// A square of a rounded partial is not the partial: refused as any change of data is.
// CHECK-LABEL: error: the all-reduce sums chip 1's partial %q1, which derives from a reduction through 'arith.mulf': which part of the summed axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @squared(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %n0 = arith.truncf %p0 : tensor<1x4xf32, #tp.chip<0>> to tensor<1x4xbf16, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %n1 = arith.truncf %p1 : tensor<1x4xf32, #tp.chip<1>> to tensor<1x4xbf16, #tp.chip<1>>
    %q1 = arith.mulf %n1, %n1 : tensor<1x4xbf16, #tp.chip<1>>
    %sn = tp.allreduce %n0, %q1 : tensor<1x4xbf16, #tp.chip<0>>, tensor<1x4xbf16, #tp.chip<1>> -> tensor<1x4xbf16>
    %s = arith.extf %sn : tensor<1x4xbf16> to tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
