"""GPT-2 split by plans/gpt2.json: certified, and every stage of the pipeline after tp-split
gives an independent numpy GPT-2's numbers at N = 1, 2, 4; a safetensors checkpoint under
GPT-2's own names loads through the slice map, each chip reading only its slices."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpt2_numpy_reference import gpt2_decode, random_gpt2_weights
from safetensors.numpy import save_file
from test_manifest_stages import STAGES
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.frontend import gpt2
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
CFG = gpt2.GPT2Config.preset("tiny", layers=2, batch=2)


@functools.cache
def split(chips: int, stage: str) -> ModuleOp:
    source, _ = parse_module(tp_context(), gpt2.generate(CFG), "<gpt2>")
    spec = f'tp-split{{chips={chips} plan="gpt2"}},tp-verify'
    if STAGES[stage]:
        spec += f",{STAGES[stage]},tp-verify"
    return lowered(source, spec)


def weights() -> dict[str, np.ndarray]:
    return random_gpt2_weights(
        np.random.default_rng(0),
        layers=CFG.layers,
        hidden=CFG.hidden,
        intermediate=CFG.intermediate,
    )


@pytest.mark.parametrize("chips", [1, 2, 4])
@pytest.mark.parametrize("stage", list(STAGES))
def test_split_gpt2_equals_numpy_gpt2_at_every_stage(chips: int, stage: str) -> None:
    module = split(chips, stage)
    inputs = random_inputs(module, 1, 9)
    placement = place_weights(module, MemorySource(weights()), inputs)
    got = run_program(module, placement.values, placement.placed, False)
    want = gpt2_decode(weights(), inputs, layers=CFG.layers, heads=CFG.heads, eps=CFG.eps)
    assert set(got) == set(want)
    for name in want:
        scale = float(np.max(np.abs(want[name]))) or 1.0
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=5e-6 * scale, err_msg=name)


def test_split_gpt2_cuts_c_attn_in_three_runs_a_chip() -> None:
    """The packed q|k|v Conv1D weight: chip c holds its heads of each of the three parts."""
    loads = read_manifest(split(2, "source")).loads
    h = CFG.hidden
    qkv = sorted(
        (ld.chip, tuple(ld.slice.ranges), ld.slice.axis_index)
        for ld in loads
        if ld.tensor == "h.0.attn.c_attn.weight"
    )
    assert qkv == [
        (0, ((0, h // 2), (h, h // 2), (2 * h, h // 2)), 1),
        (1, ((h // 2, h // 2), (h + h // 2, h // 2), (2 * h + h // 2, h // 2)), 1),
    ]
    cut = {(ld.tensor, ld.chip) for ld in loads}
    assert ("h.0.attn.c_proj.bias", 0) not in cut  # added once, after the all-reduce
    assert ("h.0.mlp.c_fc.bias", 1) in cut  # cut with its column-split weight


def test_gpt2_safetensors_checkpoint_loads_by_its_own_names(tmp_path: Path) -> None:
    """tp-gen | tp-opt --tp-split=plan=gpt2 | tp-run --weights model.safetensors --check."""
    ckpt = tmp_path / "model.safetensors"
    save_file(weights(), str(ckpt))
    src = tmp_path / "gpt2.mlir"
    out = tmp_path / "split.mlir"
    subprocess.run(
        [str(BIN / "tp-gen"), "gpt2", "--preset", "tiny", "--layers", "2", "--unsharded"]
        + ["-o", str(src)],
        check=True,
    )
    subprocess.run(
        [str(BIN / "tp-opt"), str(src), "--tp-split=chips=4 plan=gpt2", "--tp-verify"]
        + ["-o", str(out)],
        check=True,
    )
    run = subprocess.run(
        [str(BIN / "tp-run"), str(out), "--weights", str(ckpt), "--random-inputs", "2"]
        + ["--position", "3", "--check", "--stats"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(" ok") == 5
