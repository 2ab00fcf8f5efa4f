// tp-split on a fused qkv_proj ([out, in]) whose blocks differ in size: q holds twice the
// rows of k and of v (grouped KV heads), so the plan states the blocks' relative sizes
// ("parts": [2, 1, 1]); each block is cut in N runs, chip c's slice is its run of each.
// RUN: tp-opt %s --tp-split="chips=2 plan=%S/Inputs/fused_qkv.json" | filecheck %s
// RUN: not tp-opt %s --tp-split="chips=3 plan=%S/Inputs/fused_qkv.json" 2>&1 | filecheck %s --check-prefix=THREE

// CHECK-LABEL: func.func @fused_qkv
// CHECK:         %qkv_weight_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2), (4, 1), (6, 1)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
// CHECK-NEXT:    %qkv_weight_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(2, 2), (5, 1), (7, 1)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
// The q, k and v windows: each chip's run of each, at 0, 2 and 3 in its own tensor.
// CHECK:         %q_c0 = tensor.extract_slice %qkv_c0[0, 0] [1, 2] [1, 1] : tensor<1x4xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
// CHECK-NEXT:    %q_c1 = tensor.extract_slice %qkv_c1[0, 0] [1, 2] [1, 1]
// CHECK-NEXT:    %q = tp.unshard %q_c0, %q_c1 slices [#tp.slice<axis = 1, ranges = [(0, 2)], full = [1, 4]>, #tp.slice<axis = 1, ranges = [(2, 2)], full = [1, 4]>]
// CHECK-NEXT:    %k_c0 = tensor.extract_slice %qkv_c0[0, 2] [1, 1] [1, 1]
// CHECK:         %v_c0 = tensor.extract_slice %qkv_c0[0, 3] [1, 1] [1, 1]

// Three chips cannot cut blocks of 4, 2 and 2 rows evenly.
// THREE: error: 3 chips do not divide the packed blocks 2:1:1 of axis 0 of 'layers.0.self_attn.qkv_proj.weight' (8 elements): each chip must hold an equal run [plan-mismatch]
builtin.module {
  func.func @fused_qkv(%x: tensor<1x4xf32> {tp.name = "x", tp.role = "input"}, %w: tensor<8x4xf32> {tp.name = "layers.0.self_attn.qkv_proj.weight"}) -> (tensor<1x4xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x8xf32>
    %zeros = linalg.fill ins(%z : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
    %qkv = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros : tensor<1x8xf32>) {
    ^bb0(%a: f32, %v: f32, %acc: f32):
      %m = arith.mulf %a, %v : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %q = tensor.extract_slice %qkv[0, 0] [1, 4] [1, 1] : tensor<1x8xf32> to tensor<1x4xf32>
    %k = tensor.extract_slice %qkv[0, 4] [1, 2] [1, 1] : tensor<1x8xf32> to tensor<1x2xf32>
    %v = tensor.extract_slice %qkv[0, 6] [1, 2] [1, 1] : tensor<1x8xf32> to tensor<1x2xf32>
    func.return %q, %k, %v : tensor<1x4xf32>, tensor<1x2xf32>, tensor<1x2xf32>
  }
}
