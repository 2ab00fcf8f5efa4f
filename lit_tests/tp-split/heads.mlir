// tp-split through heads: a column-split projection reshaped into [batch, kv_heads, group,
// head_dim] keeps its cut on the KV-head axis (GQA: a chip holds whole KV heads and the
// query heads that read them); the KV cache it is written into is cut on that axis too
// (loaded by tp.shard, stored back by tp.unshard); attention runs on each chip's heads.
// RUN: tp-opt %s --tp-split="chips=2 plan=%S/Inputs/heads.json" | filecheck %s

// CHECK-LABEL: func.func @gqa
// CHECK:         %q4_c0 = tensor.expand_shape %q_c0 {{.*}} output_shape [1, 1, 2, 2] : tensor<1x4xf32, #tp.chip<0>> into tensor<1x1x2x2xf32, #tp.chip<0>>
// CHECK:         %k4_c1 = tensor.expand_shape %k_c1 {{.*}} output_shape [1, 1, 1, 2] : tensor<1x2xf32, #tp.chip<1>> into tensor<1x1x1x2xf32, #tp.chip<1>>
// CHECK:         %present_cache_c0 = tp.shard %cache at #tp.slice<axis = 1, ranges = [(0, 1)], full = [1, 2, 4, 2]> : tensor<1x2x4x2xf32> -> tensor<1x1x4x2xf32, #tp.chip<0>>
// CHECK-NEXT:    %present_c0 = tensor.insert_slice %k4_c0 into %present_cache_c0[0, 0, %idx, 0] [1, 1, 1, 2] [1, 1, 1, 1] : tensor<1x1x1x2xf32, #tp.chip<0>> into tensor<1x1x4x2xf32, #tp.chip<0>>
// A returned cut value is stored back as soon as its last chip's part is made.
// CHECK:         %present_c1 = tensor.insert_slice %k4_c1 into %present_cache_c1
// CHECK-NEXT:    %present = tp.unshard %present_c0, %present_c1 slices [#tp.slice<axis = 1, ranges = [(0, 1)], full = [1, 2, 4, 2]>, #tp.slice<axis = 1, ranges = [(1, 1)], full = [1, 2, 4, 2]>]
// CHECK:         %scores_c0 = linalg.generic {{.*}} ins(%q4_c0, %present_c0 : tensor<1x1x2x2xf32, #tp.chip<0>>, tensor<1x1x4x2xf32, #tp.chip<0>>)
// CHECK:         %flat_c1 = tensor.collapse_shape %scores_c1 {{.*}} : tensor<1x1x2x4xf32, #tp.chip<1>> into tensor<1x8xf32, #tp.chip<1>>
// CHECK-NEXT:    %flat = tp.unshard %flat_c0, %flat_c1 slices [#tp.slice<axis = 1, ranges = [(0, 8)], full = [1, 16]>, #tp.slice<axis = 1, ranges = [(8, 8)], full = [1, 16]>]
// CHECK-NEXT:    func.return %present, %flat
builtin.module {
  func.func @gqa(%x: tensor<1x4xf32> {tp.name = "x"}, %pos: index {tp.name = "position"}, %wq: tensor<8x4xf32> {tp.name = "attn.q_proj.weight"}, %wk: tensor<4x4xf32> {tp.name = "attn.k_proj.weight"}, %cache: tensor<1x2x4x2xf32> {tp.name = "past_key.0", tp.role = "cache"}) -> (tensor<1x2x4x2xf32>, tensor<1x16xf32>) {
    %z = arith.constant 0.0 : f32
    %idx = arith.addi %pos, %pos : index
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %q = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %wq : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %k = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %wk : tensor<1x4xf32>, tensor<4x4xf32>) outs(%zeros4 : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %q4 = tensor.expand_shape %q [[0], [1, 2, 3]] output_shape [1, 2, 2, 2] : tensor<1x8xf32> into tensor<1x2x2x2xf32>
    %k4 = tensor.expand_shape %k [[0], [1, 2, 3]] output_shape [1, 2, 1, 2] : tensor<1x4xf32> into tensor<1x2x1x2xf32>
    %present = tensor.insert_slice %k4 into %cache[0, 0, %idx, 0] [1, 2, 1, 2] [1, 1, 1, 1] : tensor<1x2x1x2xf32> into tensor<1x2x4x2xf32>
    %es = tensor.empty() : tensor<1x2x2x4xf32>
    %zs = linalg.fill ins(%z : f32) outs(%es : tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
    %scores = linalg.generic {indexing_maps = [affine_map<(b, k, g, m, d) -> (b, k, g, d)>, affine_map<(b, k, g, m, d) -> (b, k, m, d)>, affine_map<(b, k, g, m, d) -> (b, k, g, m)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q4, %present : tensor<1x2x2x2xf32>, tensor<1x2x4x2xf32>) outs(%zs : tensor<1x2x2x4xf32>) {
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %m = arith.mulf %a, %c : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x2x2x4xf32>
    %flat = tensor.collapse_shape %scores [[0], [1, 2, 3]] : tensor<1x2x2x4xf32> into tensor<1x16xf32>
    func.return %present, %flat : tensor<1x2x4x2xf32>, tensor<1x16xf32>
  }
}
