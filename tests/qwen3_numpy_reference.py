"""Independent plain-numpy reference for one Qwen3 decode step (decoder layers only).

Follows Hugging Face transformers ``models/qwen3/modeling_qwen3.py``: pre-norm decoder layers
with per-head q/k RMSNorm, rotate-half RoPE, grouped-query attention over a fixed-size KV
cache and a SwiGLU MLP.  The final model norm, embedding and LM head are not included.

All arithmetic is done in float64; results are returned as float32.  This module deliberately
imports nothing from the project so it can serve as ground truth for the compiler's tests.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "apply_rope",
    "layer_weight_names",
    "qwen3_decode",
    "random_qwen3_inputs",
    "random_qwen3_weights",
    "rms_norm",
    "rope_cos_sin",
    "rotate_half",
    "silu",
]

_LAYER_WEIGHTS: tuple[str, ...] = (
    "input_layernorm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)


def layer_weight_names(layer: int) -> list[str]:
    """Return the Hugging Face checkpoint names of every weight of decoder layer ``layer``."""
    return [f"model.layers.{layer}.{suffix}" for suffix in _LAYER_WEIGHTS]


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Return ``x / sqrt(mean(x**2, last axis) + eps) * weight``, computed in float64."""
    x = np.asarray(x, dtype=np.float64)
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(variance + eps) * np.asarray(weight, dtype=np.float64)


def silu(z: np.ndarray) -> np.ndarray:
    """Return ``z * sigmoid(z)`` elementwise, in float64, without overflow for large ``|z|``."""
    z = np.asarray(z, dtype=np.float64)
    # sigmoid(z) = 0.5 * (1 + tanh(z / 2)) is exact and never overflows.
    return z * (0.5 * (1.0 + np.tanh(0.5 * z)))


def rope_cos_sin(
    positions: np.ndarray | int, head_dim: int, theta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return rotate-half RoPE ``(cos, sin)`` tables of shape ``positions.shape + (head_dim,)``."""
    if head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even for RoPE, got {head_dim}")
    pos = np.asarray(positions, dtype=np.float64)
    exponents = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
    inv_freq = 1.0 / (float(theta) ** exponents)
    freqs = pos[..., None] * inv_freq
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)


def rotate_half(t: np.ndarray) -> np.ndarray:
    """Return ``concat(-t[..., half:], t[..., :half])`` along the last axis."""
    half = t.shape[-1] // 2
    return np.concatenate([-t[..., half:], t[..., :half]], axis=-1)


def apply_rope(t: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Return ``t * cos + rotate_half(t) * sin`` (cos/sin broadcast against ``t``)."""
    return t * cos + rotate_half(t) * sin


def _f64(arrays: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name not in arrays:
        raise KeyError(f"missing array {name!r}")
    return np.asarray(arrays[name], dtype=np.float64)


def _position(value: np.ndarray | int) -> int:
    arr = np.asarray(value)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"position must be an integer scalar, got {value!r}")
    return int(arr)


def qwen3_decode(
    weights: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    *,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    eps: float = 1e-6,
    theta: float = 1_000_000.0,
) -> dict[str, np.ndarray]:
    """Return Qwen3's decoder-layer outputs for one token at ``inputs["position"]``, as float32.

    ``inputs`` holds ``hidden_states`` [B, hidden], ``position`` (integer scalar p) and, per
    layer i, ``past_key.{i}`` / ``past_value.{i}`` [B, kv_heads, M, head_dim] with p < M.
    ``weights`` uses Hugging Face checkpoint names (see :func:`layer_weight_names`), each
    projection laid out [out_features, in_features].  The result holds ``hidden_states``
    [B, hidden] after the last layer (no final norm) and ``present_key.{i}`` /
    ``present_value.{i}``: copies of the past caches with position p overwritten by this
    token's key (after k_norm and RoPE) and value.  Cache positions > p never affect the
    result.
    """
    if heads % kv_heads != 0:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    group = heads // kv_heads
    p = _position(inputs["position"])
    x = _f64(inputs, "hidden_states")
    if x.ndim != 2:
        raise ValueError(f"hidden_states must be [B, hidden], got shape {x.shape}")
    batch = x.shape[0]

    cos, sin = rope_cos_sin(p, head_dim, theta)  # [head_dim]
    scale = 1.0 / np.sqrt(float(head_dim))
    out: dict[str, np.ndarray] = {}

    for i in range(layers):
        w = {s: _f64(weights, f"model.layers.{i}.{s}") for s in _LAYER_WEIGHTS}
        past_k = _f64(inputs, f"past_key.{i}")
        past_v = _f64(inputs, f"past_value.{i}")
        max_pos = past_k.shape[2]
        expected = (batch, kv_heads, max_pos, head_dim)
        if past_k.shape != expected or past_v.shape != expected:
            raise ValueError(
                f"layer {i}: caches must be {expected}, got {past_k.shape} / {past_v.shape}"
            )
        if not 0 <= p < max_pos:
            raise ValueError(f"position {p} outside cache of {max_pos} positions")

        # --- self attention ---
        residual = x
        xn = rms_norm(x, w["input_layernorm.weight"], eps)
        q = (xn @ w["self_attn.q_proj.weight"].T).reshape(batch, heads, head_dim)
        k = (xn @ w["self_attn.k_proj.weight"].T).reshape(batch, kv_heads, head_dim)
        v = (xn @ w["self_attn.v_proj.weight"].T).reshape(batch, kv_heads, head_dim)
        q = rms_norm(q, w["self_attn.q_norm.weight"], eps)
        k = rms_norm(k, w["self_attn.k_norm.weight"], eps)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)

        present_k = past_k.copy()
        present_v = past_v.copy()
        present_k[:, :, p, :] = k
        present_v[:, :, p, :] = v

        keys = present_k[:, :, : p + 1, :]  # [B, kv_heads, p+1, D]; later positions masked
        values = present_v[:, :, : p + 1, :]
        attn = np.empty((batch, heads, head_dim), dtype=np.float64)
        for j in range(heads):
            kv = j // group
            scores = np.einsum("bd,btd->bt", q[:, j, :], keys[:, kv, :, :]) * scale
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs = probs / probs.sum(axis=-1, keepdims=True)
            attn[:, j, :] = np.einsum("bt,btd->bd", probs, values[:, kv, :, :])
        x = residual + attn.reshape(batch, heads * head_dim) @ w["self_attn.o_proj.weight"].T

        # --- MLP ---
        xn = rms_norm(x, w["post_attention_layernorm.weight"], eps)
        gate = silu(xn @ w["mlp.gate_proj.weight"].T)
        up = xn @ w["mlp.up_proj.weight"].T
        x = x + (gate * up) @ w["mlp.down_proj.weight"].T

        out[f"present_key.{i}"] = present_k.astype(np.float32)
        out[f"present_value.{i}"] = present_v.astype(np.float32)

    out["hidden_states"] = x.astype(np.float32)
    return out


