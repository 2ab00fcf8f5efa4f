"""The ring all-reduce down to per-chip programs, and the ring folds the certificate accepts.

tp-transfers spells a ring as a reduce-scatter of rotated folds (slice s: chips s+1, ..., s,
one add a section, on the chip whose partial it adds, the sum so far sent to the next chip)
and an all-gather (each reduced slice from its chip to every chip). Checked here: that shape,
by hand-countable invariants at N = 2..6; the numbers on generated Qwen3 programs at every
stage, under value and storage semantics (the source's to f32 rounding, bitwise alike from
the sectioned program to per-chip programs); that a ring fold written in a source program is
certified, stays a fold (tp-raise-allreduce must not round it otherwise) and lowers to the
very same sums; and that ring folds broken in any way the certificate excludes — a chip
twice, an order no rotation has, a partial sum read elsewhere (on any chip a copy of it
reaches), spine data added in — are refused, at every stage a ring reaches.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from helpers import program, tiny_on
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, check_ir, parse
from leak_injection import FOLD_MUTATORS
from random_programs import Program, programs
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.certify.folds import find_folds
from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.touch import statements
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import AllReduceOp, SectionOp, TransferOp
from tp_dialect.reject import TpReject
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function

RING = "tp-relocate{allreduce=ring},tp-transfers"


def lone_allreduce(n: int, width: int) -> str:
    """Each chip's partial made on the chip, summed, the sum read on every chip."""
    t = [f"tensor<2x{width}xf32, #tp.chip<{c}>>" for c in range(n)]
    args = ", ".join(f"%x{c}: {t[c]}" for c in range(n))
    body = "\n".join(f"    %p{c} = arith.mulf %x{c}, %x{c} : {t[c]}" for c in range(n))
    parts = ", ".join(f"%p{c}" for c in range(n))
    return f"""builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @s({args}) -> tensor<2x{width}xf32> {{
{body}
    %s = tp.allreduce {parts} : {", ".join(t)} -> tensor<2x{width}xf32>
    %o = arith.addf %s, %s : tensor<2x{width}xf32>
    func.return %o : tensor<2x{width}xf32>
  }}
}}"""


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_the_ring_is_rotated_folds_passed_between_neighbours(n: int) -> None:
    """Invariant: a ring over N chips (a 2x7 tensor: slices of 2 or 1 columns) becomes N
    folds, slice s adding chips s+1, ..., s (mod N) in that order, each add in a section on
    the one chip whose partial it adds; what crosses is slice s of chip s+1's partial to chip
    s+2, each sum so far to the next chip, and each reduced slice from chip s to the N-1
    others: 2N(N-1) transfers, never a whole partial; the program is certified."""
    module = parse(lone_allreduce(n, 7))
    apply(module, RING)
    check_ir(module)
    check_obligation(module)
    assert not any(isinstance(op, AllReduceOp) for op in module.walk())
    folds = sorted(find_folds(module), key=lambda f: chip_of(f.partials[-1].type) or 0)
    assert len(folds) == n
    sums: dict[object, int] = {}  # each fold's partial sums, and the chip that makes each
    for s, fold in enumerate(folds):
        assert fold.chips == tuple((s + 1 + k) % n for k in range(n)), fold.chips
        assert fold.is_allreduce(n)
        assert fold.in_chip_order(n) == (s == n - 1)  # only slice N-1 starts on chip 0
        for add, partial in zip(fold.ops, fold.partials[1:], strict=True):
            section = add.parent_op()
            assert isinstance(section, SectionOp)
            assert section.chip_list == (chip_of(partial.type),)
            sums[section.outs[0]] = section.chip_list[0]
    moves = [op for op in statements(entry_function(module)) if isinstance(op, TransferOp)]
    assert len(moves) == 2 * n * (n - 1)
    finals = {fold.result: chip_of(fold.partials[-1].type) for fold in folds}
    for move in moves:
        v = move.input
        if v in finals:  # the all-gather: from chip s to every other chip
            assert move.src == finals[v]
        else:  # a slice of a partial or a sum so far: to the next chip only
            assert move.dst == (move.src + 1) % n, (v.name_hint, move.src, move.dst)
            assert v in sums or chip_of(v.type) == move.src
        assert v.type.get_shape()[1] < 7  # type: ignore[attr-defined]
    assert sorted((finals[m.input], m.dst) for m in moves if m.input in finals) == sorted(
        (a, b) for a in range(n) for b in range(n) if a != b
    )


