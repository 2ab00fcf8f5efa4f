"""A greedy token from N chips by ``tp.maxloc`` equals numpy's argmax at every stage.

A vocab-parallel LM head (tests/head_programs.py: chip c holds rows ``[o_c, o_c + n_c)`` of
the head, ``ceil(V/N)`` a chip, the last chip the rest) run as written, relocated (fold,
oneshot, auto), transferred, phased, as per-chip programs under the relay, and on MPI ranks;
each stage certified by the maxloc rule (docs/certificate.md) and its token checked against
a plain numpy argmax (the first index of the maximum; ties across chips: the smallest). Each
fault of the rule is refused naming the chip and the reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from head_programs import (
    from_zero,
    head_program,
    last_maximum,
    logits_program,
    reference,
    two_generics,
    two_runs,
    vocab_runs,
    wrong_offset,
)
from helpers import tool
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, check_ir, parse
from safetensors.numpy import save_file

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import MaxLocOp
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program

STAGES = ("tp-transfers", "tp-phase", "tp-link-points,tp-relay")
BIN = Path(sys.executable).parent


def _values(text: str, seed: int) -> dict[str, np.ndarray]:
    module = parse(text)
    return {**random_weights(module, seed), **random_inputs(module, seed + 1, position=0)}


def _want(values: dict[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """numpy's argmax of the float64 logits, the test data holding no near-tie that f32
    rounding could flip (a clear margin between the largest logit and the next)."""
    want = reference(values, layers)
    top2 = np.sort(want["logits"].astype(np.float64), axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0] > 1e-3).all(), "seed gives a near-tie: pick another"
    return want


def _check(got: dict[str, np.ndarray], want: dict[str, np.ndarray], stage: str) -> None:
    np.testing.assert_array_equal(got["next_ids"], want["next_ids"], err_msg=stage)
    if "logits" in got:
        np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("chips", "vocab", "algorithm", "outline", "logits"),
    [
        (2, 7, "fold", False, False),
        (2, 7, "oneshot", True, True),
        (3, 7, "fold", True, False),
        (3, 7, "oneshot", False, True),
        (3, 7, "auto", False, False),
        (4, 10, "auto", True, False),
    ],
)
def test_every_stage_picks_numpys_argmax(
    chips: int, vocab: int, algorithm: str, outline: bool, logits: bool
) -> None:
    text = head_program(
        chips, hidden=4 * chips, vocab=vocab, outline=outline, logits=logits, layers=1
    )
    values = _values(text, 7)
    want = _want(values, layers=1)
    source = parse(text)
    check_obligation(source)
    _check(run_program(source, values), want, "source")
    module = parse(text)
    apply(module, f"tp-relocate{{maxloc={algorithm}}}")
    chosen = {op.algorithm_name for op in module.walk() if isinstance(op, MaxLocOp)}
    assert len(chosen) == 1 and chosen <= {"fold", "oneshot"}
    for stage in ("tp-relocate", *STAGES):
        if stage != "tp-relocate":
            apply(module, stage)
        check_ir(module)
        check_obligation(module)
        _check(run_program(module, values), want, stage)
        _check(run_program(module, values, storage=True), want, f"{stage} (storage)")


@pytest.mark.parametrize("algorithm", ["fold", "oneshot"])
def test_ties_across_chips_go_to_the_smallest_index(algorithm: str) -> None:
    """Rows 1, 4 and 6 of the head are one vector (on chips 0, 1 and 2 of V = 7 on 3 chips),
    the rest zeros: every logit ties with another on a second chip; numpy's first index
    of the maximum is the answer (1 where that vector scores above 0, else 0). The vector
    has one nonzero entry, so a logit is one product plus zeros: the ties are exact whatever
    order a chip's BLAS kernel sums in (with a dense vector they were not on every CPU)."""
    text = head_program(3, batch=4, hidden=6, vocab=7, layers=0)
    values = _values(text, 3)
    head = np.zeros_like(values["lm_head.weight"])
    head[[1, 4, 6], 0] = 0.75
    values["lm_head.weight"] = head
    values["model.norm.weight"] = np.abs(values["model.norm.weight"]) + 0.5
    values["x"][:2, 0] = np.abs(values["x"][:2, 0]) + 0.5  # two rows pick 1
    values["x"][2:, 0] = -np.abs(values["x"][2:, 0]) - 0.5  # two pick 0
    want = reference(values, layers=0)
    assert want["next_ids"].tolist() == [1, 1, 0, 0]  # the data ties as intended
    module = parse(text)
    apply(module, f"tp-relocate{{maxloc={algorithm}}},{','.join(STAGES)}")
    np.testing.assert_array_equal(run_program(module, values)["next_ids"], want["next_ids"])


