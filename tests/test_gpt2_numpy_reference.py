"""Tests for the plain-numpy GPT-2 decode reference in ``gpt2_numpy_reference``.

The main check compares token-by-token decoding against a separate full-sequence causal
implementation written below the way Hugging Face's ``GPT2Attention`` is (no cache, an
explicit causal mask, heads split by ``view`` + ``transpose``), so the reference is trusted
for its own reasons before the generated program is compared with it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gpt2_numpy_reference import (
    gelu_new,
    gpt2_decode,
    layer_norm,
    random_gpt2_inputs,
    random_gpt2_weights,
)

LAYERS, BATCH, HIDDEN, HEADS, INTERMEDIATE, MAX_POS = 2, 2, 32, 4, 80, 8


def _weights(seed: int) -> dict[str, np.ndarray]:
    return random_gpt2_weights(
        np.random.default_rng(seed), layers=LAYERS, hidden=HIDDEN, intermediate=INTERMEDIATE
    )


def _inputs(seed: int, position: int) -> dict[str, np.ndarray]:
    return random_gpt2_inputs(
        np.random.default_rng(seed),
        layers=LAYERS,
        batch=BATCH,
        hidden=HIDDEN,
        heads=HEADS,
        max_positions=MAX_POS,
        position=position,
    )


def _decode(weights: dict[str, np.ndarray], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return gpt2_decode(weights, inputs, layers=LAYERS, heads=HEADS)


def _prefill(
    weights: dict[str, np.ndarray], tokens: np.ndarray
) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """All blocks over ``tokens`` [B, T, hidden] at positions 0..T-1 at once: the hidden
    states after the last block and, per block, keys and values [B, heads, T, head_dim]."""
    x = tokens.astype(np.float64)
    bsz, seq, hid = x.shape
    hd = hid // HEADS

    def ln(v: np.ndarray, pre: str) -> np.ndarray:
        mu = v.sum(-1, keepdims=True) / hid
        sigma2 = np.square(v - mu).sum(-1, keepdims=True) / hid
        return (v - mu) * (1.0 / np.sqrt(sigma2 + 1e-5)) * weights[pre + ".weight"] + weights[
            pre + ".bias"
        ]

    def conv1d(v: np.ndarray, pre: str) -> np.ndarray:
        return (
            np.einsum("...i,io->...o", v, weights[pre + ".weight"].astype(np.float64))
            + (weights[pre + ".bias"])
        )

    def heads(t: np.ndarray) -> np.ndarray:  # [B, T, hidden] -> [B, heads, T, hd]
        return t.reshape(bsz, seq, HEADS, hd).transpose(0, 2, 1, 3)

    causal = np.tril(np.ones((seq, seq), dtype=bool))
    keys: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for i in range(LAYERS):
        pre = f"h.{i}."
        qkv = conv1d(ln(x, pre + "ln_1"), pre + "attn.c_attn")
        q, k, v = (heads(qkv[..., j * hid : (j + 1) * hid]) for j in range(3))
        keys.append(k)
        values.append(v)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        scores = np.where(causal, scores, -np.inf)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(bsz, seq, hid)
        x = x + conv1d(ctx, pre + "attn.c_proj")
        hfc = conv1d(ln(x, pre + "ln_2"), pre + "mlp.c_fc")
        act = 0.5 * hfc * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (hfc + 0.044715 * hfc**3)))
        x = x + conv1d(act, pre + "mlp.c_proj")
    return x, keys, values


@pytest.mark.parametrize("steps", [5, MAX_POS])
def test_token_by_token_decode_matches_causal_prefill(steps: int) -> None:
    weights = _weights(seed=1)
    tokens = np.random.default_rng(2).standard_normal((BATCH, steps, HIDDEN)).astype(np.float32)
    want_hidden, want_keys, want_values = _prefill(weights, tokens)

    state = _inputs(seed=3, position=0)  # empty (all-zero) caches
    for t in range(steps):
        state["hidden_states"] = tokens[:, t, :]
        state["position"] = np.array(t, dtype=np.int64)
        out = _decode(weights, state)
        np.testing.assert_allclose(out["hidden_states"], want_hidden[:, t, :], rtol=1e-5, atol=1e-5)
        for i in range(LAYERS):
            state[f"past_key.{i}"] = out[f"present_key.{i}"]
            state[f"past_value.{i}"] = out[f"present_value.{i}"]

    for i in range(LAYERS):
        for name, want in ((f"past_key.{i}", want_keys[i]), (f"past_value.{i}", want_values[i])):
            np.testing.assert_allclose(state[name][:, :, :steps, :], want, rtol=1e-5, atol=1e-5)
            assert not state[name][:, :, steps:, :].any(), f"{name} written beyond position"


@pytest.mark.parametrize("position", [0, 3, MAX_POS - 1])
def test_only_positions_up_to_p_matter_and_only_p_is_written(position: int) -> None:
    weights = _weights(seed=4)
    inputs = _inputs(seed=5, position=position)
    perturbed = {k: v.copy() for k, v in inputs.items()}
    rng = np.random.default_rng(6)
    for i in range(LAYERS):
        for name in (f"past_key.{i}", f"past_value.{i}"):
            perturbed[name][:, :, position:, :] = 5.0 * rng.standard_normal(
                perturbed[name][:, :, position:, :].shape
            )
    a, b = _decode(weights, inputs), _decode(weights, perturbed)
    np.testing.assert_array_equal(a["hidden_states"], b["hidden_states"])
    others = [m for m in range(MAX_POS) if m != position]
    for i in range(LAYERS):
        for kind in ("key", "value"):
            name = f"present_{kind}.{i}"
            np.testing.assert_array_equal(a[name][:, :, position], b[name][:, :, position])
            np.testing.assert_array_equal(
                b[name][:, :, others], perturbed[f"past_{kind}.{i}"][:, :, others]
            )


def test_position_zero_attends_to_its_own_value_only() -> None:
    """At position 0 the softmax has one entry: the attention output is this token's v."""
    weights = {k: v.astype(np.float64) for k, v in _weights(seed=7).items()}
    inputs = _inputs(seed=8, position=0)
    out = gpt2_decode(weights, inputs, layers=1, heads=HEADS)
    x = inputs["hidden_states"].astype(np.float64)
    h = layer_norm(x, weights["h.0.ln_1.weight"], weights["h.0.ln_1.bias"], 1e-5)
    qkv = h @ weights["h.0.attn.c_attn.weight"] + weights["h.0.attn.c_attn.bias"]
    v = qkv[:, 2 * HIDDEN :]
    x = x + v @ weights["h.0.attn.c_proj.weight"] + weights["h.0.attn.c_proj.bias"]
    h = layer_norm(x, weights["h.0.ln_2.weight"], weights["h.0.ln_2.bias"], 1e-5)
    fc = h @ weights["h.0.mlp.c_fc.weight"] + weights["h.0.mlp.c_fc.bias"]
    x = x + gelu_new(fc) @ weights["h.0.mlp.c_proj.weight"] + weights["h.0.mlp.c_proj.bias"]
    np.testing.assert_allclose(out["hidden_states"], x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        out["present_value.0"][:, :, 0].reshape(BATCH, HIDDEN), v, rtol=1e-6, atol=1e-6
    )


def test_layer_norm_and_gelu_values() -> None:
    x = np.array([[1.0, 2.0, 3.0, 6.0]])
    y = layer_norm(x, np.ones(4), np.zeros(4), 0.0)
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1.0, rtol=1e-12)  # biased variance
    np.testing.assert_allclose(layer_norm(x, 2 * np.ones(4), np.ones(4), 0.0), 2 * y + 1)
    # GELU (tanh) at known points: 0 -> 0, 1 -> 0.841192, -1 -> -0.158808, large x -> x.
    np.testing.assert_allclose(
        gelu_new(np.array([0.0, 1.0, -1.0, 10.0])),
        [0.0, 0.8411919906082768, -0.15880800939172324, 10.0],
        rtol=1e-12,
        atol=1e-12,
    )


def test_refuses_bad_positions_and_heads() -> None:
    weights = _weights(seed=9)
    inputs = _inputs(seed=10, position=0)
    inputs["position"] = np.array(MAX_POS, dtype=np.int64)
    with pytest.raises(ValueError, match="position"):
        _decode(weights, inputs)
    with pytest.raises(ValueError, match="must divide"):
        gpt2_decode(weights, _inputs(seed=10, position=0), layers=LAYERS, heads=5)
