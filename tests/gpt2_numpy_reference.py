"""Independent plain-numpy reference for one GPT-2 decode step (transformer blocks only).

Follows Hugging Face transformers ``models/gpt2/modeling_gpt2.py`` (``GPT2Model``): pre-norm
blocks of LayerNorm, multi-head attention whose q/k/v come from one ``Conv1D`` (``c_attn``,
weight laid out [in_features, out_features], ``y = x @ W + b``, q, k, v side by side in that
order), ``c_proj``, and an MLP ``c_fc`` -> GELU (tanh approximation, ``gelu_new``) ->
``c_proj``, each sub-block added to the residual stream. Positions are already in the
hidden state (no RoPE); the final ``ln_f``, embeddings and LM head are not included.

All arithmetic is done in float64; results are returned as float32.  This module deliberately
imports nothing from the project so it can serve as ground truth for the compiler's tests.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "gelu_new",
    "gpt2_decode",
    "layer_norm",
    "layer_weight_names",
    "random_gpt2_inputs",
    "random_gpt2_weights",
]

_LAYER_WEIGHTS: tuple[str, ...] = (
    "ln_1.weight",
    "ln_1.bias",
    "attn.c_attn.weight",
    "attn.c_attn.bias",
    "attn.c_proj.weight",
    "attn.c_proj.bias",
    "ln_2.weight",
    "ln_2.bias",
    "mlp.c_fc.weight",
    "mlp.c_fc.bias",
    "mlp.c_proj.weight",
    "mlp.c_proj.bias",
)


def layer_weight_names(layer: int) -> list[str]:
    """Return the Hugging Face ``GPT2Model`` names of every weight of block ``layer``."""
    return [f"h.{layer}.{suffix}" for suffix in _LAYER_WEIGHTS]


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Return ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis, with the
    biased (population) variance as torch.nn.LayerNorm uses, computed in float64."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normed = (x - mean) / np.sqrt(var + eps)
    return normed * np.asarray(weight, dtype=np.float64) + np.asarray(bias, dtype=np.float64)


def gelu_new(x: np.ndarray) -> np.ndarray:
    """Return GELU's tanh approximation ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _f64(arrays: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name not in arrays:
        raise KeyError(f"missing array {name!r}")
    return np.asarray(arrays[name], dtype=np.float64)


def _position(value: np.ndarray | int) -> int:
    arr = np.asarray(value)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"position must be an integer scalar, got {value!r}")
    return int(arr)


def gpt2_decode(
    weights: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    *,
    layers: int,
    heads: int,
    eps: float = 1e-5,
) -> dict[str, np.ndarray]:
    """Return GPT-2's block outputs for one token at ``inputs["position"]``, as float32.

    ``inputs`` holds ``hidden_states`` [B, hidden] (token plus position embedding, as it
    enters block 0), ``position`` (integer scalar p) and, per block i, ``past_key.{i}`` /
    ``past_value.{i}`` [B, heads, M, hidden / heads] with p < M. ``weights`` uses Hugging
    Face ``GPT2Model`` names (see :func:`layer_weight_names`), Conv1D weights laid out
    [in_features, out_features]. The result holds ``hidden_states`` [B, hidden] after the
    last block (before ``ln_f``) and ``present_key.{i}`` / ``present_value.{i}``: copies of
    the past caches with position p overwritten by this token's key and value. Cache
    positions > p never affect the result.
    """
    p = _position(inputs["position"])
    x = _f64(inputs, "hidden_states")
    if x.ndim != 2:
        raise ValueError(f"hidden_states must be [B, hidden], got shape {x.shape}")
    batch, hidden = x.shape
    if hidden % heads != 0:
        raise ValueError(f"heads ({heads}) must divide hidden ({hidden})")
    head_dim = hidden // heads
    scale = 1.0 / math.sqrt(head_dim)
    out: dict[str, np.ndarray] = {}

    for i in range(layers):
        w = {s: _f64(weights, f"h.{i}.{s}") for s in _LAYER_WEIGHTS}
        past_k = _f64(inputs, f"past_key.{i}")
        past_v = _f64(inputs, f"past_value.{i}")
        max_pos = past_k.shape[2]
        expected = (batch, heads, max_pos, head_dim)
        if past_k.shape != expected or past_v.shape != expected:
            raise ValueError(
                f"layer {i}: caches must be {expected}, got {past_k.shape} / {past_v.shape}"
            )
        if not 0 <= p < max_pos:
            raise ValueError(f"position {p} outside cache of {max_pos} positions")

        # --- attention ---
        h = layer_norm(x, w["ln_1.weight"], w["ln_1.bias"], eps)
        qkv = h @ w["attn.c_attn.weight"] + w["attn.c_attn.bias"]  # [B, 3*hidden]
        q, k, v = np.split(qkv, 3, axis=-1)
        q = q.reshape(batch, heads, head_dim)
        k = k.reshape(batch, heads, head_dim)
        v = v.reshape(batch, heads, head_dim)

        present_k = past_k.copy()
        present_v = past_v.copy()
        present_k[:, :, p, :] = k
        present_v[:, :, p, :] = v

        keys = present_k[:, :, : p + 1, :]  # [B, H, p+1, D]; later positions are masked
        values = present_v[:, :, : p + 1, :]
        scores = np.einsum("bhd,bhtd->bht", q, keys) * scale
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        ctx = np.einsum("bht,bhtd->bhd", probs, values).reshape(batch, hidden)
        x = x + ctx @ w["attn.c_proj.weight"] + w["attn.c_proj.bias"]

        # --- MLP ---
        h = layer_norm(x, w["ln_2.weight"], w["ln_2.bias"], eps)
        a = gelu_new(h @ w["mlp.c_fc.weight"] + w["mlp.c_fc.bias"])
        x = x + a @ w["mlp.c_proj.weight"] + w["mlp.c_proj.bias"]

        out[f"present_key.{i}"] = present_k.astype(np.float32)
        out[f"present_value.{i}"] = present_v.astype(np.float32)

    out["hidden_states"] = x.astype(np.float32)
    return out