def test_a_one_chip_ring_is_the_partial() -> None:
    module = parse(lone_allreduce(1, 3))
    apply(module, RING + ",tp-link-points")
    (op,) = [op for op in module.walk() if isinstance(op, AllReduceOp)]
    assert op.algorithm_name == "fold"


def _refused_at(stage: str, module: ModuleOp, message: str) -> None:
    """``stage`` refuses ``module``'s one all-reduce, located at it, with ``message``."""
    (op,) = [op for op in module.walk() if isinstance(op, AllReduceOp)]
    with pytest.raises(TpDiagnostic) as err:
        apply(module, stage)
    assert err.value.op is op
    assert err.value.message == message


def test_a_ring_no_axis_cuts_stays_one_collective_and_is_not_linkable() -> None:
    """Invariant: with no axis of N elements (2x2 over 3 chips) tp-transfers leaves the ring
    one collective, its numbers the seed's; tp-link-points refuses it, located, saying why."""
    module = parse(lone_allreduce(3, 2))
    apply(module, RING)
    (op,) = [op for op in module.walk() if isinstance(op, AllReduceOp)]
    assert op.algorithm_name == "ring"
    _refused_at(
        "tp-link-points",
        module,
        "a ring all-reduce of tensor<2x2xf32> over 3 chips needs an axis of at least 3 "
        "elements to give every chip a slice before per-chip programs can hold it: relocate "
        "with allreduce=fold, oneshot or auto [not-linkable]",
    )


def test_a_twoshot_no_axis_cuts_is_refused_by_tp_transfers() -> None:
    """Invariant: a two-shot all-reduce is spelled over N slices; with no axis of N elements
    (2x2 over 3 chips) tp-transfers refuses it, located, naming the way out."""
    module = parse(lone_allreduce(3, 2))
    apply(module, "tp-relocate{allreduce=twoshot}")
    _refused_at(
        "tp-transfers",
        module,
        "a twoshot all-reduce of tensor<2x2xf32> over 3 chips needs an axis of at least 3 "
        "elements to give every chip a slice: choose another algorithm [not-linkable]",
    )


def _rounded(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    for name, w in want.items():
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5 * scale, err_msg=name)


def _same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    for name, w in want.items():
        np.testing.assert_array_equal(got[name], w, err_msg=name)


@pytest.mark.parametrize("chips", [2, 3, 4, 8])
@pytest.mark.parametrize("epilogue", [False, True])
def test_qwen3_on_a_ring_at_every_stage(chips: int, epilogue: bool) -> None:
    """Invariant: a 2-layer tiny Qwen3 with ring all-reduces (and their fused epilogue, or
    not) is certified sectioned, phased and as per-chip programs under the relay; its outputs
    are the source's to f32 rounding, and bitwise the same at every stage and under value and
    storage semantics."""
    source = program(tiny_on(chips, layers=2))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=5)}
    want = run_program(source, values)
    module = source.clone()
    fused = " epilogue=true shim=sn40l" if epilogue else ""
    apply(module, f"tp-relocate{{allreduce=ring{fused}}},tp-transfers")
    sectioned = run_program(module, values)
    _rounded(sectioned, want)
    for stage in ("tp-phase", "tp-link-points,tp-relay"):
        apply(module, stage)
        check_ir(module)
        check_obligation(module)
        _same(run_program(module, values), sectioned)
        _same(run_program(module, values, storage=True), sectioned)


# -- ring folds in source programs ------------------------------------------------------------


