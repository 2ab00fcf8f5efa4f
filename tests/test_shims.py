"""Chip legality: every shim answers every op class, every generated op has a class, the
TP wrapper's refusals, and tp-fuse keeping the numbers with fewer sections and phases."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import program, tiny
from hypothesis import given, settings
from ir_helpers import SETTINGS, apply, parse
from random_programs import Program, programs
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from tp_dialect.analysis.certify.folds import find_folds
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.schedule.stats import pipeline_stats
from tp_dialect.analysis.touch import is_statement
from tp_dialect.attrs import chip_of
from tp_dialect.ops import AllReduceOp, SectionOp, YieldOp
from tp_dialect.program_ops import ChipProgramOp, RelayOp
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.shims import (
    BF16,
    SHIMS,
    OpClass,
    QuantFormat,
    Shim,
    Sn40lShim,
    Support,
    TensorParallelShim,
    classify,
    fusion,
)
from tp_dialect.signature import entry_function


@pytest.mark.parametrize("name", sorted(SHIMS))
def test_every_shim_answers_every_class(name: str) -> None:
    """A class added to OpClass that some shim's match does not answer fails here."""
    shim = SHIMS[name]
    for cls in OpClass:
        assert isinstance(shim.supports(cls), Support), f"{shim.name()} does not answer {cls}"
        assert isinstance(TensorParallelShim(shim, _provenance()).supports(cls), Support)


def _provenance() -> Provenance:
    return Provenance(program(tiny(chips=1)))


def test_every_op_of_a_generated_program_has_a_known_class() -> None:
    module = program(tiny(chips=2, layers=1, fused_qkv=True))
    classes = {
        classify(op)
        for op in module.walk()
        if op.parent_op() is not None and op.parent_op().name == "func.func"
    }
    assert OpClass.OTHER not in classes
    assert {
        OpClass.MATMUL,
        OpClass.NORM,
        OpClass.ROPE,
        OpClass.SOFTMAX,
        OpClass.COLLECTIVE,
        OpClass.CACHE_SCATTER,
        OpClass.LOAD,
        OpClass.STORE,
    } <= classes


def test_every_op_the_lowering_writes_has_a_known_class() -> None:
    """Transfers, barriers, link points, per-chip programs and the relay are classed (a
    collective or control), so tp-legalize on sn40l can check every stage."""
    module = program(tiny(chips=2, layers=1)).clone()
    apply(module, "tp-relocate{allreduce=twoshot},tp-transfers,tp-phase")
    phased = {classify(op) for op in _statements(module)}
    apply(module, "tp-link-points,tp-relay")
    linked = {classify(op) for op in _statements(module)}
    assert OpClass.OTHER not in phased | linked
    kinds = {type(op).__name__: classify(op) for op in _statements(module)}
    assert kinds["LinkOp"] is kinds["CopyOp"] is OpClass.COLLECTIVE
    assert kinds["ChipProgramOp"] is kinds["RelayOp"] is kinds["FinishOp"] is OpClass.SCALAR


def _statements(module: ModuleOp) -> list[Operation]:
    """The ops tp-legalize classes: those in a function, section, program or the relay
    (a section itself is checked as a fused op)."""
    places = (FuncOp, SectionOp, ChipProgramOp, RelayOp)
    return [
        op
        for op in module.walk()
        if isinstance(op.parent_op(), places) and not isinstance(op, SectionOp)
    ]


def test_int8_activations_are_read_by_matmuls_only() -> None:
    module = program(tiny(chips=2))
    matmul = next(op for op in module.walk() if classify(op) is OpClass.MATMUL)
    norm = next(op for op in module.walk() if classify(op) is OpClass.NORM)
    assert SHIMS["sn40l-int8"].activation(matmul, 0) == QuantFormat("int8", "per-tensor")
    # everything else the chip builds reads its float activations as bf16
    assert SHIMS["sn40l-int8"].activation(matmul, 1) == BF16
    assert SHIMS["sn40l-int8"].activation(norm, 0) == BF16
    assert SHIMS["sn40l"].activation(matmul, 0) == BF16
    assert SHIMS["reference"].activation(matmul, 0) is None


