"""The decomposition checked as a program: the Megatron split computes the unsharded layer,
and both compute an independent plain-numpy Qwen3 decode (tests/qwen3_numpy_reference.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import program, tiny
from qwen3_numpy_reference import qwen3_decode, random_qwen3_inputs, random_qwen3_weights

from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.runtime.reference import run_program


def _weights_inputs(cfg: Qwen3Config, seed: int, position: int):
    rng = np.random.default_rng(seed)
    weights = random_qwen3_weights(
        rng,
        layers=cfg.layers,
        hidden=cfg.hidden,
        heads=cfg.heads,
        kv_heads=cfg.kv_heads,
        head_dim=cfg.head_dim,
        intermediate=cfg.intermediate,
    )
    inputs = random_qwen3_inputs(
        rng,
        layers=cfg.layers,
        batch=cfg.batch,
        hidden=cfg.hidden,
        kv_heads=cfg.kv_heads,
        head_dim=cfg.head_dim,
        max_positions=cfg.max_positions,
        position=position,
    )
    return weights, inputs


def _reference(cfg: Qwen3Config, weights, inputs):
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


def _close(got: dict[str, np.ndarray], want: dict[str, np.ndarray], rtol: float) -> None:
    assert set(got) == set(want)
    for name in want:
        scale = float(np.max(np.abs(want[name]))) or 1.0
        err = float(np.max(np.abs(got[name].astype(np.float64) - want[name])))
        assert err <= rtol * scale, f"{name}: max abs err {err:.3e} (scale {scale:.3g})"


@pytest.mark.parametrize("chips", [1, 2, 4, 8])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("batch", [1, 3])
def test_tp_program_equals_unsharded_and_numpy(chips: int, layers: int, batch: int) -> None:
    cfg = tiny(chips=chips, layers=layers, batch=batch)
    tp, plain = program(cfg), program(cfg.unsharded())
    for position in (0, 5, cfg.max_positions - 1):
        weights, inputs = _weights_inputs(cfg, seed=position + 10 * chips, position=position)
        values = {**weights, **inputs}
        got_tp = run_program(tp, values)
        got_plain = run_program(plain, values)
        want = _reference(cfg, weights, inputs)
        _close(got_tp, {k: v.astype(np.float64) for k, v in got_plain.items()}, 1e-5)
        _close(got_tp, want, 1e-5)
        _close(got_plain, want, 1e-5)
        # The caches changed exactly at `position` (the write is real, not a copy).
        for i in range(layers):
            past, present = inputs[f"past_key.{i}"], got_tp[f"present_key.{i}"]
            keep = np.ones(cfg.max_positions, bool)
            keep[position] = False
            np.testing.assert_array_equal(present[:, :, keep], past[:, :, keep])
            assert not np.allclose(present[:, :, position], past[:, :, position])


@pytest.mark.parametrize("chips", [2, 4])
def test_fold_spelling_computes_the_same(chips: int) -> None:
    cfg = tiny(chips=chips, layers=2, fold=True)
    weights, inputs = _weights_inputs(cfg, seed=7, position=4)
    _close(run_program(program(cfg), {**weights, **inputs}), _reference(cfg, weights, inputs), 1e-5)


@pytest.mark.parametrize("chips", [2, 8])
def test_fused_qkv_and_gate_up_checkpoints(chips: int) -> None:
    """One fused checkpoint tensor, each chip's slice several ranges of it."""
    cfg = tiny(chips=chips, layers=2, fused_qkv=True, fused_gate_up=True)
    weights, inputs = _weights_inputs(cfg, seed=3, position=6)
    fused = dict(weights)
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        fused[p + "self_attn.qkv_proj.weight"] = np.concatenate(
            [fused.pop(p + f"self_attn.{x}_proj.weight") for x in "qkv"], axis=0
        )
        fused[p + "mlp.gate_up_proj.weight"] = np.concatenate(
            [fused.pop(p + "mlp.gate_proj.weight"), fused.pop(p + "mlp.up_proj.weight")], axis=0
        )
    got = run_program(program(cfg), {**fused, **inputs})
    _close(got, _reference(cfg, weights, inputs), 1e-5)
    _close(
        run_program(program(cfg.unsharded()), {**fused, **inputs}),
        _reference(cfg, weights, inputs),
        1e-5,
    )


def test_bf16_weights_compute_in_f32() -> None:
    cfg = tiny(chips=4, dtype="bf16")
    weights, inputs = _weights_inputs(cfg, seed=5, position=2)
    bf16 = {k: v.astype(ml_dtypes.bfloat16) for k, v in weights.items()}
    got = run_program(program(cfg), {**bf16, **inputs})
    rounded = {k: v.astype(np.float32) for k, v in bf16.items()}
    _close(got, _reference(cfg, rounded, inputs), 1e-5)
