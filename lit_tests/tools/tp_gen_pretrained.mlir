// tp-gen --from-pretrained writes a Hugging Face directory's whole-model step, unsharded and
// outlined: @prefill or @decode calls one private @layer per layer; ids in, greedy ids (and
// logits) then the caches out; the weights by checkpoint name (a tied head: the embedding).
// RUN: tp-gen --from-pretrained %S/Inputs/hf/qwen3 --step decode --batch 2 --max-positions 8 | filecheck %s
// RUN: tp-gen --from-pretrained %S/Inputs/hf/qwen3 --prompt-len 3 --max-positions 8 --logits | tp-opt --tp-verify | filecheck %s --check-prefix=PREFILL
// RUN: tp-gen --from-pretrained %S/Inputs/hf/gpt2 --step decode --max-positions 8 | filecheck %s --check-prefix=GPT2
// RUN: tp-gen --from-pretrained %S/Inputs/hf/mistral_window --prompt-len 6 --max-positions 8 | filecheck %s --check-prefix=WINDOW
// RUN: not tp-gen --from-pretrained %S/Inputs/hf/unknown_field 2>&1 | filecheck %s --check-prefix=FIELD
// RUN: not tp-gen --from-pretrained %S/Inputs/hf/qwen3 --chips 3 2>&1 | filecheck %s --check-prefix=CHIPS
// RUN: not tp-gen --from-pretrained %S/Inputs/hf/nowhere 2>&1 | filecheck %s --check-prefix=NODIR
// The argmax's two results read back as tp-opt prints them (-> (f32s, i64s)).
// RUN: tp-gen --from-pretrained %S/Inputs/hf/gpt2 --max-positions 8 | tp-opt | tp-opt | filecheck %s --check-prefix=ROUNDTRIP

// CHECK-LABEL: builtin.module attributes {tp.chips = 1 : i64, tp.config = {batch = 2 : i64, {{.*}}family = "llama", {{.*}}kind = "decode", {{.*}}model_type = "qwen3"
// CHECK: func.func private @layer(%hidden_states: tensor<2x1x64xf32>, %position: i64, %rope_cos: tensor<1x8xf32>, %rope_sin: tensor<1x8xf32>, %input_layernorm.weight: tensor<64xf32>
// The keys are written at rows [position, position + 1) of the cache [B, kv, P, head_dim].
// CHECK: tensor.insert_slice %{{.*}} into %past_key[0, 0, %l_pos, 0] [2, 4, 1, 16] [1, 1, 1, 1] : tensor<2x4x1x16xf32> into tensor<2x4x8x16xf32>
// CHECK: func.func @decode(%input_ids: tensor<2x1xi64> {tp.name = "input_ids", tp.role = "input"}, %position: i64 {tp.name = "position", tp.role = "input"}, %model.embed_tokens.weight: tensor<96x64xf32> {tp.name = "model.embed_tokens.weight", tp.role = "weight"}
// CHECK-SAME: %past_key.0: tensor<2x4x8x16xf32> {tp.name = "past_key.0", tp.role = "cache", tp.cache_axis = 2 : i64}
// CHECK-NOT: lm_head
// CHECK-SAME: -> (tensor<2xi64> {tp.name = "next_ids"}, tensor<2x4x8x16xf32> {tp.name = "present_key.0"}
// The embedding: a gather of the captured table by the ids.
// CHECK: %embed = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%input_ids : tensor<2x1xi64>)
// CHECK-NEXT: ^bb0(%id: i64, %o: f32):
// CHECK-NEXT: %row = arith.index_cast %id : i64 to index
// CHECK-NEXT: %col = linalg.index 2 : index
// CHECK-NEXT: %v = tensor.extract %model.embed_tokens.weight[%row, %col] : tensor<96x64xf32>
// CHECK: func.call @layer(%embed, %position, %rope_cos, %rope_sin, %model.layers.0.input_layernorm.weight
// CHECK: func.call @layer(%l0_out, %position
// The head: the last row, the final norm, the logits from the tied embedding, the argmax.
// CHECK: %last = tensor.extract_slice %l1_out[0, 0, 0] [2, 1, 64] [1, 1, 1] : tensor<2x1x64xf32> to tensor<2x64xf32>
// CHECK: %logits = linalg.generic {{.*}} ins(%final_norm, %model.embed_tokens.weight : tensor<2x64xf32>, tensor<96x64xf32>)
// CHECK: %max_logit, %next_ids = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<2x96xf32>) outs(%neg_infs, %zero_ids : tensor<2xf32>, tensor<2xi64>)
// CHECK-NEXT: ^bb0(%v: f32, %m: f32, %i: i64):
// CHECK-NEXT: %j = linalg.index 1 : index
// CHECK-NEXT: %g = arith.index_cast %j : index to i64
// CHECK-NEXT: %gt = arith.cmpf ogt, %v, %m : f32
// CHECK-NEXT: %nm = arith.select %gt, %v, %m : f32
// CHECK-NEXT: %ni = arith.select %gt, %g, %i : i64
// CHECK-NEXT: linalg.yield %nm, %ni : f32, i64
// CHECK: func.return %next_ids, %l0_present_key, %l0_present_value, %l1_present_key, %l1_present_value

// PREFILL-LABEL: builtin.module attributes
// PREFILL-SAME: tp.certificate
// PREFILL: func.func @prefill(%input_ids: tensor<1x3xi64>
// PREFILL-SAME: -> (tensor<1xi64> {tp.name = "next_ids"}, tensor<1x96xf32> {tp.name = "logits"}, tensor<1x4x8x16xf32> {tp.name = "present_key.0"}

// GPT2-LABEL: func.func private @layer(%hidden_states: tensor<1x1x64xf32>
// GPT2: func.func @decode(%input_ids: tensor<1x1xi64> {{.*}}, %transformer.wte.weight: tensor<96x64xf32> {{.*}}, %transformer.wpe.weight: tensor<64x64xf32> {tp.name = "transformer.wpe.weight", tp.role = "weight"}, %transformer.h.0.ln_1.weight
// GPT2: %embed = linalg.generic {doc = "embedding"
// GPT2: %pos_embed = linalg.generic {doc = "position_embedding"
// GPT2: %logits = linalg.generic {{.*}} ins(%ln_f, %transformer.wte.weight

// A window (4) shorter than the cache (8): keys j > p - 4 only.
// WINDOW-LABEL: func.func private @layer
// WINDOW: %keep = arith.cmpi sle, %m, %p : index
// WINDOW-NEXT: %lo = arith.subi %p, %window : index
// WINDOW-NEXT: %near = arith.cmpi sgt, %m, %lo : index

// ROUNDTRIP: } -> (tensor<1xf32>, tensor<1xi64>)

// FIELD: tp-gen: error: config field 'attn_logit_softcapping' of model_type 'llama' is not understood: it may change the numbers, so tp refuses it rather than ignore it
// CHIPS: tp-gen: error: num_attention_heads (8) is not divisible by --chips 3
// NODIR: tp-gen: error: cannot read model directory '{{.*}}nowhere': not a directory
