// tp-legalize classes a linalg.generic by the `doc` tag a frontend writes (tp_dialect/op_tags.py)
// before its structure: a LayerNorm's sum of squares is a norm, not a matmul, though it is a
// contraction, so the chip's matmul tiles do not bind it. Untagged, or tagged with a string
// that is no tag, the same generic is a matmul.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize=shim=sn40l | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize=shim=reference | filecheck %s --check-prefix=REF

// GPT-2's LayerNorm over 4 elements is legal on the sn40l shim.
// CHECK-LABEL: func.func @layer_norm_ss
// REF-LABEL: func.func @layer_norm_ss
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @layer_norm_ss(%c: tensor<1x4xf32>, %acc: tensor<1xf32>) -> tensor<1xf32> {
    %ss = linalg.generic {doc = "layer_norm", indexing_maps = [affine_map<(b, z) -> (b, z)>, affine_map<(b, z) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%c : tensor<1x4xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%x: f32, %s: f32):
      %sq = arith.mulf %x, %x : f32
      %t = arith.addf %s, %sq : f32
      linalg.yield %t : f32
    } -> tensor<1xf32>
    func.return %ss : tensor<1xf32>
  }
}

// -----
// The same sum of squares untagged is a contraction over 4 elements: a matmul the tiles refuse.
// REF-LABEL: func.func @untagged_ss
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @untagged_ss(%c: tensor<1x4xf32>, %acc: tensor<1xf32>) -> tensor<1xf32> {
// CHECK-LABEL: error: 'linalg.generic' (matmul) does not fit sn40l:bf16: 'linalg.generic' contracts over 4 elements; the chip's tiles need a multiple of 8
    %ss = linalg.generic {indexing_maps = [affine_map<(b, z) -> (b, z)>, affine_map<(b, z) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%c : tensor<1x4xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%x: f32, %s: f32):
      %sq = arith.mulf %x, %x : f32
      %t = arith.addf %s, %sq : f32
      linalg.yield %t : f32
    } -> tensor<1xf32>
    func.return %ss : tensor<1xf32>
  }
}

// -----
// A `doc` that is no tag says nothing to the shims: the generic is classed by its structure.
// REF-LABEL: func.func @not_a_tag
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @not_a_tag(%c: tensor<1x4xf32>, %acc: tensor<1xf32>) -> tensor<1xf32> {
// CHECK-LABEL: error: 'linalg.generic' (matmul) does not fit sn40l:bf16: 'linalg.generic' contracts over 4 elements; the chip's tiles need a multiple of 8
    %ss = linalg.generic {doc = "my_norm", indexing_maps = [affine_map<(b, z) -> (b, z)>, affine_map<(b, z) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%c : tensor<1x4xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%x: f32, %s: f32):
      %sq = arith.mulf %x, %x : f32
      %t = arith.addf %s, %sq : f32
      linalg.yield %t : f32
    } -> tensor<1xf32>
    func.return %ss : tensor<1xf32>
  }
}
