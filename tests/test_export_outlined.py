"""tp-export of outlined programs: each per-chip function's parts exported once, each call an
entry of its own. The reference interpreter running the exported functions under the
manifest (`run_segments`) must give bitwise what it gives on the outlined program itself and
on its flat form (tp-inline), and the unsharded program's outputs to f32 rounding: tiny
qwen3 at N = 1, 2, 4 under every all-reduce algorithm, random outlined programs (their
parameters sometimes handed one caller value), whole models' steps; and IREE running the
export (`run_iree`) gives the interpreter's outputs within 1e-5 relative."""

from __future__ import annotations

import functools
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import hf_models
import numpy as np
import pytest
from exported_runner import interpreted
from helpers import tool
from hypothesis import assume, given, settings
from ir_helpers import SETTINGS, apply, parse
from test_storage_aliases import Outlined, outlined
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tp_dialect.frontend.families import unsharded_text
from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.passes.universe import lowered
from tp_dialect.program_ops import CHIP_FUNCTION
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs, random_weights
from tp_dialect.runtime.iree_exec import ModuleCache, run_iree
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.segments import run_segments
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
PIPELINE = "tp-relocate{{allreduce={}}},tp-transfers,tp-phase,tp-link-points,tp-relay"


@functools.cache
def _source(layers: int, chips: int, outline: bool) -> str:
    """tp-gen's tiny qwen3 step (outlined: one ``@layer`` called per layer)."""
    cmd = ["qwen3", "--preset", "tiny", "--layers", str(layers)]
    cmd += ["--chips", str(chips)] + (["--outline"] if outline else [])
    made = tool("tp-gen", *cmd)
    assert made.returncode == 0, made.stderr
    return made.stdout


def _programs(layers: int, chips: int, algorithm: str, outline: bool = True) -> ModuleOp:
    module, _ = parse_module(tp_context(), _source(layers, chips, outline), "<tp-gen>")
    return lowered(module, PIPELINE.format(algorithm))


def _exported(module: ModuleOp) -> tuple[ModuleOp, dict[str, Any]]:
    exported = module.clone()
    export_module(exported)
    assert not [op.name for op in exported.walk() if op.dialect_name() == "tp"]
    assert "#tp.chip" not in str(exported)
    return exported, manifest_of(exported)


