// tp-gen writes the Megatron split as ordinary IR: each chip's slice its own value (cut
// from the full Hugging Face tensor by tp.shard), each all-reduce explicit.
// RUN: tp-gen qwen3 --preset tiny --chips 2 | filecheck %s
// RUN: tp-gen qwen3 --preset tiny --chips 2 --fused-qkv --fold | filecheck %s --check-prefix=FUSED
// RUN: tp-gen qwen3 --preset tiny --unsharded | filecheck %s --check-prefix=PLAIN
// RUN: tp-gen qwen3 --preset tiny --chips 2 | tp-opt | filecheck %s --check-prefix=VERIFIES

// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.config = {{{.*}}}}
// Each argument states its name and its role (what the runtime asks, never the name): the
// per-step inputs, the weights, and the KV caches with their sequence axis.
// CHECK: func.func @decode(%hidden_states: tensor<1x64xf32> {tp.name = "hidden_states", tp.role = "input"}, %position: i64 {tp.name = "position", tp.role = "input"}
// CHECK-SAME: %model.layers.0.self_attn.q_proj.weight: tensor<128x64xf32> {tp.name = "model.layers.0.self_attn.q_proj.weight", tp.role = "weight"}
// CHECK-SAME: %past_key.0: tensor<1x8x16x8xf32> {tp.name = "past_key.0", tp.role = "cache", tp.cache_axis = 2 : i64}
// CHECK-SAME: -> (tensor<1x64xf32> {tp.name = "hidden_states"}, tensor<1x8x16x8xf32> {tp.name = "present_key.0"}
// Column split into the block: chip c owns q rows [64c, 64c+64) (its 8 query heads) ...
// CHECK: %l0_c0_q_w = tp.shard %model.layers.0.self_attn.q_proj.weight at #tp.slice<axis = 0, ranges = [(0, 64)], full = [128, 64]> : tensor<128x64xf32> -> tensor<64x64xf32, #tp.chip<0>>
// ... and its slice of the KV cache (carried state): KV heads [4c, 4c+4).
// CHECK: %l0_c0_past_k = tp.shard %past_key.0 at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8, 16, 8]>
// Row split out of it: a partial of the full output on each chip, summed by one all-reduce.
// CHECK: %l0_c0_o_w = tp.shard %model.layers.0.self_attn.o_proj.weight at #tp.slice<axis = 1, ranges = [(0, 64)], full = [64, 128]>
// CHECK: %l0_c1_q_w = tp.shard %model.layers.0.self_attn.q_proj.weight at #tp.slice<axis = 0, ranges = [(64, 64)], full = [128, 64]>
// CHECK: %l0_attn_sum = tp.allreduce %l0_c0_o, %l0_c1_o : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
// The residual add is spine: plain tensor types.
// CHECK-NEXT: %l0_attn_res = arith.addf %hidden_states, %l0_attn_sum : tensor<1x64xf32>
// CHECK-NEXT: %l0_present_key = tp.unshard %l0_c0_present_k, %l0_c1_present_k slices
// CHECK: %l0_mlp_sum = tp.allreduce %l0_c0_down, %l0_c1_down
// CHECK: func.return %l0_out, %l0_present_key, %l0_present_value

// A fused qkv checkpoint: each chip's slice is three ranges of one tensor (q, k, v rows).
// FUSED: %l0_c0_qkv_w = tp.shard %model.layers.0.self_attn.qkv_proj.weight at #tp.slice<axis = 0, ranges = [(0, 64), (128, 32), (192, 32)], full = [256, 64]>
// FUSED: %l0_c1_qkv_w = tp.shard %model.layers.0.self_attn.qkv_proj.weight at #tp.slice<axis = 0, ranges = [(64, 64), (160, 32), (224, 32)], full = [256, 64]>
// --fold spells the all-reduce as the seed's left fold of adds.
// FUSED: %l0_attn_sum = linalg.add ins(%l0_c0_o, %l0_c1_o : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>>)
// FUSED-NOT: tp.allreduce

// PLAIN-LABEL: func.func @decode
// PLAIN-NOT: tp.{{shard|allreduce|unshard|chip}}
// PLAIN: func.return

// VERIFIES: tp.allreduce
