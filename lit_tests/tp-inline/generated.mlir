// tp-gen --outline writes one private @layer and a @decode with the flat program's ports
// that calls it once a layer; tp-inline gives the flat program back (the callee's body in
// @decode once per call, the calls and the callee gone).
// RUN: tp-gen qwen3 --preset tiny --chips 2 --layers 2 --outline | filecheck %s --check-prefix=GEN
// RUN: tp-gen qwen3 --preset tiny --chips 2 --layers 2 --outline | tp-opt --tp-inline | filecheck %s --check-prefix=FLAT
// RUN: tp-gen gpt2 --preset tiny --unsharded --layers 2 --outline | tp-opt --tp-inline | filecheck %s --check-prefix=GPT2

// The layer: hidden state, position and RoPE tables (shared by every layer), one layer's
// weights (their names within the layer) and caches; it returns the new hidden state and
// both updated caches. Its body is the flat layer's, values named l_… instead of l0_….
// GEN: func.func private @layer(%hidden_states: tensor<1x64xf32>, %position: i64, %rope_cos: tensor<4xf32>, %rope_sin: tensor<4xf32>, %input_layernorm.weight: tensor<64xf32>, %self_attn.q_proj.weight: tensor<128x64xf32>
// GEN-SAME: %mlp.down_proj.weight: tensor<64x128xf32>, %past_key: tensor<1x8x16x8xf32>, %past_value: tensor<1x8x16x8xf32>) -> (tensor<1x64xf32>, tensor<1x8x16x8xf32>, tensor<1x8x16x8xf32>) {
// GEN: %l_q_weight_c0 = tp.shard %self_attn.q_proj.weight at #tp.slice<axis = 0, ranges = [(0, 64)], full = [128, 64]>
// GEN: %l_present_k = tp.unshard %l_present_k_c0, %l_present_k_c1
// GEN: %l_o_sum = tp.allreduce %l_o_c0, %l_o_c1
// GEN: func.return %l_out, %l_present_k, %l_present_v
// The entry's ports are the flat program's, by name and role.
// GEN-LABEL: func.func @decode(%hidden_states: tensor<1x64xf32> {tp.name = "hidden_states", tp.role = "input"}, %position: i64 {tp.name = "position", tp.role = "input"}
// GEN-SAME: %past_value.1: tensor<1x8x16x8xf32> {tp.name = "past_value.1", tp.role = "cache", tp.cache_axis = 2 : i64}) -> (tensor<1x64xf32> {tp.name = "hidden_states"}, tensor<1x8x16x8xf32> {tp.name = "present_key.0"}
// GEN: %rope_sin = linalg.generic
// GEN: %l0_out, %l0_present_key, %l0_present_value = func.call @layer(%hidden_states, %position, %rope_cos, %rope_sin, %model.layers.0.input_layernorm.weight,
// GEN-SAME: %past_key.0, %past_value.0) {tp.layer = 0 : i64}
// GEN-NEXT: %l1_out, %l1_present_key, %l1_present_value = func.call @layer(%l0_out, %position, %rope_cos, %rope_sin, %model.layers.1.input_layernorm.weight,
// GEN-SAME: %past_key.1, %past_value.1) {tp.layer = 1 : i64}
// GEN-NEXT: func.return %l1_out, %l0_present_key, %l0_present_value, %l1_present_key, %l1_present_value

// The copies take their layer's names (the call's l0_/l1_ for the callee's l_): the flat
// program's names.
// FLAT-NOT: @layer
// FLAT-LABEL: func.func @decode(%hidden_states: tensor<1x64xf32> {tp.name = "hidden_states", tp.role = "input"}
// FLAT-NOT: func.call
// FLAT: %l0_q_weight_c0 = tp.shard %model.layers.0.self_attn.q_proj.weight at #tp.slice<axis = 0, ranges = [(0, 64)], full = [128, 64]>
// FLAT: %l0_o_sum = tp.allreduce %l0_o_c0, %l0_o_c1
// FLAT: %l0_out = arith.addf %l0_attn_res, %l0_down_sum
// FLAT-NOT: func.call
// FLAT: %l1_q_weight_c0 = tp.shard %model.layers.1.self_attn.q_proj.weight at #tp.slice<axis = 0, ranges = [(0, 64)], full = [128, 64]>
// FLAT: %l1_attn_res = arith.addf %l0_out, %l1_o_sum
// FLAT: %l1_out = arith.addf %l1_attn_res, %l1_down_sum
// FLAT: func.return %l1_out, %l0_present_key, %l0_present_value, %l1_present_key, %l1_present_value
// FLAT-NOT: @layer

// GPT2-LABEL: func.func @decode(
// GPT2-NOT: func.call
// GPT2: %l0_c_attn = linalg.generic {{.*}} ins(%l0_ln, %h.0.attn.c_attn.weight
// GPT2: %l0_out = arith.addf %l0_attn_res, %l0_mlp_out
// GPT2: %l1_c_attn = linalg.generic {{.*}} ins(%l1_ln{{(_[0-9]+)?}}, %h.1.attn.c_attn.weight
// GPT2: %l1_out = arith.addf
// GPT2-NOT: @layer
