// Precision casts (what tp-narrow-wire writes): a partial rounded to bf16 by arith.truncf
// (or widened by arith.extf) holds the same reals, rounded within f32's range, so the
// coverage rule follows it to its contraction as it follows a copy; anything else between a partial and the all-reduce (a
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

// -----
// A narrowing to f16 is no rounding within f32's range (past 65504 it is inf): refused.
// CHECK-LABEL: error: the all-reduce sums chip 0's partial %n0, which derives from a reduction through 'arith.truncf': which part of the summed axis it sums cannot be proven [slices-gap]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @narrowed_f16(%x: tensor<1x16xf32>, %w: tensor<16x4xf32>) -> tensor<1x4xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x8xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %n0 = arith.truncf %p0 : tensor<1x4xf32, #tp.chip<0>> to tensor<1x4xf16, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]> : tensor<1x16xf32> -> tensor<1x8xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 4]> : tensor<16x4xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x8xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %n1 = arith.truncf %p1 : tensor<1x4xf32, #tp.chip<1>> to tensor<1x4xf16, #tp.chip<1>>
    %sn = tp.allreduce %n0, %n1 : tensor<1x4xf16, #tp.chip<0>>, tensor<1x4xf16, #tp.chip<1>> -> tensor<1x4xf16>
    %s = arith.extf %sn : tensor<1x4xf16> to tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}

// -----
// A maxloc of rounded maxima is not the argmax (rounding makes ties, and a tie picks the
// smaller index): the rounding is seen only where a partial sum travels, never here.
// CHECK-LABEL: error: the maxloc takes chip 0's pair (%r0, %ids0), whose value and index are not the two results of one argmax: the index must be where that value was found [not-argmax]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @maxloc_rounded(%x: tensor<1x2xf32> {tp.name = "x", tp.role = "input"}, %norm: tensor<2xf32> {tp.name = "model.norm.weight", tp.role = "weight"}, %head: tensor<7x2xf32> {tp.name = "lm_head.weight", tp.role = "weight"})
      -> (tensor<1xi64> {tp.name = "next_ids"}) {
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %izero = arith.constant 0 : i64
    %ne = tensor.empty() : tensor<1x2xf32>
    %hn = linalg.generic {indexing_maps = [affine_map<(b, i) -> (b, i)>, affine_map<(b, i) -> (i)>, affine_map<(b, i) -> (b, i)>], iterator_types = ["parallel", "parallel"]}
        ins(%x, %norm : tensor<1x2xf32>, tensor<2xf32>) outs(%ne : tensor<1x2xf32>) {
    ^bb0(%a: f32, %g: f32, %o: f32):
      %s = arith.mulf %a, %g : f32
      linalg.yield %s : f32
    } -> tensor<1x2xf32>
    %hw0 = tp.shard %head at #tp.slice<axis = 0, ranges = [(0, 4)], full = [7, 2]> : tensor<7x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
    %le0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %lz0 = linalg.fill ins(%zero : f32) outs(%le0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %logits0 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw0 : tensor<1x2xf32>, tensor<4x2xf32, #tp.chip<0>>) outs(%lz0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %me0 = tensor.empty() : tensor<1xf32, #tp.chip<0>>
    %mi0 = linalg.fill ins(%ninf : f32) outs(%me0 : tensor<1xf32, #tp.chip<0>>) -> tensor<1xf32, #tp.chip<0>>
    %ie0 = tensor.empty() : tensor<1xi64, #tp.chip<0>>
    %ii0 = linalg.fill ins(%izero : i64) outs(%ie0 : tensor<1xi64, #tp.chip<0>>) -> tensor<1xi64, #tp.chip<0>>
    %max0, %ids0 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits0 : tensor<1x4xf32, #tp.chip<0>>) outs(%mi0, %ii0 : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>) {
    ^bb0(%v: f32, %m: f32, %i: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %off = arith.constant 0 : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>
    %hw1 = tp.shard %head at #tp.slice<axis = 0, ranges = [(4, 3)], full = [7, 2]> : tensor<7x2xf32> -> tensor<3x2xf32, #tp.chip<1>>
    %le1 = tensor.empty() : tensor<1x3xf32, #tp.chip<1>>
    %lz1 = linalg.fill ins(%zero : f32) outs(%le1 : tensor<1x3xf32, #tp.chip<1>>) -> tensor<1x3xf32, #tp.chip<1>>
    %logits1 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw1 : tensor<1x2xf32>, tensor<3x2xf32, #tp.chip<1>>) outs(%lz1 : tensor<1x3xf32, #tp.chip<1>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x3xf32, #tp.chip<1>>
    %me1 = tensor.empty() : tensor<1xf32, #tp.chip<1>>
    %mi1 = linalg.fill ins(%ninf : f32) outs(%me1 : tensor<1xf32, #tp.chip<1>>) -> tensor<1xf32, #tp.chip<1>>
    %ie1 = tensor.empty() : tensor<1xi64, #tp.chip<1>>
    %ii1 = linalg.fill ins(%izero : i64) outs(%ie1 : tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64, #tp.chip<1>>
    %max1, %ids1 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits1 : tensor<1x3xf32, #tp.chip<1>>) outs(%mi1, %ii1 : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>) {
    ^bb0(%v: f32, %m: f32, %i: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %off = arith.constant 4 : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
    %r0 = arith.truncf %max0 : tensor<1xf32, #tp.chip<0>> to tensor<1xbf16, #tp.chip<0>>
    %r1 = arith.truncf %max1 : tensor<1xf32, #tp.chip<1>> to tensor<1xbf16, #tp.chip<1>>
    %best, %next_ids = tp.maxloc %r0, %r1 indices %ids0, %ids1 : tensor<1xbf16, #tp.chip<0>>, tensor<1xbf16, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xbf16>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

