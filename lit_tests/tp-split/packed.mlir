// tp-split on GPT-2's attention projections, stored as Conv1D ([in, out]): c_attn packs q, k
// and v side by side, so each chip's slice of it is three runs (a multi-range #tp.slice); its
// bias is cut with it; c_proj is row-split, its bias added once, after the all-reduce.
// RUN: tp-opt %s --tp-split="chips=2 plan=%S/Inputs/conv1d.json" | filecheck %s

// CHECK-LABEL: func.func @attn_proj
// CHECK:         %qkv_weight_c0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 2), (4, 2), (8, 2)], full = [4, 12]> : tensor<4x12xf32> -> tensor<4x6xf32, #tp.chip<0>>
// CHECK-NEXT:    %qkv_weight_c1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(2, 2), (6, 2), (10, 2)], full = [4, 12]> : tensor<4x12xf32> -> tensor<4x6xf32, #tp.chip<1>>
// CHECK:         %qkv_c0 = linalg.generic {{.*}} ins(%x, %qkv_weight_c0 : tensor<1x4xf32>, tensor<4x6xf32, #tp.chip<0>>)
// CHECK:         %qkvb_bias_c0 = tp.shard %b at #tp.slice<axis = 0, ranges = [(0, 2), (4, 2), (8, 2)], full = [12]> : tensor<12xf32> -> tensor<6xf32, #tp.chip<0>>
// CHECK:         %qkvb_c0 = linalg.generic {{.*}} ins(%qkv_c0, %qkvb_bias_c0 : tensor<1x6xf32, #tp.chip<0>>, tensor<6xf32, #tp.chip<0>>)
// The q, k and v windows: each chip's run of each, at 0, 2 and 4 in its own tensor.
// CHECK:         %q_c0 = tensor.extract_slice %qkvb_c0[0, 0] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
// CHECK-NEXT:    %q_c1 = tensor.extract_slice %qkvb_c1[0, 0] [1, 2] [1, 1]
// CHECK-NEXT:    %k_c0 = tensor.extract_slice %qkvb_c0[0, 2] [1, 2] [1, 1]
// CHECK-NEXT:    %k_c1 = tensor.extract_slice %qkvb_c1[0, 2] [1, 2] [1, 1]
// CHECK-NEXT:    %v_c0 = tensor.extract_slice %qkvb_c0[0, 4] [1, 2] [1, 1]
// CHECK-NEXT:    %v_c1 = tensor.extract_slice %qkvb_c1[0, 4] [1, 2] [1, 1]
// CHECK:         %y_weight_c0 = tp.shard %p at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 4]> : tensor<4x4xf32> -> tensor<2x4xf32, #tp.chip<0>>
// CHECK:         %y_c0 = linalg.generic {{.*}} ins(%mix_c0, %y_weight_c0 : tensor<1x2xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<0>>)
// CHECK:         %y_sum = tp.allreduce %y_c0, %y_c1
// CHECK-NEXT:    %yb = linalg.generic {{.*}} ins(%y_sum, %pb : tensor<1x4xf32>, tensor<4xf32>)
// CHECK-NOT:     tp.shard %pb
builtin.module {
  func.func @attn_proj(%x: tensor<1x4xf32> {tp.name = "h.0.attn.c_attn_in"}, %w: tensor<4x12xf32> {tp.name = "h.0.attn.c_attn.weight"}, %b: tensor<12xf32> {tp.name = "h.0.attn.c_attn.bias"}, %p: tensor<4x4xf32> {tp.name = "h.0.attn.c_proj.weight"}, %pb: tensor<4xf32> {tp.name = "h.0.attn.c_proj.bias"}) -> tensor<1x4xf32> {
    %z = arith.constant 0.0 : f32
    %e12 = tensor.empty() : tensor<1x12xf32>
    %zeros12 = linalg.fill ins(%z : f32) outs(%e12 : tensor<1x12xf32>) -> tensor<1x12xf32>
    %qkv = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (k, o)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x4xf32>, tensor<4x12xf32>) outs(%zeros12 : tensor<1x12xf32>) {
    ^bb0(%a: f32, %v: f32, %acc: f32):
      %m = arith.mulf %a, %v : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x12xf32>
    %qkvb = linalg.generic {indexing_maps = [affine_map<(b, o) -> (b, o)>, affine_map<(b, o) -> (o)>, affine_map<(b, o) -> (b, o)>], iterator_types = ["parallel", "parallel"]} ins(%qkv, %b : tensor<1x12xf32>, tensor<12xf32>) outs(%e12 : tensor<1x12xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
    } -> tensor<1x12xf32>
    %q = tensor.extract_slice %qkvb[0, 0] [1, 4] [1, 1] : tensor<1x12xf32> to tensor<1x4xf32>
    %k = tensor.extract_slice %qkvb[0, 4] [1, 4] [1, 1] : tensor<1x12xf32> to tensor<1x4xf32>
    %v = tensor.extract_slice %qkvb[0, 8] [1, 4] [1, 1] : tensor<1x12xf32> to tensor<1x4xf32>
    %qk = arith.mulf %q, %k : tensor<1x4xf32>
    %mix = arith.addf %qk, %v : tensor<1x4xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (k, o)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%mix, %p : tensor<1x4xf32>, tensor<4x4xf32>) outs(%zeros4 : tensor<1x4xf32>) {
    ^bb0(%a: f32, %v2: f32, %acc: f32):
      %m = arith.mulf %a, %v2 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %yb = linalg.generic {indexing_maps = [affine_map<(b, o) -> (b, o)>, affine_map<(b, o) -> (o)>, affine_map<(b, o) -> (b, o)>], iterator_types = ["parallel", "parallel"]} ins(%y, %pb : tensor<1x4xf32>, tensor<4xf32>) outs(%e4 : tensor<1x4xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32>
    func.return %yb : tensor<1x4xf32>
  }
}
