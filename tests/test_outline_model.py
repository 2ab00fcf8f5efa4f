"""The runtime on the outlined form (``tp-gen --outline``: ``@decode`` calling ``@layer`` once
a layer): the model, ``--stats`` and the timeline read it as its flat program.

The flat program is the one tp-inline makes of the same lowered module (the form
tp-link-points, and so the relay and dataflow modes, run): it has the same statements in the
same order and phases. (A flat program from ``tp-gen`` without ``--outline`` is not the same
program: its constants and fills are written once, where each call of ``@layer`` writes its
own, so its modelled step differs by those sections.)

Invariants checked, tiny Qwen3 at N = 1, 2, 4, 8, at the sectioned stage (tp-relocate,
tp-transfers) and the phased one (tp-phase):

- sequential and phase modes: the reports' JSON (step time, its parts per step and per layer,
  bytes moved, memory per chip, both bounds) and the timelines (every slice and flow, layer by
  layer) are equal to the flat program's, float for float;
- relay and dataflow modes through ``tp-run``'s lowering (tp-link-points writes per-chip
  functions, each call a frame of the model):
  equal likewise;
- ``pipeline_stats`` gives the flat program's rows (every layer, not the prologue alone);
- ``tp-run --dry-run`` in sequential and phase modes takes the outlined file and reports what
  it reports for the flat one;
- a repeated layer is costed once: the model costs as many sections for 4 layers as for 1;
- calls nested two deep, a callee updating its caller's cache, other all-reduce algorithms;
- refusals: a call sharing its phase, recursion.

Speed is measured in ``benchmarks/outline.py``, never here.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CTX, program, tiny
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import CallOp, FuncOp

from tp_dialect.analysis.calls.flat_runs import CallError, Runs
from tp_dialect.analysis.schedule.stats import format_stats, pipeline_stats
from tp_dialect.frontend import qwen3
from tp_dialect.machine import MACHINES
from tp_dialect.ops import SectionOp
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.model import ModelError, ModelReport, model, phase_mode, stage_of
from tp_dialect.runtime.model.timeline import Timeline, chrome_trace
from tp_dialect.signature import entry_function
from tp_dialect.tools import tp_run
from tp_dialect.tools.run_model import model_modes
from tp_dialect.tools.source import parse_module

SN40L = MACHINES["sn40l"]
INPUTS = Path(__file__).parent / "inputs"

SECTIONED = "tp-verify,tp-relocate,tp-transfers"
PHASED = f"{SECTIONED},tp-verify,tp-phase"
STAGES = {"sectioned": SECTIONED, "phased": PHASED}
CHIPS = [1, 2, 4, 8]


@functools.cache
def pair(cfg: qwen3.Qwen3Config, spec: str) -> tuple[ModuleOp, ModuleOp]:
    """The outlined program lowered by ``spec``, and the flat program tp-inline makes of it."""
    outlined = lowered(program(cfg, True), spec)
    return outlined, lowered(outlined, "tp-inline")


def parsed(text: str) -> ModuleOp:
    module, _ = parse_module(CTX, text, "<input>")
    return module


def assert_same_model(
    flat: tuple[ModelReport, Timeline], outlined: tuple[ModelReport, Timeline], where: str
) -> None:
    """Reports equal as JSON, timelines equal slice for slice (and layer by layer)."""
    (want, want_t), (got, got_t) = flat, outlined
    assert got.to_json() == want.to_json(), where
    assert got_t.lanes == want_t.lanes, where
    assert got_t.by_layer() == want_t.by_layer(), where
    assert got_t.slices == want_t.slices, where
    assert got_t.flows == want_t.flows, where


# -- sequential and phase modes on the outlined program ---------------------------------------


@pytest.mark.parametrize("stage", sorted(STAGES))
@pytest.mark.parametrize("chips", CHIPS)
def test_sequential_and_phase_modes_model_the_flat_program(chips: int, stage: str) -> None:
    outlined, flat = pair(tiny(chips=chips, layers=2), STAGES[stage])
    assert any(isinstance(op, CallOp) for op in entry_function(outlined).body.block.ops)
    assert stage_of(outlined) == stage_of(flat) == stage
    for mode in ("sequential", "phase"):
        want, got = model(flat, SN40L, mode), model(outlined, SN40L, mode)
        where = f"N={chips} {stage} {mode}"
        assert_same_model(want, got, where)
        report = got[0].to_json()
        layers = [row["layer"] for row in report["layers"]]  # type: ignore[union-attr]
        assert layers == ["prologue", "layer 0", "layer 1"], where
        assert (report["bytes_moved"] > 0) == (chips > 1), where  # type: ignore[operator]
        assert all(m["peak_live_bytes"] > 0 for m in report["memory"]), where  # type: ignore[union-attr,index]
        physical = report["physical_bound"]
        assert physical["allreduces"] == 4, where  # type: ignore[index]  # two a layer


@pytest.mark.parametrize("chips", [2, 4])
def test_relay_and_dataflow_through_tp_runs_lowering_model_the_flat_program(chips: int) -> None:
    """tp-run lowers a copy for these modes, down to per-chip functions the programs call."""
    outlined, flat = pair(tiny(chips=chips, layers=2), PHASED)
    modes = ["relay", "dataflow"]
    want, got = model_modes(flat, SN40L, modes), model_modes(outlined, SN40L, modes)
    for mode in modes:
        assert_same_model(want[mode], got[mode], f"N={chips} {mode}")


def test_trace_of_the_outlined_model_is_the_flat_ones() -> None:
    outlined, flat = pair(tiny(chips=4, layers=2), PHASED)
    _, want = model(flat, SN40L, "phase")
    _, got = model(outlined, SN40L, "phase")
    assert chrome_trace(got) == chrome_trace(want)
    assert sorted(k for k in got.by_layer() if k) == ["layer 0", "layer 1", "prologue"]


# -- --stats -------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", sorted(STAGES))
@pytest.mark.parametrize("chips", CHIPS)
def test_stats_of_the_outlined_program_are_the_flat_ones(chips: int, stage: str) -> None:
    outlined, flat = pair(tiny(chips=chips, layers=2), STAGES[stage])
    want, got = pipeline_stats(flat), pipeline_stats(outlined)
    assert [vars(r) for r in got] == [vars(r) for r in want]
    assert [r.layer for r in got] == ["prologue", "layer 0", "layer 1"]
    assert got[1].sections == got[2].sections > 0
    if stage == "phased":
        assert len(got[1].phases) > 10 and not got[1].phases & got[2].phases
    assert format_stats(got) == format_stats(want)


def test_stats_of_per_chip_programs_lowered_from_the_outlined_program() -> None:
    outlined, flat = pair(tiny(chips=4, layers=2), PHASED)
    spec = "tp-link-points,tp-relay"
    want, got = pipeline_stats(lowered(flat, spec)), pipeline_stats(lowered(outlined, spec))
    assert [vars(r) for r in got] == [vars(r) for r in want]


# -- tp-run --dry-run ------------------------------------------------------------------------


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_tp_run_dry_run_takes_the_outlined_program(tmp_path: Path, stage: str) -> None:
    outlined, flat = pair(tiny(chips=2, layers=2), STAGES[stage])
    reports = {}
    for name, module in (("outlined", outlined), ("flat", flat)):
        path, out = tmp_path / f"{name}.mlir", tmp_path / f"{name}.json"
        path.write_text(str(module))
        argv = [str(path), "--dry-run", "--mode", "sequential,phase", "--report", str(out)]
        assert tp_run.main(argv) == 0
        reports[name] = json.loads(out.read_text())
    assert reports["outlined"] == reports["flat"]
    layers = reports["outlined"]["modes"]["phase"]["layers"]
    assert [row["layer"] for row in layers] == ["prologue", "layer 0", "layer 1"]


# -- a repeated layer is costed once ---------------------------------------------------------


def test_a_repeated_layer_is_costed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The phase model costs each op of the callee once, however many calls run it: as many
    `op_cost` calls for 4 layers as for 1 (the flat program: 4 times the layer's)."""
    calls: list[object] = []
    real = phase_mode.op_cost

    def counted(op: Any) -> Any:
        calls.append(op)
        return real(op)

    monkeypatch.setattr(phase_mode, "op_cost", counted)
    counts = {}
    for layers in (1, 4):
        outlined, flat = pair(tiny(chips=2, layers=layers), PHASED)
        for form, module in (("outlined", outlined), ("flat", flat)):
            calls.clear()
            phase_mode.simulate_sectioned(module, SN40L)
            counts[form, layers] = len(calls)
    assert counts["outlined", 4] == counts["outlined", 1] > 0
    assert counts["flat", 4] > 3 * counts["flat", 1]


