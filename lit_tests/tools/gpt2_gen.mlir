// tp-gen gpt2 writes GPT-2's decode step unsharded, by Hugging Face GPT2Model names and
// layouts (Conv1D weights [in, out]), spelled like Qwen3's unsharded program so that
// tp-split can propagate a plan through it; its split comes from tp-split, not tp-gen.
// RUN: tp-gen gpt2 --preset tiny --unsharded | filecheck %s
// RUN: tp-gen gpt2 --preset tiny --unsharded --layers 2 --batch 2 | tp-opt | filecheck %s --check-prefix=VERIFIES
// RUN: not tp-gen gpt2 --preset tiny 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not tp-gen gpt2 --preset tiny --unsharded --kv-heads 4 2>&1 | filecheck %s --check-prefix=KV
// RUN: not tp-gen gpt2 --preset tiny --unsharded --heads 7 2>&1 | filecheck %s --check-prefix=HEADS

// The config names its family, so a tool can regenerate the program from it.
// CHECK-LABEL: builtin.module attributes {tp.chips = 1 : i64, tp.config = {batch = 1 : i64, dtype = "f32", eps = 1.0e-05 : f64, family = "gpt2", heads = 8 : i64, hidden = 64 : i64, intermediate = 256 : i64, layers = 1 : i64, max_positions = 16 : i64}}
// The same interface as Qwen3's: hidden_states and position in, one cache pair per layer
// ([batch, heads, positions, head_dim], axis 2 grows), weights by checkpoint name.
// CHECK: func.func @decode(%hidden_states: tensor<1x64xf32> {tp.name = "hidden_states", tp.role = "input"}, %position: i64 {tp.name = "position", tp.role = "input"}
// CHECK-SAME: %h.0.ln_1.weight: tensor<64xf32> {tp.name = "h.0.ln_1.weight", tp.role = "weight"}, %h.0.ln_1.bias: tensor<64xf32> {tp.name = "h.0.ln_1.bias", tp.role = "weight"}
// CHECK-SAME: %h.0.attn.c_attn.weight: tensor<64x192xf32> {tp.name = "h.0.attn.c_attn.weight", tp.role = "weight"}, %h.0.attn.c_attn.bias: tensor<192xf32>
// CHECK-SAME: %h.0.attn.c_proj.weight: tensor<64x64xf32>
// CHECK-SAME: %h.0.mlp.c_fc.weight: tensor<64x256xf32> {tp.name = "h.0.mlp.c_fc.weight", tp.role = "weight"}, %h.0.mlp.c_fc.bias: tensor<256xf32>
// CHECK-SAME: %h.0.mlp.c_proj.weight: tensor<256x64xf32>
// CHECK-SAME: %past_key.0: tensor<1x8x16x8xf32> {tp.name = "past_key.0", tp.role = "cache", tp.cache_axis = 2 : i64}, %past_value.0: tensor<1x8x16x8xf32> {tp.name = "past_value.0", tp.role = "cache", tp.cache_axis = 2 : i64})
// CHECK-SAME: -> (tensor<1x64xf32> {tp.name = "hidden_states"}, tensor<1x8x16x8xf32> {tp.name = "present_key.0"}, tensor<1x8x16x8xf32> {tp.name = "present_value.0"})
// LayerNorm: a reduction, the centred values, their sum of squares, the scaled map.
// CHECK: %l0_ln_1_sum = linalg.generic {doc = "layer_norm", {{.*}} iterator_types = ["parallel", "reduction"]} ins(%hidden_states
// CHECK: %l0_ln_1 = linalg.generic {doc = "layer_norm", {{.*}} ins(%l0_ln_1_centred, %l0_ln_1_ss, %h.0.ln_1.weight, %h.0.ln_1.bias :
// c_attn is a Conv1D: the contraction reads the weight [in, out] (d2, d1); the bias is its
// own map, broadcast over the batch.
// CHECK: %l0_c_attn = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%l0_ln_1, %h.0.attn.c_attn.weight : tensor<1x64xf32>, tensor<64x192xf32>)
// CHECK: %l0_qkv = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], {{.*}} ins(%l0_c_attn, %h.0.attn.c_attn.bias :
// q, k and v are column blocks of it, each viewed as [b, heads, 1, head_dim].
// CHECK: %l0_q = tensor.extract_slice %l0_qkv[0, 0] [1, 64] [1, 1] : tensor<1x192xf32> to tensor<1x64xf32>
// CHECK-NEXT: %l0_k = tensor.extract_slice %l0_qkv[0, 64] [1, 64]
// CHECK-NEXT: %l0_v = tensor.extract_slice %l0_qkv[0, 128] [1, 64]
// CHECK-NEXT: %l0_q4 = tensor.expand_shape %l0_q {{\[\[}}0], [1, 2, 3]] output_shape [1, 8, 1, 8] : tensor<1x64xf32> into tensor<1x8x1x8xf32>
// The cache written at `position`, attention over positions 0..position (no RoPE).
// CHECK: %l0_present_k = tensor.insert_slice %l0_k4 into %past_key.0[0, 0, %l0_pos, 0] [1, 8, 1, 8] [1, 1, 1, 1]
// CHECK-NEXT: %l0_present_v = tensor.insert_slice %l0_v4 into %past_value.0[0, 0, %l0_pos, 0]
// CHECK-NOT: rope
// CHECK: %l0_scores = linalg.generic
// CHECK: %l0_masked = linalg.generic {doc = "softmax"
// CHECK: %l0_attn = linalg.generic
// CHECK: %l0_attn_flat = tensor.collapse_shape %l0_attn {{\[\[}}0], [1, 2, 3]] : tensor<1x8x1x8xf32> into tensor<1x64xf32>
// CHECK: %l0_attn_c_proj = linalg.generic {{.*}} ins(%l0_attn_flat, %h.0.attn.c_proj.weight
// CHECK: %l0_attn_out = linalg.generic {{.*}} ins(%l0_attn_c_proj, %h.0.attn.c_proj.bias
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK-NEXT: } -> tensor<1x64xf32>
// CHECK-NEXT: %l0_attn_res = arith.addf %hidden_states, %l0_attn_out : tensor<1x64xf32>
// CHECK: %l0_ln_2 = linalg.generic {doc = "layer_norm"
// CHECK: %l0_fc = linalg.generic {{.*}} ins(%l0_c_fc, %h.0.mlp.c_fc.bias
// GELU, tanh approximation.
// CHECK: %l0_gelu = linalg.generic {doc = "gelu", {{.*}} ins(%l0_fc : tensor<1x256xf32>)
// CHECK: math.tanh
// CHECK: %l0_mlp_out = linalg.generic {{.*}} ins(%l0_mlp_c_proj, %h.0.mlp.c_proj.bias
// CHECK: %l0_out = arith.addf %l0_attn_res, %l0_mlp_out : tensor<1x64xf32>
// CHECK-NEXT: func.return %l0_out, %l0_present_k, %l0_present_v
// CHECK-NOT: tp.{{shard|allreduce|unshard|chip}}

// VERIFIES-LABEL: func.func @decode
// VERIFIES: %l1_out = arith.addf %l1_attn_res, %l1_mlp_out : tensor<2x64xf32>

// SPLIT: tp-gen: error: tp-gen writes gpt2 unsharded only (--unsharded): the split program comes from tp-opt --tp-split="chips=N plan=gpt2"
// SPLIT-NOT: Traceback

// KV: tp-gen: error: --kv-heads does not apply to gpt2
// KV-NOT: Traceback

// HEADS: tp-gen: error: heads (7) must divide hidden (64): head_dim is hidden / heads
// HEADS-NOT: Traceback