def random_gpt2_weights(
    rng: np.random.Generator,
    *,
    layers: int,
    hidden: int,
    intermediate: int,
    scale: float = 1.0,
) -> dict[str, np.ndarray]:
    """Return random float32 GPT-2 block weights under Hugging Face ``GPT2Model`` names.

    LayerNorm weights are ``1 + 0.1 * N(0, 1)``, every bias ``0.1 * N(0, 1)``; each Conv1D
    weight [in, out] is ``N(0, 1) * scale / sqrt(in)`` so activations stay O(1).
    """

    def conv1d(in_features: int, out_features: int) -> np.ndarray:
        std = scale / np.sqrt(in_features)
        return (rng.standard_normal((in_features, out_features)) * std).astype(np.float32)

    def gain(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    weights: dict[str, np.ndarray] = {}
    for i in range(layers):
        pre = f"h.{i}."
        weights[pre + "ln_1.weight"] = gain(hidden)
        weights[pre + "ln_1.bias"] = bias(hidden)
        weights[pre + "attn.c_attn.weight"] = conv1d(hidden, 3 * hidden)
        weights[pre + "attn.c_attn.bias"] = bias(3 * hidden)
        weights[pre + "attn.c_proj.weight"] = conv1d(hidden, hidden)
        weights[pre + "attn.c_proj.bias"] = bias(hidden)
        weights[pre + "ln_2.weight"] = gain(hidden)
        weights[pre + "ln_2.bias"] = bias(hidden)
        weights[pre + "mlp.c_fc.weight"] = conv1d(hidden, intermediate)
        weights[pre + "mlp.c_fc.bias"] = bias(intermediate)
        weights[pre + "mlp.c_proj.weight"] = conv1d(intermediate, hidden)
        weights[pre + "mlp.c_proj.bias"] = bias(hidden)
    return weights


def random_gpt2_inputs(
    rng: np.random.Generator,
    *,
    layers: int,
    batch: int,
    hidden: int,
    heads: int,
    max_positions: int,
    position: int,
) -> dict[str, np.ndarray]:
    """Return random float32 decode inputs at ``position``, caches filled only below it.

    ``hidden_states`` and cache entries at positions < ``position`` are N(0, 1); cache entries
    at positions >= ``position`` are zero; ``position`` is a 0-d int64 array.
    """
    if not 0 <= position < max_positions:
        raise ValueError(f"position {position} outside [0, {max_positions})")
    head_dim = hidden // heads
    inputs: dict[str, np.ndarray] = {
        "hidden_states": rng.standard_normal((batch, hidden)).astype(np.float32),
        "position": np.array(position, dtype=np.int64),
    }
    for i in range(layers):
        for name in (f"past_key.{i}", f"past_value.{i}"):
            cache = np.zeros((batch, heads, max_positions, head_dim), dtype=np.float32)
            cache[:, :, :position, :] = rng.standard_normal(
                (batch, heads, position, head_dim)
            ).astype(np.float32)
            inputs[name] = cache
    return inputs
