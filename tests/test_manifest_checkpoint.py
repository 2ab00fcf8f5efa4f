"""The manifest read from the IR, and host loading through its one slice map."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import program, tiny
from safetensors.numpy import save_file

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.runtime.checkpoint import (
    MemorySource,
    SafetensorsSource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import BindError


def _rows(full: np.ndarray, axis: int, ranges: list[tuple[int, int]]) -> np.ndarray:
    """Independent slicing: the listed index ranges of ``full`` along ``axis``."""
    idx = np.concatenate([np.arange(s, s + n) for s, n in ranges])
    return np.take(full, idx, axis=axis)


@pytest.mark.parametrize("chips", [2, 4])
def test_manifest_states_the_megatron_split(chips: int) -> None:
    cfg = tiny(chips=chips)
    m = read_manifest(program(cfg))
    assert m.chips == chips
    d, nq, nkv = cfg.head_dim, cfg.heads // chips, cfg.kv_heads // chips
    cols = cfg.intermediate // chips
    expected = {
        "model.layers.0.self_attn.q_proj.weight": [
            (0, [(c * nq * d, nq * d)]) for c in range(chips)
        ],
        "model.layers.0.self_attn.k_proj.weight": [
            (0, [(c * nkv * d, nkv * d)]) for c in range(chips)
        ],
        "model.layers.0.self_attn.o_proj.weight": [
            (1, [(c * nq * d, nq * d)]) for c in range(chips)
        ],
        "model.layers.0.mlp.gate_proj.weight": [(0, [(c * cols, cols)]) for c in range(chips)],
        "model.layers.0.mlp.down_proj.weight": [(1, [(c * cols, cols)]) for c in range(chips)],
        "past_key.0": [(1, [(c * nkv, nkv)]) for c in range(chips)],
    }
    for tensor, per_chip in expected.items():
        loads = m.loads_of(tensor)
        assert [ld.chip for ld in loads] == list(range(chips))
        assert [(ld.slice.axis_index, ld.slice.ranges) for ld in loads] == per_chip
    # Spine weights are never sliced; two all-reduces, each over every chip in order.
    assert m.loads_of("model.layers.0.input_layernorm.weight") == []
    assert [c.kind for c in m.collectives] == ["allreduce", "allreduce"]
    for coll in m.collectives:
        assert [p.type.encoding.value for p in coll.partials] == list(range(chips))
    assert [s.output for s in m.stores] == ["present_key.0", "present_value.0"]
    exported = json.loads(json.dumps(m.to_json()))
    assert exported["chips"] == chips
    assert exported["collectives"][0]["chips"] == list(range(chips))


def test_fold_collectives_list_their_statements() -> None:
    m = read_manifest(program(tiny(chips=4, fold=True)))
    assert [c.kind for c in m.collectives] == ["fold", "fold"]
    assert all(len(c.ops) == 3 and len(c.partials) == 4 for c in m.collectives)


@pytest.mark.parametrize("fused", [False, True])
def test_checkpoint_loads_through_the_slice_map(tmp_path, fused: bool) -> None:
    cfg = tiny(chips=4, layers=2, fused_qkv=fused, fused_gate_up=fused)
    module = program(cfg)
    weights = random_weights(module, seed=11)
    path = tmp_path / "ckpt.safetensors"
    save_file(weights, str(path))
    placement = place_weights(module, SafetensorsSource(path))
    manifest = read_manifest(module)
    multi = 0
    for load in manifest.loads:
        if load.tensor.startswith("past_"):
            continue
        want = _rows(weights[load.tensor], load.slice.axis_index, load.slice.ranges)
        np.testing.assert_array_equal(placement.placed[load.op], want)
        multi += len(load.slice.ranges) > 1
    assert (multi > 0) == fused  # fused layouts really use multi-range slices
    # Sliced weights are never loaded whole: their bound argument is a free placeholder.
    q = (
        "model.layers.0.self_attn.qkv_proj.weight"
        if fused
        else "model.layers.0.self_attn.q_proj.weight"
    )
    assert placement.values[q].strides == (0, 0)
    inputs = random_inputs(module, seed=2, position=3)
    from_file = run_program(module, {**placement.values, **inputs}, placement.placed)
    in_memory = run_program(module, {**weights, **inputs})
    for name in in_memory:
        np.testing.assert_array_equal(from_file[name], in_memory[name])


def test_missing_or_misshaped_checkpoint_tensor_is_named(tmp_path) -> None:
    module = program(tiny(chips=2))
    weights = random_weights(module, seed=1)
    missing = dict(weights)
    del missing["model.layers.0.mlp.up_proj.weight"]
    with pytest.raises(
        BindError,
        match=r"no tensor 'model.layers.0.mlp.up_proj.weight' "
        r"\(expected f32 of shape \[128, 64\]\)",
    ):
        place_weights(module, MemorySource(missing))
    bad = dict(weights)
    bad["model.layers.0.self_attn.o_proj.weight"] = np.zeros((64, 64), np.float32)
    with pytest.raises(
        BindError,
        match=r"'model.layers.0.self_attn.o_proj.weight': expected "
        r"shape \[64, 128\], found \[64, 64\]",
    ):
        place_weights(module, MemorySource(bad))


def test_bf16_checkpoint_loads_and_runs(tmp_path) -> None:
    cfg = tiny(chips=2, dtype="bf16")
    module = program(cfg)
    weights = random_weights(module, seed=3)
    assert {str(w.dtype) for w in weights.values()} == {"bfloat16"}
    path = tmp_path / "bf16.safetensors"
    save_file(weights, str(path))
    placement = place_weights(module, SafetensorsSource(path))
    assert {str(a.dtype) for a in placement.placed.values() if a.ndim == 2} == {"bfloat16"}
    inputs = random_inputs(module, seed=4, position=1)
    from_file = run_program(module, {**placement.values, **inputs}, placement.placed)
    in_memory = run_program(module, {**weights, **inputs})
    for name, value in in_memory.items():
        assert value.dtype == np.float32
        np.testing.assert_array_equal(from_file[name], value)