@dataclass(frozen=True)
class WithRingFold:
    """A random program that also returns ``%ring``: a fold over one partial per chip, in
    the rotation of chip order that starts at chip ``start`` (0: chip order itself)."""

    prog: Program
    start: int

    def text(self) -> str:
        prog, n = self.prog, self.prog.n
        chips = [(self.start + k) % n for k in range(n)]
        r, c = prog.shape
        x = prog.args[0][0]  # a spine input of the program's shape
        sl = f"#tp.slice<axis = 0, ranges = [(0, {r})], full = [{r}, {c}]>"
        lines: list[str] = []
        for chip in chips:
            t = prog.tensor_type(chip)
            lines.append(f"%rp{chip} = tp.shard %{x} at {sl} : {prog.tensor_type(None)} -> {t}")
            lines.append(f"%rq{chip} = arith.mulf %rp{chip}, %rp{chip} : {t}")
        spine = prog.tensor_type(None)
        lines.append(f"%rz = tensor.empty() : {spine}")
        acc = f"rq{chips[0]}"
        for k, chip in enumerate(chips[1:], start=1):
            out = "ring" if k == n - 1 else f"racc{k}"
            acc_t = prog.tensor_type(chips[0] if k == 1 else None)
            lines.append(
                f"%{out} = linalg.add ins(%{acc}, %rq{chip} : {acc_t}, "
                f"{prog.tensor_type(chip)}) outs(%rz : {spine}) -> {spine}"
            )
            acc = out
        returning = replace(prog, results=[*prog.results, ("ring", spine, "ring")])
        # First: before any statement updates an input in place (storage semantics would
        # then read the update).
        return returning.text({0: lines})

    def __repr__(self) -> str:
        return f"WithRingFold(start={self.start}):\n{self.text()}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """What Hypothesis prints for a falsifying example: the program's text."""
        printer.text(repr(self))


@st.composite
def with_ring_fold(draw: st.DrawFn) -> WithRingFold:
    prog = draw(programs(chips=st.integers(2, 4), max_statements=12))
    return WithRingFold(prog, draw(st.integers(0, prog.n - 1)))


@settings(max_examples=40, **SETTINGS)
@given(with_ring_fold(), st.sampled_from(["fold", "oneshot"]))
def test_a_ring_fold_is_certified_kept_and_lowered_to_the_same_sums(
    case: WithRingFold, algorithm: str
) -> None:
    """Invariant: tp-verify certifies a fold in any rotation of chip order; tp-raise-allreduce
    raises it only in chip order; every stage down to per-chip programs under the relay (the
    program's own all-reduces by ``algorithm``, which adds in chip order) is certified and
    computes the source's outputs bitwise, under value and storage semantics — a rotated fold
    lowered as spine adds on every chip, in its own order."""
    text, n = case.text(), case.prog.n
    want = run_program(parse(text), case.prog.inputs)
    module = parse(text)
    apply(module, "tp-verify,tp-raise-allreduce")
    ring = [f for f in find_folds(module) if f.result.name_hint == "ring"]
    if case.start == 0:
        assert not ring  # raised: one tp.allreduce, adding in chip order as the fold did
    else:
        (fold,) = ring
        assert fold.is_allreduce(n) and not fold.in_chip_order(n)
    for spec in (f"tp-relocate{{allreduce={algorithm}}}", "tp-transfers", "tp-phase"):
        apply(module, spec)
        check_obligation(module)
        _same(run_program(module, case.prog.inputs), want)
    apply(module, "tp-link-points,tp-relay")
    check_ir(module)
    check_obligation(module)
    _same(run_program(module, case.prog.inputs), want)
    _same(run_program(module, case.prog.inputs, storage=True), want)


# -- broken ring folds ------------------------------------------------------------------------

STAGES: dict[str, tuple[bool, str]] = {
    "source, seed's folds": (True, ""),
    "ring, sectioned": (False, RING),
    "ring, phased": (False, RING + ",tp-phase"),
    "ring, per-chip programs": (False, RING + ",tp-phase,tp-link-points,tp-relay"),
}


