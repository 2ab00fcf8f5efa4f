"""The lowering passes on the outlined form (``tp-gen --outline``: ``@decode`` calling a
private ``@layer`` once a layer), against the flat program through the same passes.

Invariants checked:

- the callee is lowered once: after tp-relocate its statements are sections and ``@decode``
  calls it with bare ``func.call``s (no section holds one); tp-transfers places the callee's
  transfers in the callee; tp-phase phases the callee once and gives each call a phase of its
  own in ``@decode``;
- outlined and flat programs give bitwise the same outputs at every stage (source, after
  tp-relocate and tp-transfers, after tp-phase, as per-chip programs under the relay, the
  outlined ones calling per-chip functions), tiny Qwen3 at N = 1, 2, 4, 8, under value and
  storage semantics, and for the other all-reduce algorithms, tp-fuse and the fused epilogue;
- a certified outlined program stays certified through the passes that keep the
  certificate (tp-raise-allreduce, tp-transfers, tp-phase, tp-link-points, tp-relay,
  tp-inline), and tp-verify agrees at every stage;
- bad outlined input is refused with a located diagnostic, never an internal error;
- a Hypothesis property over layers 1..3 and chips {1, 2, 4}.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import CTX, assert_bitwise, funcs, program, tiny, values_for
from hypothesis import given, settings
from hypothesis import strategies as st
from leak_injection import MUTATORS
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp

from tp_dialect.analysis.schedule.programs import relay_steps
from tp_dialect.analysis.schedule.stats import pipeline_stats
from tp_dialect.certificate import stamp, status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend import qwen3
from tp_dialect.ops import BarrierOp, SectionOp, TransferOp
from tp_dialect.passes.universe import lowered
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function
from tp_dialect.tools import tp_run
from tp_dialect.tools.source import parse_module

INPUTS = Path(__file__).parent / "inputs"

RELOCATED = "tp-verify,tp-relocate,tp-transfers"
PHASED = f"{RELOCATED},tp-verify,tp-phase"
PROGRAMS = f"{PHASED},tp-link-points,tp-relay"
STAGES = {"source": "tp-verify", "transfers": RELOCATED, "phased": PHASED, "programs": PROGRAMS}


@functools.cache
def stage(cfg: qwen3.Qwen3Config, outline: bool, spec: str) -> ModuleOp:
    return lowered(program(cfg, outline), spec)


# -- the callee lowered once, the calls bare -------------------------------------------------


def test_relocate_sections_the_callee_once_and_leaves_the_calls_bare() -> None:
    module = stage(tiny(chips=2, layers=3), True, RELOCATED)
    layer, decode = funcs(module)["layer"], funcs(module)["decode"]
    body = [op for op in layer.body.block.ops if isinstance(op, SectionOp | TransferOp)]
    assert len(body) > 100 and any(isinstance(op, TransferOp) for op in body)
    calls = [op for op in decode.body.block.ops if isinstance(op, CallOp)]
    assert len(calls) == 3  # bare statements of @decode, one a layer
    assert all(c.callee.string_value() == "layer" for c in calls)
    assert not any(
        isinstance(op, CallOp) for s in decode.walk() if isinstance(s, SectionOp) for op in s.walk()
    )
    # the prologue (positions, RoPE tables) is sectioned in @decode, nothing crosses there
    assert any(isinstance(op, SectionOp) for op in decode.body.block.ops)
    assert not any(isinstance(op, TransferOp) for op in decode.body.block.ops)


def test_phase_orders_the_callee_once_and_gives_each_call_its_own_phase() -> None:
    module = stage(tiny(chips=4, layers=3), True, PHASED)
    decode = funcs(module)["decode"]
    ops = list(decode.body.block.ops)
    for i, op in enumerate(ops):
        if isinstance(op, CallOp):  # alone between two barriers, tagged with its phase
            phase = op.attributes["tp.phase"].value.data  # type: ignore[attr-defined]
            assert isinstance(ops[i - 1], BarrierOp) and isinstance(ops[i + 1], BarrierOp)
            assert ops[i + 1].phase.value.data == phase  # type: ignore[attr-defined]
    layer = funcs(module)["layer"]
    barriers = [op.phase.value.data for op in layer.body.block.ops if isinstance(op, BarrierOp)]
    assert barriers == list(range(len(barriers))) and len(barriers) > 10


def test_inlined_phased_program_is_numbered_in_program_order() -> None:
    module = lowered(stage(tiny(chips=2, layers=2), True, PHASED), "tp-inline")
    assert list(funcs(module)) == ["decode"]
    phase, seen = 0, 0
    for op in funcs(module)["decode"].body.block.ops:
        if isinstance(op, BarrierOp):
            assert op.phase.value.data == phase  # type: ignore[union-attr]
            phase, seen = phase + 1, seen + 1
        elif isinstance(op, SectionOp | TransferOp):
            assert op.attributes["tp.phase"].value.data == phase  # type: ignore[attr-defined]
    assert seen > 100


# -- the same numbers at every stage -----------------------------------------------------------


@pytest.mark.parametrize("stage_name", sorted(STAGES))
@pytest.mark.parametrize("chips", [1, 2, 4, 8])
def test_outlined_runs_bitwise_as_flat_at_every_stage(chips: int, stage_name: str) -> None:
    """Value and storage semantics; the storage run of the phased program is the one that
    sees a cache write ordered wrongly (the flat source's value run is the reference)."""
    cfg = tiny(chips=chips, layers=2)
    spec = STAGES[stage_name]
    flat, outlined = stage(cfg, False, spec), stage(cfg, True, spec)
    values = values_for(program(cfg, False), position=7)
    want = run_program(program(cfg, False), values)
    for storage in (False, True):
        where = f"N={chips} {stage_name} storage={storage}"
        assert_bitwise(want, run_program(flat, values, storage=storage), f"{where} flat")
        assert_bitwise(want, run_program(outlined, values, storage=storage), where)


@pytest.mark.parametrize(
    "spec",
    [
        "tp-relocate{allreduce=ring},tp-transfers,tp-phase,tp-link-points,tp-relay",
        "tp-relocate{allreduce=twoshot epilogue=true},tp-transfers,tp-phase",
        "tp-fuse{shim=sn40l},tp-relocate{allreduce=oneshot epilogue=true shim=sn40l},"
        "tp-transfers,tp-phase{order=source},tp-link-points",
        "tp-fuse{shim=sn40l},tp-relocate{allreduce=auto},tp-legalize{shim=sn40l},"
        "tp-transfers,tp-phase",
    ],
)
@pytest.mark.parametrize("fold", [False, True], ids=["allreduce", "fold-fused"])
def test_other_pipelines_agree_with_flat(spec: str, fold: bool) -> None:
    """A ring rounds in its own order, so outlined is compared with flat at the same stage."""
    cfg = tiny(chips=4, layers=2, fold=fold, fused_qkv=fold, fused_gate_up=fold)
    flat, outlined = stage(cfg, False, spec), stage(cfg, True, spec)
    values = values_for(program(cfg, False))
    for storage in (False, True):
        want = run_program(flat, values, storage=storage)
        assert_bitwise(want, run_program(outlined, values, storage=storage), spec)


def test_per_chip_programs_through_tp_run_match_the_flat_pipeline(tmp_path: Path) -> None:
    """``tp-run`` on both pipelines' per-chip programs (the relay): the same outputs, the
    same sections per layer (the inlined copies take their layer's labels)."""
    cfg = tiny(chips=4, layers=2)
    outs = {}
    for outline in (False, True):
        path, out = tmp_path / f"{outline}.mlir", tmp_path / f"{outline}.npz"
        path.write_text(str(stage(cfg, outline, PROGRAMS)))
        argv = [str(path), "--random-weights", "0", "--random-inputs", "1", "--storage"]
        assert tp_run.main([*argv, "--outputs", str(out)]) == 0
        with np.load(out) as got:
            outs[outline] = {k: got[k] for k in got.files}
    assert_bitwise(outs[False], outs[True], "tp-run")
    rows = {
        o: {r.layer: r.sections for r in pipeline_stats(stage(cfg, o, PROGRAMS))}
        for o in (False, True)
    }
    assert rows[True]["layer 0"] == rows[False]["layer 0"] == rows[True]["layer 1"] > 0


def test_a_cache_updated_in_a_callee_is_written_after_its_readers() -> None:
    """The callee updating a chip's cache is a lowered call (bare), phased after the
    section reading the old cache: under storage semantics the numbers are the source's."""
    text = (INPUTS / "cache_update_in_callee.mlir").read_text()
    source, _ = parse_module(CTX, text, "<input>")
    rng = np.random.default_rng(3)
    shapes = {"x": (4, 2), "w": (8, 2), "cache": (4, 2), "row": (1, 2)}
    values = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    want = run_program(source, values)
    for algorithm in ("fold", "ring"):
        module = lowered(source, f"tp-relocate{{allreduce={algorithm}}},tp-transfers,tp-phase")
        ops = list(funcs(module)["decode"].body.block.ops)
        call = next(i for i, op in enumerate(ops) if isinstance(op, CallOp))
        reader = next(
            i
            for i, op in enumerate(ops)
            if isinstance(op, SectionOp) and op.label is not None and op.label.data == "y"
        )
        assert reader < call
        assert_bitwise(want, run_program(module, values, storage=True), algorithm)


# -- the certificate -------------------------------------------------------------------------


def test_a_certified_outlined_program_stays_certified() -> None:
    cfg = tiny(chips=4, layers=2)
    module = lowered(program(cfg, True), "tp-verify")
    assert status(module) == "valid"
    for spec in (
        "tp-raise-allreduce",
        "tp-relocate,tp-verify",
        "tp-transfers",
        "tp-phase",
        "tp-inline",
    ):
        if spec == "tp-inline":
            kept = lowered(module, spec)  # a flat copy; the outlined one goes on
            assert status(kept) == "valid" and status(lowered(kept, "tp-verify")) == "valid"
            continue
        module = lowered(module, spec)
        assert status(module) == "valid", spec
        assert status(lowered(module, "tp-verify")) == "valid", spec
    for spec in ("tp-link-points", "tp-relay"):
        module = lowered(module, spec)
        assert status(module) == "valid", spec
        assert any(isinstance(op, ChipProgramOp) for op in funcs(module)["decode"].walk())
    assert status(lowered(module, "tp-verify")) == "valid"


def test_relocate_checks_a_certified_program_again() -> None:
    """A certified program is certified after tp-relocate (checked again, not re-stamped:
    a leak stamped over by hand loses its certificate); an uncertified one stays so."""
    module = lowered(program(tiny(chips=2, layers=1), True), "tp-verify,tp-relocate")
    assert status(module) == "valid"
    assert status(lowered(program(tiny(chips=2, layers=1), True), "tp-relocate")) == "missing"
    leaky = program(tiny(chips=2, layers=1), True).clone()  # the cached one stays whole
    assert MUTATORS["chip-scalar"](leaky, random.Random(0)) is not None
    stamp(leaky)  # a certificate the checker never gave
    assert status(lowered(leaky, "tp-relocate")) == "missing"


# -- refusals ------------------------------------------------------------------------------

_NESTED = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
    %d = tp.section "d" on [0, 1] {
      %a = arith.addf %x, %x : tensor<4xf32>
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.section "r" on [0, 1] {
      %y = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
      tp.yield %y : tensor<4xf32>
    } : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}"""

_RECURSIVE = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
    %d = tp.section "d" on [0, 1] {
      %a = arith.addf %x, %x : tensor<4xf32>
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    %e = func.call @layer(%d) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %e : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}"""


@pytest.mark.parametrize(
    ("text", "reason"), [(_NESTED, "[section-chip]"), (_RECURSIVE, "[opaque-call]")]
)
@pytest.mark.parametrize(
    "spec",
    ["tp-verify", "tp-relocate", "tp-fuse", "tp-transfers", "tp-phase", "tp-link-points"],
)
def test_bad_calls_are_located_refusals(text: str, reason: str, spec: str) -> None:
    module, _ = parse_module(CTX, text, "<bad>")
    with pytest.raises(TpDiagnostic) as err:
        lowered(module, spec)
    assert reason in str(err.value) and err.value.op is not None
    assert err.value.op.name == "func.call"


# -- the property ----------------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(1, 3), chips=st.sampled_from([1, 2, 4]), position=st.integers(0, 15))
def test_flat_and_outlined_lowerings_agree(layers: int, chips: int, position: int) -> None:
    cfg = tiny(layers=layers, chips=chips)
    flat, outlined = stage(cfg, False, PHASED), stage(cfg, True, PHASED)
    values = values_for(program(cfg, False), position)
    want = run_program(program(cfg, False), values)
    assert_bitwise(want, run_program(outlined, values, storage=True), "phased")
    assert_bitwise(want, run_program(flat, values, storage=True), "flat phased")
    programs = lowered(outlined, "tp-link-points")
    assert_bitwise(want, run_program(programs, values, storage=True), "per-chip programs")
    # Per-chip functions halt and trade buffers as the flat programs they stand for do.
    inlined = lowered(outlined, "tp-inline,tp-link-points")
    assert relay_steps(entry_function(programs)) == relay_steps(entry_function(inlined))
