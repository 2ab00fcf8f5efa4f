"""Every all-reduce algorithm keeps the numbers at every stage.

fold (the seed's), oneshot and twoshot add the partials in chip order on whichever chip adds
them, so their outputs are bitwise the source program's; ring is held to f32 rounding. Each
runs sectioned, phased, and as per-chip programs under the relay (a ring or twoshot spelled
out by tp-transfers; one that no axis cuts into N slices is refused by name); auto picks per
all-reduce and keeps the numbers too. Random programs (Hypothesis) and generated tiny Qwen3
at N = 2, 4, 8, both checked against their source program on the reference interpreter
(itself checked against an independent numpy model).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import program, tiny
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, check_ir, parse
from random_programs import Program, programs

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.timing.cost import split_axis
from tp_dialect.analysis.touch import collective
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import AllReduceOp, SectionOp, YieldOp
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program

ALGORITHMS = ("fold", "ring", "oneshot", "twoshot", "auto")
STAGES = (
    "tp-transfers",
    "tp-phase",
    "tp-link-points,tp-relay",
)


def _same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], exact: bool) -> None:
    assert set(got) == set(want)
    for name in want:
        if exact:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
        else:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6, err_msg=name)


def _splittable(module: object, n: int) -> bool:
    return all(
        split_axis(op.result.type, n) is not None  # type: ignore[arg-type]
        for op in module.walk()  # type: ignore[attr-defined]
        if isinstance(op, AllReduceOp)
    )


def _relocate(algorithm: str, epilogue: bool) -> str:
    fused = " epilogue=true shim=sn40l" if epilogue else ""
    return f"tp-relocate{{allreduce={algorithm}{fused}}}"


@settings(max_examples=50, **SETTINGS)
@given(prog=programs(), algorithm=st.sampled_from(ALGORITHMS), epilogue=st.booleans())
def test_every_algorithm_keeps_the_numbers_at_every_stage(
    prog: Program, algorithm: str, epilogue: bool
) -> None:
    """Invariant: after tp-relocate with the algorithm (and a fused epilogue or not), then
    each later stage, the outputs are the source's (bitwise but for ring), the IR verifies
    and is certified."""
    source = parse(prog.text())
    want = run_program(source, prog.inputs)
    module = parse(prog.text())
    apply(module, f"tp-raise-allreduce,{_relocate(algorithm, epilogue)}")
    exact = algorithm != "ring"
    _same(run_program(module, prog.inputs), want, exact)
    raised = parse(prog.text())
    apply(raised, "tp-raise-allreduce")
    if algorithm == "twoshot" and not _splittable(raised, prog.n):
        # No axis gives every chip a slice: refused, by name, at tp-transfers.
        with pytest.raises(TpDiagnostic, match=r"\[not-linkable\]"):
            apply(module, "tp-transfers")
        return
    ring_whole = algorithm == "ring" and not _splittable(raised, prog.n)
    for stage in STAGES:
        if ring_whole and "link-points" in stage:
            # No axis gives every chip a slice: the ring stays one collective, which
            # per-chip programs cannot hold: refused, by name.
            with pytest.raises(TpDiagnostic, match=r"\[not-linkable\]"):
                apply(module, stage)
            return
        apply(module, stage)
        check_ir(module)
        check_obligation(module)
        _same(run_program(module, prog.inputs), want, exact)
        _same(run_program(module, prog.inputs, storage=True), want, exact)


@pytest.mark.parametrize("chips", [2, 4, 8])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("epilogue", [False, True])
def test_every_algorithm_keeps_qwen3s_numbers(chips: int, algorithm: str, epilogue: bool) -> None:
    source = program(tiny(chips=chips, layers=2 if epilogue else 1))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=5)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, f"{_relocate(algorithm, epilogue)},tp-transfers,tp-phase")
    linked = module.clone()
    apply(linked, "tp-link-points,tp-relay")
    stages = [module, linked]
    for lowered in stages:
        check_obligation(lowered)
        _same(run_program(lowered, values), want, exact=algorithm != "ring")


def test_auto_picks_oneshot_for_decode_all_reduces_on_sn40l() -> None:
    """A decode all-reduce (batch 1) is latency-bound: one link latency (oneshot) beats the
    seed's 2(N-1) serial transfers and twoshot's two steps."""
    module = program(tiny(chips=4, layers=1)).clone()
    apply(module, "tp-relocate{allreduce=auto}")
    chosen = {op.algorithm_name for op in module.walk() if isinstance(op, AllReduceOp)}
    assert chosen == {"oneshot"}


def _sections(module: object) -> list[SectionOp]:
    return [op for op in module.walk() if isinstance(op, SectionOp)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("algorithm", ["oneshot", "twoshot", "ring"])
def test_an_epilogue_carries_the_residual_add_and_rmsnorm(algorithm: str) -> None:
    """With the sum on every chip, the residual add and the next RMSNorm join the all-reduce's
    section (fewer sections, the sum not stored and re-read); fold sums on chip 0: none."""
    plain, fused = program(tiny(chips=4, layers=2)).clone(), program(tiny(chips=4, layers=2))
    fused = fused.clone()
    apply(plain, _relocate(algorithm, False))
    apply(fused, _relocate(algorithm, True))
    heads = [s for s in _sections(fused) if isinstance(collective(s), AllReduceOp)]
    assert len(heads) == 4  # two per layer
    docs = [
        [o.name for o in s.body.block.ops if not isinstance(o, AllReduceOp | YieldOp)]
        for s in heads
    ]
    # Every all-reduce carries the residual add; the first three also the RMSNorm after it
    # (its sum of squares and its scaling); the last feeds only the step's outputs.
    assert all(d and d[0] == "arith.addf" for d in docs)
    assert all(d.count("linalg.generic") == 2 for d in docs[:3])
    # Three sections (add, sum of squares, scaling) join each of the first three; one the last.
    assert len(_sections(plain)) - len(_sections(fused)) == 3 * 3 + 1


def test_fold_keeps_no_epilogue() -> None:
    plain, fused = program(tiny(chips=4, layers=1)).clone(), program(tiny(chips=4, layers=1))
    fused = fused.clone()
    apply(plain, _relocate("fold", False))
    apply(fused, _relocate("fold", True))
    assert str(plain) == str(fused)