@pytest.mark.parametrize(("algorithm", "relay"), [("fold", "direct"), ("oneshot", "host")])
def test_on_mpi_ranks(tmp_path: Path, algorithm: str, relay: str) -> None:
    """V = 7 on 3 ranks, the layer outlined: tp-run --mpi's token is numpy's argmax."""
    text = head_program(3, hidden=6, vocab=7, outline=True, logits=True)
    src, ckpt, inputs, out = (tmp_path / n for n in ("h.mlir", "w.st", "in.npz", "out.npz"))
    src.write_text(text)
    values = _values(text, 11)
    module = parse(text)
    weights = {k: v for k, v in values.items() if k in random_weights(module, 0)}
    save_file(weights, str(ckpt))
    np.savez(inputs, x=values["x"])
    want = _want(values, layers=1)
    proc = subprocess.run(
        [str(BIN / "tp-run"), src, "--weights", ckpt, "--inputs", inputs, "--outputs", out,
         "--mpi", "3", "--allreduce", algorithm, "--relay", relay],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"on {3 + (relay == 'host')} MPI rank(s)" in proc.stdout
    with np.load(out) as got:
        _check({k: got[k] for k in got.files}, want, f"mpi {algorithm}")


_BASE = head_program(2, batch=1, hidden=2, vocab=7, layers=0)  # runs [0, 4), [4, 7)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (wrong_offset(_BASE, 1, 4), r"chip 1's pair .*linalg.index \+ 5.*\[slices-misaligned\]"),
        (
            head_program(2, batch=1, hidden=2, vocab=7, layers=0, runs=[(0, 4), (3, 4)]),
            r"chips 0 and 1 both pick from \[3, 4\).*\[slices-overlap\]",
        ),
        (
            head_program(2, batch=1, hidden=2, vocab=7, layers=0, runs=[(0, 3), (4, 3)]),
            r"no chip picks from \[3, 4\).*\[slices-gap\]",
        ),
        (
            two_runs(head_program(2, batch=1, hidden=2, vocab=8, layers=0), 0, [(0, 2), (4, 2)]),
            r"chip 0's pair .*holding \[0, 2\) \+ \[4, 6\) of 8.*\[slices-misaligned\]",
        ),
        (
            two_generics(_BASE, 0),
            r"chip 0's pair .*not the two results of one argmax.*\[not-argmax\]",
        ),
        (last_maximum(_BASE, 1), r"chip 1's pair .*not an argmax as tp writes one.*\[not-argmax\]"),
        (from_zero(_BASE, 1), r"chip 1's pair .*not from a fill of -inf.*\[not-argmax\]"),
    ],
    ids=["wrong-offset", "overlap", "gap", "two-runs", "two-generics", "last-max", "not-ninf"],
)
def test_each_fault_is_refused_naming_chip_and_reason(text: str, match: str) -> None:
    check_obligation(parse(_BASE))  # the sound twin is certified
    module = parse(text)
    with pytest.raises(TpDiagnostic, match=match):
        check_obligation(module)


def test_the_faults_are_refused_after_lowering_too() -> None:
    """The rule follows the pairs through sections, transfers and per-chip programs: a wrong
    offset is refused at every stage."""
    module = parse(wrong_offset(_BASE, 1, 4))
    for stage in ("tp-relocate{maxloc=oneshot}", *STAGES):
        apply(module, stage)
        with pytest.raises(TpDiagnostic, match=r"chip 1's pair .*\[slices-misaligned\]"):
            check_obligation(module)


def test_vocab_runs_give_the_last_chip_the_rest() -> None:
    assert vocab_runs(7, 3) == [(0, 3), (3, 3), (6, 1)]
    assert vocab_runs(7, 2) == [(0, 4), (4, 3)]


