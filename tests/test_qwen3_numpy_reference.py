"""Tests for the plain-numpy Qwen3 decode reference in ``qwen3_numpy_reference``.

The main check compares token-by-token decoding against a separate, straightforward
full-sequence causal implementation written below (no cache, explicit causal mask).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from qwen3_numpy_reference import qwen3_decode, random_qwen3_inputs, random_qwen3_weights


@dataclass(frozen=True)
class Config:
    """A small Qwen3 shape used by the tests."""

    layers: int
    batch: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    max_positions: int
    eps: float = 1e-6
    theta: float = 1_000_000.0


GQA = Config(
    layers=2, batch=2, hidden=32, heads=4, kv_heads=2, head_dim=8, intermediate=48, max_positions=8
)
MHA = Config(
    layers=1,
    batch=1,
    hidden=24,
    heads=2,
    kv_heads=2,
    head_dim=16,
    intermediate=40,
    max_positions=5,
    eps=0.1,  # large enough that where eps enters RMSNorm is visible
    theta=10_000.0,
)
MQA = Config(
    layers=2, batch=2, hidden=16, heads=4, kv_heads=1, head_dim=4, intermediate=24, max_positions=6
)


def _weights(cfg: Config, seed: int) -> dict[str, np.ndarray]:
    return random_qwen3_weights(
        np.random.default_rng(seed),
        layers=cfg.layers,
        hidden=cfg.hidden,
        heads=cfg.heads,
        kv_heads=cfg.kv_heads,
        head_dim=cfg.head_dim,
        intermediate=cfg.intermediate,
    )


def _inputs(cfg: Config, seed: int, position: int) -> dict[str, np.ndarray]:
    return random_qwen3_inputs(
        np.random.default_rng(seed),
        layers=cfg.layers,
        batch=cfg.batch,
        hidden=cfg.hidden,
        kv_heads=cfg.kv_heads,
        head_dim=cfg.head_dim,
        max_positions=cfg.max_positions,
        position=position,
    )


def _decode(
    cfg: Config, weights: dict[str, np.ndarray], inputs: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    return qwen3_decode(
        weights,
        inputs,
        layers=cfg.layers,
        heads=cfg.heads,
        kv_heads=cfg.kv_heads,
        head_dim=cfg.head_dim,
        eps=cfg.eps,
        theta=cfg.theta,
    )


def _fill_all_positions(cfg: Config, inputs: dict[str, np.ndarray], seed: int) -> None:
    """Overwrite every cache in ``inputs`` with random values at every position."""
    rng = np.random.default_rng(seed)
    for i in range(cfg.layers):
        for name in (f"past_key.{i}", f"past_value.{i}"):
            inputs[name] = rng.standard_normal(inputs[name].shape).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Independent full-sequence causal implementation (the prefill oracle).
# --------------------------------------------------------------------------------------------


def _prefill(
    cfg: Config, weights: dict[str, np.ndarray], tokens: np.ndarray
) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Run all decoder layers over ``tokens`` [B, T, hidden] at positions 0..T-1 at once.

    Returns the hidden states [B, T, hidden] after the last layer and, per layer, the
    keys (after k_norm and RoPE) and values [B, kv_heads, T, head_dim].
    """
    x = tokens.astype(np.float64)
    bsz, seq, _ = x.shape
    nh, nkv, hd = cfg.heads, cfg.kv_heads, cfg.head_dim
    n_rep = nh // nkv

    def norm(v: np.ndarray, w: np.ndarray) -> np.ndarray:
        ms = (v**2).mean(axis=-1, keepdims=True)
        return w.astype(np.float64) * (v * (1.0 / np.sqrt(ms + cfg.eps)))

    def lin(v: np.ndarray, name: str) -> np.ndarray:
        return np.einsum("...i,oi->...o", v, weights[name].astype(np.float64))

    inv_freq = np.array([cfg.theta ** (-(2.0 * j) / hd) for j in range(hd // 2)])
    angles = np.outer(np.arange(seq, dtype=np.float64), inv_freq)  # [T, hd/2]
    cos_h, sin_h = np.cos(angles), np.sin(angles)

    def rope(t: np.ndarray) -> np.ndarray:
        # t: [B, H, T, hd]; pairs element j with element j + hd/2.
        a, b = t[..., : hd // 2], t[..., hd // 2 :]
        return np.concatenate([a * cos_h - b * sin_h, b * cos_h + a * sin_h], axis=-1)

    causal = np.tril(np.ones((seq, seq), dtype=bool))
    keys: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for i in range(cfg.layers):
        pre = f"model.layers.{i}."
        h = norm(x, weights[pre + "input_layernorm.weight"])
        q = lin(h, pre + "self_attn.q_proj.weight").reshape(bsz, seq, nh, hd).transpose(0, 2, 1, 3)
        k = lin(h, pre + "self_attn.k_proj.weight").reshape(bsz, seq, nkv, hd).transpose(0, 2, 1, 3)
        v = lin(h, pre + "self_attn.v_proj.weight").reshape(bsz, seq, nkv, hd).transpose(0, 2, 1, 3)
        q = rope(norm(q, weights[pre + "self_attn.q_norm.weight"]))
        k = rope(norm(k, weights[pre + "self_attn.k_norm.weight"]))
        keys.append(k)
        values.append(v)
        k_rep = np.repeat(k, n_rep, axis=1)  # head j -> kv head j // n_rep
        v_rep = np.repeat(v, n_rep, axis=1)
        scores = q @ k_rep.transpose(0, 1, 3, 2) / np.sqrt(hd)  # [B, H, T, T]
        scores = np.where(causal, scores, -np.inf)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        ctx = (probs @ v_rep).transpose(0, 2, 1, 3).reshape(bsz, seq, nh * hd)
        x = x + lin(ctx, pre + "self_attn.o_proj.weight")
        h = norm(x, weights[pre + "post_attention_layernorm.weight"])
        gate = lin(h, pre + "mlp.gate_proj.weight")
        act = gate / (1.0 + np.exp(-gate))
        x = x + lin(act * lin(h, pre + "mlp.up_proj.weight"), pre + "mlp.down_proj.weight")
    return x, keys, values


@pytest.mark.parametrize(
    ("cfg", "steps"),
    [(GQA, 5), (GQA, 8), (MHA, 5), (MQA, 4)],
    ids=["gqa-5", "gqa-full-cache", "mha-full-cache", "mqa-4"],
)
def test_token_by_token_decode_matches_causal_prefill(cfg: Config, steps: int) -> None:
    weights = _weights(cfg, seed=1)
    tokens = np.random.default_rng(2).standard_normal((cfg.batch, steps, cfg.hidden))
    tokens = tokens.astype(np.float32)
    want_hidden, want_keys, want_values = _prefill(cfg, weights, tokens)

    state = _inputs(cfg, seed=3, position=0)  # empty (all-zero) caches
    for t in range(steps):
        state["hidden_states"] = tokens[:, t, :]
        state["position"] = np.array(t, dtype=np.int64)
        out = _decode(cfg, weights, state)
        np.testing.assert_allclose(out["hidden_states"], want_hidden[:, t, :], rtol=1e-5, atol=1e-5)
        for i in range(cfg.layers):
            state[f"past_key.{i}"] = out[f"present_key.{i}"]
            state[f"past_value.{i}"] = out[f"present_value.{i}"]

    for i in range(cfg.layers):
        for name, want in ((f"past_key.{i}", want_keys[i]), (f"past_value.{i}", want_values[i])):
            np.testing.assert_allclose(state[name][:, :, :steps, :], want, rtol=1e-5, atol=1e-5)
            assert not state[name][:, :, steps:, :].any(), f"{name} written beyond position"


def test_prefill_oracle_is_causal() -> None:
    """The oracle itself must not let later tokens influence earlier ones."""
    cfg = GQA
    weights = _weights(cfg, seed=4)
    tokens = np.random.default_rng(5).standard_normal((cfg.batch, 4, cfg.hidden))
    changed = tokens.copy()
    changed[:, 3, :] += 1.0
    a, _, _ = _prefill(cfg, weights, tokens)
    b, _, _ = _prefill(cfg, weights, changed)
    np.testing.assert_array_equal(a[:, :3, :], b[:, :3, :])
    assert not np.allclose(a[:, 3, :], b[:, 3, :])


# --------------------------------------------------------------------------------------------
# Cache update, position 0, masking.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("position", [0, 3, GQA.max_positions - 1])
def test_cache_written_only_at_position(position: int) -> None:
    cfg = GQA
    weights = _weights(cfg, seed=6)
    inputs = _inputs(cfg, seed=7, position=position)
    _fill_all_positions(cfg, inputs, seed=8)
    out = _decode(cfg, weights, inputs)
    others = [m for m in range(cfg.max_positions) if m != position]
    for i in range(cfg.layers):
        for kind in ("key", "value"):
            past = inputs[f"past_{kind}.{i}"]
            present = out[f"present_{kind}.{i}"]
            np.testing.assert_array_equal(present[:, :, others, :], past[:, :, others, :])
            assert not np.allclose(present[:, :, position, :], past[:, :, position, :])


def test_position_zero_ignores_cache_and_stores_unrotated_key() -> None:
    cfg = GQA
    weights = _weights(cfg, seed=9)
    empty = _inputs(cfg, seed=10, position=0)
    full = {k: v.copy() for k, v in empty.items()}
    _fill_all_positions(cfg, full, seed=11)
    out_empty = _decode(cfg, weights, empty)
    out_full = _decode(cfg, weights, full)
    np.testing.assert_array_equal(out_empty["hidden_states"], out_full["hidden_states"])
    assert np.isfinite(out_empty["hidden_states"]).all()

    # At position 0 RoPE is the identity: layer 0's stored key is k_norm(k_proj(norm(x))).
    x = empty["hidden_states"].astype(np.float64)
    pre = "model.layers.0."
    xn = x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.eps)
    xn = xn * weights[pre + "input_layernorm.weight"]
    k = (xn @ weights[pre + "self_attn.k_proj.weight"].T.astype(np.float64)).reshape(
        cfg.batch, cfg.kv_heads, cfg.head_dim
    )
    k = k / np.sqrt((k * k).mean(-1, keepdims=True) + cfg.eps)
    k = k * weights[pre + "self_attn.k_norm.weight"]
    np.testing.assert_allclose(out_empty["present_key.0"][:, :, 0, :], k, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("position", [0, 2, 5])
def test_positions_after_p_are_masked(position: int) -> None:
    cfg = GQA
    weights = _weights(cfg, seed=12)
    inputs = _inputs(cfg, seed=13, position=position)
    perturbed = {k: v.copy() for k, v in inputs.items()}
    rng = np.random.default_rng(14)
    for i in range(cfg.layers):
        for name in (f"past_key.{i}", f"past_value.{i}"):
            perturbed[name][:, :, position + 1 :, :] = 5.0 * rng.standard_normal(
                perturbed[name][:, :, position + 1 :, :].shape
            )
    a = _decode(cfg, weights, inputs)
    b = _decode(cfg, weights, perturbed)
    np.testing.assert_array_equal(a["hidden_states"], b["hidden_states"])
    for i in range(cfg.layers):
        # Same token, same earlier cache: the written entry at p must agree too.
        np.testing.assert_array_equal(
            a[f"present_key.{i}"][:, :, : position + 1], b[f"present_key.{i}"][:, :, : position + 1]
        )


def test_positions_before_p_are_attended() -> None:
    """Sensitivity counterpart of the masking test: earlier entries do change the output."""
    cfg = GQA
    position = 4
    weights = _weights(cfg, seed=15)
    inputs = _inputs(cfg, seed=16, position=position)
    base = _decode(cfg, weights, inputs)["hidden_states"]
    for m in range(position):
        for kind in ("key", "value"):
            changed = {k: v.copy() for k, v in inputs.items()}
            changed[f"past_{kind}.0"][:, :, m, :] += 1.0
            out = _decode(cfg, weights, changed)["hidden_states"]
            assert not np.allclose(out, base, rtol=0, atol=1e-6), (kind, m)


def test_python_int_position_matches_array_position() -> None:
    cfg = MQA
    weights = _weights(cfg, seed=17)
    inputs = _inputs(cfg, seed=18, position=3)
    as_int = dict(inputs)
    as_int["position"] = 3  # type: ignore[assignment]
    a = _decode(cfg, weights, inputs)
    b = _decode(cfg, weights, as_int)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("position", [-1, GQA.max_positions])
def test_position_outside_cache_is_rejected(position: int) -> None:
    cfg = GQA
    weights = _weights(cfg, seed=19)
    inputs = _inputs(cfg, seed=20, position=0)
    inputs["position"] = np.array(position, dtype=np.int64)
    with pytest.raises(ValueError, match="position"):
        _decode(cfg, weights, inputs)


# --------------------------------------------------------------------------------------------
# Shapes and dtypes.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [GQA, MHA, MQA], ids=["gqa", "mha", "mqa"])
@pytest.mark.parametrize("in_dtype", [np.float32, np.float64, np.float16])
def test_output_shapes_and_dtypes(cfg: Config, in_dtype: type[np.floating]) -> None:
    weights = {k: v.astype(in_dtype) for k, v in _weights(cfg, seed=21).items()}
    inputs = _inputs(cfg, seed=22, position=2)
    inputs = {k: (v if k == "position" else v.astype(in_dtype)) for k, v in inputs.items()}
    out = _decode(cfg, weights, inputs)

    cache_shape = (cfg.batch, cfg.kv_heads, cfg.max_positions, cfg.head_dim)
    expected = {"hidden_states": (cfg.batch, cfg.hidden)}
    for i in range(cfg.layers):
        expected[f"present_key.{i}"] = cache_shape
        expected[f"present_value.{i}"] = cache_shape
    assert set(out) == set(expected)
    for key, shape in expected.items():
        assert out[key].shape == shape, key
        assert out[key].dtype == np.float32, key
        assert np.isfinite(out[key]).all(), key
    # The inputs are left untouched (present caches are copies).
    assert not inputs["past_key.0"][:, :, 2:].any()


def test_random_helpers_shapes_and_scale() -> None:
    cfg = GQA
    weights = _weights(cfg, seed=23)
    assert len(weights) == 11 * cfg.layers
    assert all(w.dtype == np.float32 for w in weights.values())
    pre = "model.layers.1."
    assert weights[pre + "self_attn.q_proj.weight"].shape == (cfg.heads * cfg.head_dim, cfg.hidden)
    assert weights[pre + "self_attn.k_proj.weight"].shape == (
        cfg.kv_heads * cfg.head_dim,
        cfg.hidden,
    )
    assert weights[pre + "self_attn.o_proj.weight"].shape == (cfg.hidden, cfg.heads * cfg.head_dim)
    assert weights[pre + "mlp.down_proj.weight"].shape == (cfg.hidden, cfg.intermediate)
    assert weights[pre + "self_attn.q_norm.weight"].shape == (cfg.head_dim,)
    assert abs(float(weights[pre + "input_layernorm.weight"].mean()) - 1.0) < 0.2

    inputs = _inputs(cfg, seed=24, position=3)
    assert inputs["position"].dtype == np.int64 and inputs["position"].ndim == 0
    assert inputs["past_value.1"][:, :, :3].all() and not inputs["past_value.1"][:, :, 3:].any()
    out = _decode(cfg, weights, inputs)
    assert float(np.abs(out["hidden_states"]).max()) < 20.0  # activations stay O(1)
