// tp-gen's bounds (tp_dialect/frontend/bounds.py), the same for both families, refused in
// one line before anything is written.
// RUN: not tp-gen qwen3 --layers 1000000000 2>&1 | filecheck %s --check-prefix=LAYERS
// RUN: not tp-gen gpt2 --unsharded --layers 1000000000 2>&1 | filecheck %s --check-prefix=LAYERS
// RUN: not tp-gen qwen3 --layers 256 --chips 16 --kv-heads 16 2>&1 | filecheck %s --check-prefix=CHIPLAYERS
// RUN: not tp-gen qwen3 --hidden 99999999999999999999 2>&1 | filecheck %s --check-prefix=I64
// RUN: not tp-gen gpt2 --unsharded --hidden 99999999999999999999 2>&1 | filecheck %s --check-prefix=I64
// RUN: not tp-gen qwen3 --max-positions 288230376151711744 2>&1 | filecheck %s --check-prefix=BYTES
// RUN: not tp-gen qwen3 --head-dim 1000000000 2>&1 | filecheck %s --check-prefix=ROPE
// RUN: not tp-gen gpt2 --unsharded --chips 0 2>&1 | filecheck %s --check-prefix=CHIPS
// RUN: not tp-gen qwen3 --unsharded --chips -1 2>&1 | filecheck %s --check-prefix=CHIPSNEG
// RUN: not tp-gen gpt2 --unsharded --kv-heads 0 2>&1 | filecheck %s --check-prefix=KV

// LAYERS: tp-gen: error: layers 1000000000 is above 256: a generated program writes every layer out, and holds at most 256
// LAYERS-NOT: Traceback
// CHIPLAYERS: tp-gen: error: 256 layers over 16 chips is 4096 chip-layers, above 2048: the flat program writes every chip's slice of every layer out (over 16 chips, at most 128 layers)
// I64: tp-gen: error: hidden 99999999999999999999 does not fit an i64 (at most 9223372036854775807): tp's tensor dims and tp.config are i64
// BYTES: tp-gen: error: tensor 'past_key.0' of shape [1, 8, 288230376151711744, 8] is 73786976294838206464 bytes in f32, above 9223372036854775807 (2**63 - 1): tp's sizes are i64
// ROPE: tp-gen: error: the RoPE table 'inv_freq' (head_dim / 2 values) holds 500000000 values, written out one by one: above 4096
// CHIPS: tp-gen: error: chips must be positive, got 0
// CHIPSNEG: tp-gen: error: chips must be positive, got -1
// KV: tp-gen: error: --kv-heads does not apply to gpt2