def _run_exported(module: ModuleOp, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``module`` exported, its segments run by the reference interpreter under the
    manifest; its results by name."""
    exported, manifest = _exported(module)
    host_input, call = interpreted(exported, values)

    got = run_segments(manifest, host_input, call)
    names = [r["name"] for r in manifest["host"]["results"]]
    return {n: np.asarray(v) for n, v in zip(names, got, strict=True)}


def _values(module: ModuleOp) -> dict[str, np.ndarray]:
    return {**random_weights(module, 0), **random_inputs(module, 1, 5)}


@pytest.mark.parametrize("chips", [1, 2, 4])
@pytest.mark.parametrize("algorithm", ["fold", "ring", "oneshot", "twoshot"])
def test_outlined_export_computes_the_flat_and_the_unsharded_programs_outputs(
    chips: int, algorithm: str
) -> None:
    layers = 3 if chips == 2 else 2
    module = _programs(layers, chips, algorithm)
    values = _values(module)
    got = _run_exported(module, values)
    outlined = run_program(module, values)
    inlined = lowered(module.clone(), "tp-inline")
    flat = run_program(inlined, values)
    reference, _ = parse_module(
        tp_context(), unsharded_text(module.attributes["tp.config"]), "<unsharded>"
    )
    unsharded = run_program(reference, values)
    assert set(got) == set(flat) == set(outlined) == set(unsharded)
    for name, want in flat.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        np.testing.assert_array_equal(got[name], outlined[name], err_msg=name)
        scale = max(1.0, float(np.max(np.abs(unsharded[name]))))
        np.testing.assert_allclose(got[name], unsharded[name], rtol=1e-5, atol=1e-5 * scale)


def test_a_functions_parts_are_exported_once_whatever_the_number_of_calls() -> None:
    counts = []
    for layers in (2, 3):
        exported, manifest = _exported(_programs(layers, 2, "fold"))
        funcs = {f.sym_name.data: f for f in exported.ops if isinstance(f, FuncOp)}
        codes = Counter(e["code"] for e in manifest["segments"] if "code" in e)
        assert codes and all(n == layers for n in codes.values())  # one entry per call
        assert set(codes) <= set(funcs)
        runs = [s["run"] for s in manifest["relay"] if "run" in s]
        assert sorted(runs) == sorted(e["function"] for e in manifest["segments"])
        for entry in [*manifest["segments"], manifest["host"]]:
            f = funcs[entry.get("code", entry["function"])]
            assert len(entry["arguments"]) == len(f.function_type.inputs.data)
            assert len(entry["results"]) == len(f.function_type.outputs.data)
        counts.append(len(funcs))
    assert counts[0] == counts[1]


def test_each_call_binds_its_own_layers_weights_and_buffers() -> None:
    _, manifest = _exported(_programs(2, 2, "fold"))
    first = [e for e in manifest["segments"] if e.get("code") == "layer_chip1_part0"]
    assert len(first) == 2
    for layer, entry in enumerate(first):
        names = {p["name"] for p in entry["arguments"] if p["kind"] in ("shard", "input")}
        weights = {n for n in names if n.startswith("model.layers.")}
        assert weights and all(n.startswith(f"model.layers.{layer}.") for n in weights)
        sends = [p["name"] for p in entry["results"] if p["kind"] == "send"]
        assert sends == [f"l{layer}_o_c1"]
    keys = [
        {p["name"] for p in e["results"] if p["kind"] == "carry"} for e in first
    ]  # a carried value of one call is not another's
    assert not keys[0] & keys[1]


def test_run_iree_on_an_outlined_program_equals_the_interpreter(tmp_path: Path) -> None:
    module = _programs(2, 2, "fold")
    weights, inputs = random_weights(module, 0), random_inputs(module, 1, 5)
    placement = place_weights(module, MemorySource(weights), inputs)
    run = run_iree(module, placement.values, placement.placed, ModuleCache(tmp_path))
    exported, _ = _exported(module)
    codes = [f for f in exported.ops if isinstance(f, FuncOp)]
    assert run.distinct <= len(codes)  # each function compiled once, not once per call
    want = run_program(module, {**weights, **inputs})
    assert set(run.outputs) == set(want)
    for name, value in want.items():
        scale = float(np.max(np.abs(value)))
        assert float(np.max(np.abs(run.outputs[name] - value))) <= 1e-5 * scale, name


@settings(max_examples=40, **SETTINGS)
@given(case=outlined())
def test_a_random_outlined_programs_export_computes_its_outputs(case: Outlined) -> None:
    """Invariant: a random program as a per-chip function (its parameters sometimes handed
    one caller value), lowered to per-chip programs and exported, computes under its
    manifest what the source computes, bitwise (or is refused before, at the call)."""
    assume(not case.refused())
    source = parse(case.text())
    want = run_program(source, case.prog.inputs)
    module = parse(case.text())
    apply(module, "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay")
    got = _run_exported(module, case.prog.inputs)
    assert set(got) == set(want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize(("family", "step"), [("qwen3", "decode"), ("gpt2", "prefill")])
def test_a_whole_models_outlined_step_exports_to_its_numbers(
    tmp_path: Path, family: str, step: str
) -> None:
    """A Hugging Face model's step (embedding, layers called, vocab-parallel argmax), split
    over 2 chips: its export gives the outlined programs' ids and logits bitwise."""
    d = hf_models.write_model(tmp_path / family, family)
    cmd = ["--from-pretrained", str(d), "--step", step, "--logits"]
    cmd += ["--max-positions", "16"] + (["--prompt-len", "3"] if step == "prefill" else [])
    made = tool("tp-gen", *cmd)
    assert made.returncode == 0, made.stderr
    text = made.stdout
    module, _ = parse_module(tp_context(), text, "<tp-gen>")
    module = lowered(module, "tp-split{plan=hf chips=2}," + PIPELINE.format("fold"))
    assert any(CHIP_FUNCTION in f.attributes for f in module.ops if isinstance(f, FuncOp))
    values = _values(module)
    got, want = _run_exported(module, values), run_program(module, values)
    assert set(got) == set(want) >= {"next_ids", "logits"}
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