@settings(max_examples=40, **SETTINGS)
@given(programs())
def test_no_fused_section_spans_chips_or_holds_a_fold(prog: Program) -> None:
    """After tp-fuse under the TP shim no section of several ops binds two chips' tensors, a
    chip's and the spine's, or holds an all-reduce or a fold; the numbers are unchanged
    through fuse, relocate, transfers and phase."""
    module = parse(prog.text())
    folds = {op for f in find_folds(module) for op in f.ops}
    apply(module, "tp-fuse{shim=reference}")
    for section in (op for op in module.walk() if isinstance(op, SectionOp)):
        ops = [op for op in section.body.block.ops if not isinstance(op, YieldOp)]
        assert len(ops) > 1
        bound = {chip_of(r.type) for op in ops for r in op.results}
        assert len(bound) == 1, f"fused section binds chips {bound}"
        assert not any(isinstance(op, AllReduceOp) or op in folds for op in ops)
    apply(module, "tp-relocate,tp-transfers,tp-phase")
    got = run_program(module, prog.inputs)
    for name, want in prog.expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("chips", [2, 4])
def test_fusing_qwen3_keeps_the_numbers_with_fewer_sections_and_phases(chips: int) -> None:
    cfg = tiny(chips=chips, layers=2)
    source = program(cfg)
    plain, fused = source.clone(), source.clone()
    apply(plain, "tp-relocate,tp-transfers,tp-phase")
    apply(fused, "tp-fuse{shim=sn40l},tp-relocate,tp-transfers,tp-phase")
    values = {**random_weights(source, 5), **random_inputs(source, 6, position=4)}
    want, got = run_program(source, values), run_program(fused, values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    for a, b in zip(pipeline_stats(plain), pipeline_stats(fused), strict=True):
        if a.layer.startswith("layer"):
            assert b.sections < a.sections and len(b.phases) < len(a.phases)


def _grown_as_whole(module, shim: Shim) -> int:
    """Grow a fusion from each statement over the ones after it, as tp-fuse does: each
    ``admit`` answers as ``fits`` on the whole does, and an admitted op joins. The number of
    answers compared."""
    ops = [op for op in entry_function(module).body.block.ops if is_statement(op)]
    asked = 0
    for i, first in enumerate(ops):
        grown, members = fusion(shim, first), [first]
        for op in ops[i + 1 : i + 12]:
            want = shim.fits([*members, op])
            assert grown.admit(op) == want, (shim.name(), [m.name for m in members], op.name)
            asked += 1
            if want is None:
                members.append(op)
    return asked


_BASES = [*SHIMS.values(), Sn40lShim(sram_bytes=64.0)]  # a small SRAM: staging refusals too


@settings(max_examples=30, **SETTINGS)
@given(programs())
def test_a_fusion_grown_op_by_op_answers_as_fits_on_the_whole(prog: Program) -> None:
    module = parse(prog.text())
    prov = Provenance(module)
    for base in _BASES:
        _grown_as_whole(module, base)
        _grown_as_whole(module, TensorParallelShim(base, prov))


@pytest.mark.parametrize("chips", [1, 2])
def test_a_fusion_of_qwen3_grown_op_by_op_answers_as_fits_on_the_whole(chips: int) -> None:
    module = program(tiny(chips=chips, layers=1))
    prov = Provenance(module)
    for base in _BASES:
        assert _grown_as_whole(module, TensorParallelShim(base, prov)) > 0


def test_the_sn40l_shim_reads_the_machine_description() -> None:
    """Invariant: the SN40L's SRAM is stated once, in the machine description; the shim's is
    that very number (the same object, not an equal literal written again)."""
    from tp_dialect.machine import MACHINES

    assert Sn40lShim().sram_bytes is MACHINES["sn40l"].sram_bytes
    assert SHIMS["sn40l-int8"].sram_bytes == MACHINES["sn40l"].sram_bytes  # type: ignore[attr-defined]