# -- other programs ----------------------------------------------------------------------------

_NESTED = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @mlp(%h: tensor<4x2xf32>, %w: tensor<8x2xf32>) -> tensor<4x2xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<1>>
    %e0 = tensor.empty() : tensor<4x2xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4x2xf32, #tp.chip<1>>
    %l_a0 = linalg.add ins(%w0, %h : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32>) outs(%e0 : tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %l_a1 = linalg.add ins(%w1, %h : tensor<4x2xf32, #tp.chip<1>>, tensor<4x2xf32>) outs(%e1 : tensor<4x2xf32, #tp.chip<1>>) -> tensor<4x2xf32, #tp.chip<1>>
    %l_s = tp.allreduce %l_a0, %l_a1 : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<4x2xf32>
    func.return %l_s : tensor<4x2xf32>
  }
  func.func private @block(%h: tensor<4x2xf32>, %w: tensor<8x2xf32>, %v: tensor<8x2xf32>) -> tensor<4x2xf32> {
    %l_m = func.call @mlp(%h, %w) : (tensor<4x2xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %l_n = arith.addf %l_m, %h : tensor<4x2xf32>
    %l_out = func.call @mlp(%l_n, %v) : (tensor<4x2xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    func.return %l_out : tensor<4x2xf32>
  }
  func.func @decode(%x: tensor<4x2xf32> {tp.name = "x", tp.role = "input"}, %w0: tensor<8x2xf32> {tp.name = "w0", tp.role = "weight"}, %v0: tensor<8x2xf32> {tp.name = "v0", tp.role = "weight"}, %w1: tensor<8x2xf32> {tp.name = "w1", tp.role = "weight"}, %v1: tensor<8x2xf32> {tp.name = "v1", tp.role = "weight"}) -> (tensor<4x2xf32> {tp.name = "y"}) {
    %p = arith.mulf %x, %x : tensor<4x2xf32>
    %l0_out = func.call @block(%p, %w0, %v0) : (tensor<4x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %l1_out = func.call @block(%l0_out, %w1, %v1) : (tensor<4x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    func.return %l1_out : tensor<4x2xf32>
  }
}"""  # noqa: E501

OTHER_SPECS = [
    SECTIONED,
    PHASED,
    "tp-relocate{allreduce=ring},tp-transfers,tp-phase",
    "tp-relocate{allreduce=twoshot epilogue=true},tp-transfers",
    "tp-relocate{allreduce=oneshot},tp-transfers,tp-phase{order=source}",
]


@functools.cache
def other(name: str) -> ModuleOp:
    if name == "nested":
        return parsed(_NESTED)
    if name == "cache-in-callee":
        return parsed((INPUTS / "cache_update_in_callee.mlir").read_text())
    cfg = tiny(chips=4, layers=2, fold=True, fused_qkv=True, fused_gate_up=True)
    return program(cfg, True)


@pytest.mark.parametrize("spec", OTHER_SPECS)
@pytest.mark.parametrize("name", ["nested", "cache-in-callee", "qwen3-fold-fused"])
def test_other_outlined_programs_model_their_flat_program(name: str, spec: str) -> None:
    """Calls two deep (each copy of ``@mlp`` labelled with its ``@block`` call's layer), a
    callee updating a cache its caller holds, other all-reduce algorithms and phase orders."""
    outlined = lowered(other(name), spec)
    flat = lowered(outlined, "tp-inline")
    for mode in ("sequential", "phase"):
        assert_same_model(model(flat, SN40L, mode), model(outlined, SN40L, mode), mode)
    assert [vars(r) for r in pipeline_stats(outlined)] == [vars(r) for r in pipeline_stats(flat)]
    if name == "nested":
        rows = {r.layer: r.sections for r in pipeline_stats(outlined)}
        assert rows["layer 0"] == rows["layer 1"] > 0


# -- refusals ----------------------------------------------------------------------------------


def test_a_call_sharing_its_phase_is_refused() -> None:
    outlined, _ = pair(tiny(chips=2, layers=2), PHASED)
    module = outlined.clone()
    decode = entry_function(module)
    call = next(op for op in decode.body.block.ops if isinstance(op, CallOp))
    section = next(op for op in decode.body.block.ops if isinstance(op, SectionOp))
    section.attributes["tp.phase"] = IntegerAttr(call.attributes["tp.phase"].value.data, i64)  # type: ignore[attr-defined]
    with pytest.raises(ModelError, match="stands alone in its phase"):
        model(module, SN40L, "phase")
    model(module, SN40L, "sequential")  # no phases there: the statements in program order


def test_recursion_through_lowered_calls_is_refused() -> None:
    text = _NESTED.replace(
        "%l_s = tp.allreduce",
        "%l_r = func.call @block(%h, %w, %w) : (tensor<4x2xf32>, tensor<8x2xf32>, "
        "tensor<8x2xf32>) -> tensor<4x2xf32>\n    %l_s = tp.allreduce",
    )
    module = parsed(text)
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    with pytest.raises(CallError, match="recursively"):
        Runs(funcs["decode"])
