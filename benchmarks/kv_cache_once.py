"""Generating tokens allocates the KV cache once: memory does not grow with tokens.

A 2-layer model of qwen3-8b's dimensions (hidden 4096, 32 heads, 8 KV heads, head_dim 128,
intermediate 12288, vocab 151936; random bf16 weights written as a Hugging Face directory) is
served by `tp_dialect.load` on 4 chips with a cache of 64 positions, and generates 32 tokens
after an 8-token prompt. Printed: the session's cache bytes (allocated at the first step), its
weight bytes (each slice read once), and the process's resident memory after the prefill and
after tokens 8, 16 and 32 — flat after the first step. Run: ``python -m benchmarks.kv_cache_once``
(about 3 GB of disk in a temporary directory, ~8 GB of memory, a few minutes).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

DIMS = {
    "model_type": "qwen3",
    "architectures": ["Qwen3ForCausalLM"],
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 2,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 151643,
    "eos_token_id": 151645,
}
CHIPS, POSITIONS, PROMPT, TOKENS = 4, 64, 8, 32


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _write(directory: Path) -> None:
    h, v, i = DIMS["hidden_size"], DIMS["vocab_size"], DIMS["intermediate_size"]
    q, kv, d = DIMS["num_attention_heads"], DIMS["num_key_value_heads"], DIMS["head_dim"]
    rng = np.random.default_rng(0)

    def w(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape, np.float32) * scale).astype(ml_dtypes.bfloat16)

    tensors = {"model.embed_tokens.weight": w(v, h), "model.norm.weight": w(h, scale=1.0)}
    for n in range(DIMS["num_hidden_layers"]):
        p = f"model.layers.{n}."
        tensors |= {
            p + "input_layernorm.weight": w(h, scale=1.0),
            p + "post_attention_layernorm.weight": w(h, scale=1.0),
            p + "self_attn.q_proj.weight": w(q * d, h),
            p + "self_attn.k_proj.weight": w(kv * d, h),
            p + "self_attn.v_proj.weight": w(kv * d, h),
            p + "self_attn.o_proj.weight": w(h, q * d),
            p + "self_attn.q_norm.weight": w(d, scale=1.0),
            p + "self_attn.k_norm.weight": w(d, scale=1.0),
            p + "mlp.gate_proj.weight": w(i, h),
            p + "mlp.up_proj.weight": w(i, h),
            p + "mlp.down_proj.weight": w(h, i),
        }
    tensors["lm_head.weight"] = w(v, h)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(DIMS, indent=2))


def main() -> None:
    import tp_dialect

    with tempfile.TemporaryDirectory(prefix="tp-kv-") as tmp:
        directory = Path(tmp)
        start = time.perf_counter()
        _write(directory)
        print(f"wrote a 2-layer qwen3-8b-dims directory in {time.perf_counter() - start:.0f} s")
        model = tp_dialect.load(directory, chips=CHIPS, max_positions=POSITIONS)
        assert model is not None
        prompt = np.arange(100, 100 + PROMPT, dtype=np.int64)[None, :]
        seen: dict[int, tuple[float, int]] = {}

        def on_token(k: int, ids: np.ndarray) -> None:
            if k + 1 in (1, 8, 16, TOKENS):
                seen[k + 1] = (_rss_mb(), model.session.cache_bytes)

        result = model.generate(prompt, TOKENS, on_token=on_token)
    print(
        f"{TOKENS} tokens on {CHIPS} chips (cache of {POSITIONS} positions): time to first "
        f"token {result.ttft_s:.2f} s, time per output token {result.tpot_s:.2f} s; weights "
        f"read once: {model.session.weight_bytes / 1e9:.2f} GB"
    )
    print("| after token | resident memory (MB) | KV cache held (MB) |")
    print("|---|---|---|")
    for k, (rss, cache) in sorted(seen.items()):
        print(f"| {k} | {rss:,.0f} | {cache / 1e6:.1f} |")
    first, last = seen[1], seen[TOKENS]
    grew = last[0] - first[0]
    print(
        f"resident memory grew {grew:+.0f} MB from token 1 to {TOKENS}; cache held "
        f"{'unchanged' if first[1] == last[1] else 'CHANGED'}"
    )
    if first[1] != last[1]:
        sys.exit(1)


if __name__ == "__main__":
    main()
