"""A plain float32 numpy Qwen3 decode layer: the baseline the interpreter is measured against.

Written the way one would by hand (x @ W.T, in-place cache write), with no IR involved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def decode_layer(
    w: Mapping[str, np.ndarray],
    x: np.ndarray,
    past_k: np.ndarray,
    past_v: np.ndarray,
    position: int,
    *,
    layer: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    eps: float = 1e-6,
    theta: float = 1e6,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One decoder layer at ``position``: new hidden states and the updated caches."""
    p = f"model.layers.{layer}."
    b = x.shape[0]
    xn = _rms(x, w[p + "input_layernorm.weight"], eps)
    q = (xn @ w[p + "self_attn.q_proj.weight"].T).reshape(b, heads, head_dim)
    k = (xn @ w[p + "self_attn.k_proj.weight"].T).reshape(b, kv_heads, head_dim)
    v = (xn @ w[p + "self_attn.v_proj.weight"].T).reshape(b, kv_heads, head_dim)
    q = _rms(q, w[p + "self_attn.q_norm.weight"], eps)
    k = _rms(k, w[p + "self_attn.k_norm.weight"], eps)
    half = head_dim // 2
    freqs = position / theta ** (np.arange(half, dtype=np.float32) * 2 / head_dim)
    cos, sin = np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)

    def rope(t: np.ndarray) -> np.ndarray:
        t1, t2 = t[..., :half], t[..., half:]
        return np.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)

    q, k = rope(q), rope(k)
    keys, values = past_k.copy(), past_v.copy()
    keys[:, :, position] = k
    values[:, :, position] = v
    group = heads // kv_heads
    qg = q.reshape(b, kv_heads, group, head_dim)
    s = np.einsum("bkgd,bkmd->bkgm", qg, keys[:, :, : position + 1]) / math.sqrt(head_dim)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    attn = np.einsum("bkgm,bkmd->bkgd", s, values[:, :, : position + 1]).reshape(b, -1)
    x = x + attn @ w[p + "self_attn.o_proj.weight"].T
    xn = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
    g = xn @ w[p + "mlp.gate_proj.weight"].T
    u = xn @ w[p + "mlp.up_proj.weight"].T
    x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    return x, keys, values


def baseline_step(
    w: Mapping[str, np.ndarray],
    inputs: Mapping[str, np.ndarray],
    position: int,
    *,
    heads: int,
    kv_heads: int,
    head_dim: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`decode_layer` 0 on a generated program's decode inputs (``hidden_states``,
    ``past_key.0``, ``past_value.0``), as the benchmarks run it."""
    return decode_layer(
        w,
        inputs["hidden_states"],
        inputs["past_key.0"],
        inputs["past_value.0"],
        position,
        layer=0,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
    )