def random_qwen3_weights(
    rng: np.random.Generator,
    *,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    scale: float = 1.0,
) -> dict[str, np.ndarray]:
    """Return random float32 Qwen3 decoder-layer weights under Hugging Face names.

    Norm weights are ``1 + 0.1 * N(0, 1)``; each projection is ``N(0, 1) * scale /
    sqrt(in_features)`` so activations stay O(1) for ``scale`` around 1.
    """

    def proj(out_features: int, in_features: int) -> np.ndarray:
        std = scale / np.sqrt(in_features)
        return (rng.standard_normal((out_features, in_features)) * std).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    weights: dict[str, np.ndarray] = {}
    for i in range(layers):
        pre = f"model.layers.{i}."
        weights[pre + "input_layernorm.weight"] = norm(hidden)
        weights[pre + "self_attn.q_proj.weight"] = proj(heads * head_dim, hidden)
        weights[pre + "self_attn.k_proj.weight"] = proj(kv_heads * head_dim, hidden)
        weights[pre + "self_attn.v_proj.weight"] = proj(kv_heads * head_dim, hidden)
        weights[pre + "self_attn.o_proj.weight"] = proj(hidden, heads * head_dim)
        weights[pre + "self_attn.q_norm.weight"] = norm(head_dim)
        weights[pre + "self_attn.k_norm.weight"] = norm(head_dim)
        weights[pre + "post_attention_layernorm.weight"] = norm(hidden)
        weights[pre + "mlp.gate_proj.weight"] = proj(intermediate, hidden)
        weights[pre + "mlp.up_proj.weight"] = proj(intermediate, hidden)
        weights[pre + "mlp.down_proj.weight"] = proj(hidden, intermediate)
    return weights


def random_qwen3_inputs(
    rng: np.random.Generator,
    *,
    layers: int,
    batch: int,
    hidden: int,
    kv_heads: int,
    head_dim: int,
    max_positions: int,
    position: int,
) -> dict[str, np.ndarray]:
    """Return random float32 decode inputs at ``position``, caches filled only below it.

    ``hidden_states`` and cache entries at positions < ``position`` are N(0, 1); cache entries
    at positions >= ``position`` are zero; ``position`` is a 0-d int64 array.
    """
    if not 0 <= position < max_positions:
        raise ValueError(f"position {position} outside [0, {max_positions})")
    inputs: dict[str, np.ndarray] = {
        "hidden_states": rng.standard_normal((batch, hidden)).astype(np.float32),
        "position": np.array(position, dtype=np.int64),
    }
    shape = (batch, kv_heads, max_positions, head_dim)
    for i in range(layers):
        for name in (f"past_key.{i}", f"past_value.{i}"):
            cache = np.zeros(shape, dtype=np.float32)
            cache[:, :, :position, :] = rng.standard_normal(
                (batch, kv_heads, position, head_dim)
            ).astype(np.float32)
            inputs[name] = cache
    return inputs