@st.composite
def _partitions(draw: st.DrawFn) -> tuple[list[tuple[int, int]], int, int]:
    """Runs cutting a vocab of V into N non-empty runs, dealt to the chips in a random
    order, and a batch."""
    vocab = draw(st.integers(2, 12))
    chips = draw(st.integers(2, min(4, vocab)))
    cuts = sorted(draw(st.sets(st.integers(1, vocab - 1), min_size=chips - 1, max_size=chips - 1)))
    bounds = [0, *cuts, vocab]
    runs = [(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]
    order = draw(st.permutations(runs))
    return list(order), vocab, draw(st.integers(1, 3))


@settings(max_examples=25, **SETTINGS)
@given(
    part=_partitions(),
    seed=st.integers(0, 2**16),
    algorithm=st.sampled_from(["fold", "oneshot"]),
)
def test_any_partition_picks_numpys_first_maximum(
    part: tuple[list[tuple[int, int]], int, int], seed: int, algorithm: str
) -> None:
    """Invariant: for runs that partition the axis, dealt to the chips in any order, the
    program is certified and its maxloc is numpy's (max, first argmax) at the source and
    as per-chip programs — logits drawn from five integers, so ties across chips abound."""
    runs, vocab, batch = part
    logits = np.random.default_rng(seed).integers(-2, 3, (batch, vocab)).astype(np.float32)
    want = [logits.max(1), np.argmax(logits, axis=1).astype(np.int64)]
    text = logits_program(runs, batch, vocab)
    module = parse(text)
    check_obligation(module)
    for stage in ("", f"tp-relocate{{maxloc={algorithm}}},{','.join(STAGES)}"):
        if stage:
            apply(module, stage)
            check_obligation(module)
        got = run_program(module, {"logits": logits})
        np.testing.assert_array_equal(got["result0"], want[0], err_msg=stage)
        np.testing.assert_array_equal(got["result1"], want[1], err_msg=stage)


@settings(max_examples=25, **SETTINGS)
@given(part=_partitions(), data=st.data())
def test_runs_that_do_not_partition_are_refused(
    part: tuple[list[tuple[int, int]], int, int], data: st.DataObject
) -> None:
    """Invariant: one run grown or shrunk by one position at either end (an overlap or a
    gap) is refused, naming the positions."""
    runs, vocab, batch = part
    c = data.draw(st.integers(0, len(runs) - 1))
    start, n = runs[c]
    moves = [(start - 1, n + 1), (start + 1, n - 1), (start, n + 1), (start, n - 1)]
    legal = [(s, k) for s, k in moves if s >= 0 and k >= 1 and s + k <= vocab]
    assume(legal)
    runs[c] = data.draw(st.sampled_from(legal))
    module = parse(logits_program(runs, batch, vocab))
    with pytest.raises(TpDiagnostic, match=r"\[slices-(overlap|gap)\]"):
        check_obligation(module)


@pytest.mark.parametrize("shim", ["reference", "sn40l", "sn40l-int8"])
@pytest.mark.parametrize("algorithm", ["fold", "oneshot"])
def test_the_shims_admit_what_the_passes_build(shim: str, algorithm: str) -> None:
    """Sized for the sn40l tiles (contractions over multiples of 8): tp-fuse, tp-relocate,
    tp-transfers, tp-phase and tp-link-points' output each pass tp-legalize."""
    module = parse(head_program(2, batch=8, hidden=32, vocab=24, outline=True, logits=True))
    for stage in (
        f"tp-fuse{{shim={shim}}}",
        f"tp-relocate{{maxloc={algorithm}}}",
        "tp-transfers,tp-phase",
        "tp-link-points",
    ):
        apply(module, f"{stage},tp-legalize{{shim={shim}}}")  # raises if not admitted
    check_obligation(module)


def test_the_model_charges_a_maxloc_in_every_mode(tmp_path: Path) -> None:
    src = tmp_path / "h.mlir"
    src.write_text(head_program(3, hidden=6, vocab=7, outline=True))
    proc = tool("tp-run", src, "--dry-run", "--mode", "all", "--allreduce", "oneshot")
    assert proc.returncode == 0, proc.stderr
    for mode in ("sequential", "phase", "relay", "dataflow"):
        assert f"({mode} mode)" in proc.stdout