@functools.cache
def staged(chips: int, stage: str) -> ModuleOp:
    fold, passes = STAGES[stage]
    module = program(tiny_on(chips, fold=fold)).clone()
    if passes:
        apply(module, passes)
    check_obligation(module)  # certified before it is broken
    return module


def _refused(module: ModuleOp, what: str) -> TpDiagnostic:
    try:
        check_obligation(module)
    except TpDiagnostic as diag:
        return diag
    pytest.fail(f"tp-verify certified a program with {what}")


@pytest.mark.parametrize("kind", sorted(FOLD_MUTATORS))
@settings(max_examples=40, **SETTINGS)
@given(
    chips=st.sampled_from([2, 3, 4]),
    stage=st.sampled_from(sorted(STAGES)),
    seed=st.integers(0, 2**32 - 1),
)
def test_broken_ring_folds_in_qwen3_are_refused(
    kind: str, chips: int, stage: str, seed: int
) -> None:
    """Invariant: a generated Qwen3's folds (the seed's, or a ring's rotated ones at every
    stage, per-chip programs included) with a chip twice, two partials swapped out of any
    rotation, a partial sum read once more (where it is made, or where a copy of it arrives)
    or spine data in place of a partial are refused; an order or a read that breaks only
    the fold's rule is refused by that rule (fold-not-allreduce, or fold-mixes-spine for
    the rest of a fold cut short), named before the leaks that follow from it."""
    module = staged(chips, stage).clone()
    what = FOLD_MUTATORS[kind](module, random.Random(seed))
    assert what is not None  # every such stage holds folds
    diag = _refused(module, f"{kind}: {what} (N={chips}, {stage})")
    if "swapped" in what or "also read" in what:
        # The fold cut short by the extra read, or the rest of it that then starts from a
        # partial sum (spine data to its adds): either way the fold's own rule.
        fold_rules = (TpReject.FOLD_NOT_ALLREDUCE, TpReject.FOLD_MIXES_SPINE)
        assert diag.message.endswith(tuple(f"[{r.value}]" for r in fold_rules)), diag.message


@settings(max_examples=40, **SETTINGS)
@given(
    prog=programs(chips=st.integers(2, 4)),
    kind=st.sampled_from(sorted(FOLD_MUTATORS)),
    seed=st.integers(0, 2**32 - 1),
)
def test_broken_ring_folds_in_random_per_chip_programs_are_refused(
    prog: Program, kind: str, seed: int
) -> None:
    """Invariant: the same breaks in random programs lowered with ring all-reduces to
    per-chip programs (where an axis cuts into N slices) are refused."""
    module = parse(prog.text())
    apply(module, RING + ",tp-phase")
    assume(not any(isinstance(op, AllReduceOp) for op in module.walk()))
    apply(module, "tp-link-points,tp-relay")
    check_obligation(module)
    what = FOLD_MUTATORS[kind](module, random.Random(seed))
    assume(what is not None)
    _refused(module, f"{kind}: {what}")


def test_a_rotated_prefix_takes_each_chip_once_from_one_in_range() -> None:
    """The fold finder's test for chip order or a rotation of it (which a ring's folds and
    the leak campaign's swapped partials reach only now and then)."""
    from tp_dialect.analysis.certify.folds import _rotated_prefix

    assert _rotated_prefix((1, 2, 0), 3) and _rotated_prefix((2, 0), 3)
    assert _rotated_prefix((0, 1), 2)
    assert not _rotated_prefix((), 3)  # no partial yet
    assert not _rotated_prefix((None, 0), 2)  # a spine value
    assert not _rotated_prefix((3, 0), 3)  # a chip the grid does not have
    assert not _rotated_prefix((0, 1, 0), 2)  # longer than N: a chip twice
    assert not _rotated_prefix((0, 2), 3)  # a chip skipped
