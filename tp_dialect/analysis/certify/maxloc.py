"""Argmaxes over runs that cover: a ``tp.maxloc`` of per-chip argmaxes is the whole argmax.

A vocab-parallel LM head's greedy token: chip c computes the logits of its run of the
vocabulary, its argmax over them with the index offset by the run's start, and one
``tp.maxloc`` picks, element by element, the largest value and on ties the smallest index.
`check_maxloc` holds every ``tp.maxloc`` to this rule:

**Claim.** Let ``(v, i) = maxloc_c (v_c, i_c)``. Certification requires, for every chip ``c``:

1. ``(v_c, i_c)`` are the two results — the value first — of one argmax ``A_c`` (through
   what hands data on unchanged: sections, programs, links, casts, copies, calls), in the
   one form `linalg_kinds.argmax` recognises: over its one reduced loop ``r`` it keeps the
   first strictly greater value and ``linalg.index r + k_c``, ``k_c`` a constant
   (``not-argmax``);
2. ``A_c``'s value starts from ``-inf`` and its index from a constant, the same on every
   chip (`linalg_kinds.filled_with`; ``not-argmax``): a chip whose logits lie below the
   start would report the start, not its own largest;
3. ``A_c`` reads its logits' axis ``a`` by ``r`` alone, and that axis holds ONE run
   ``[s_c, s_c + n_c)`` of a full axis of ``F`` positions (`analysis.positions`; several
   runs, or positions that cannot be told: ``slices-misaligned``, ``slices-gap``), and
   ``k_c = s_c``: the index it reports is the position of the logit it picked
   (``slices-misaligned``);
4. every chip's results hold the same positions of the result (it picks for the same
   elements: ``slices-misaligned``), over an axis of the same ``F``;

and across chips: 5. the runs are disjoint and cover ``[0, F)`` (``slices-overlap``,
``slices-gap``).

Then, element by element, ``v_c`` is the largest logit of run ``c`` (or ``-inf``) and ``i_c``
the position of its first occurrence (or the common start ``k``); the largest ``v_c`` is the
largest logit of the axis, and the smallest index among the chips holding it is the
position of its first occurrence in the whole axis — runs are disjoint, so positions order
the chips' candidates whatever the chip order: ``i`` is the argmax over ``[0, F)`` (``k`` when
no logit beats ``-inf``, as the unsplit argmax started from ``(-inf, k)`` says). What the
claim does not say: that the logits are the unsharded model's (``tp-run --check`` measures
that).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from tp_dialect.analysis.certify.coverage import (
    Calls,
    ModuleIndex,
    Tracer,
    Unproven,
    chains_to_check,
)
from tp_dialect.analysis.certify.positions import UNKNOWN, Axis, Positions
from tp_dialect.analysis.certify.provenance import Solver
from tp_dialect.linalg_kinds import argmax, filled_with, loop_view
from tp_dialect.names import value_name
from tp_dialect.ops import MaxLocOp
from tp_dialect.reject import TpReject

_WHAT = "the maxloc takes"


@dataclass(frozen=True)
class Pick:
    """What chip ``chip``'s pair picks from: its argmax ``op``, the run ``(start, length)``
    of the full axis of ``full`` positions its reduced loop holds (read off ``logits``), the
    positions its results hold, and the index it starts from."""

    chip: int
    op: Operation
    run: tuple[int, int]
    full: int
    out: Positions
    start: float
    logits: str


def check_maxloc(op: MaxLocOp, solver: Solver, index: ModuleIndex | None = None) -> None:
    """Raise a `TpReject` (``not-argmax``, ``slices-overlap``, ``slices-gap``,
    ``slices-misaligned``) when ``op`` takes pairs that break the rule of the module
    docstring, in any call chain reaching it, naming the chip and the reason. ``index``: the
    module's `ModuleIndex`, when several collectives are checked."""
    index = index or ModuleIndex(op.get_toplevel_object())
    contexts = chains_to_check(
        op, index, "the maxloc", "which runs its pairs pick from cannot be proven"
    )
    tracer = index.tracer(op, solver)
    for calls in contexts:
        picks: list[Pick] = []
        for chip, (value, idx) in enumerate(op.pairs()):
            try:
                picks.append(_pick(chip, value, idx, tracer, calls))
            except Unproven as why:
                raise why.reason.at(op, f"{_WHAT} chip {why.chip}'s pair {why.how}") from None
        _same_elements(op, picks)
        _partition(op, picks)


def _pick(chip: int, value: SSAValue, idx: SSAValue, tracer: Tracer, calls: Calls) -> Pick:
    """What chip ``chip``'s pair ``(value, idx)`` picks from (rules 1-3); raises Unproven."""
    exact = tracer.exact
    v, vcalls = exact(value, calls)
    i, icalls = exact(idx, calls)
    pair = f"(%{value_name(value)}, %{value_name(idx)})"
    op = v.owner
    if not isinstance(op, Operation) or i.owner is not op or vcalls != icalls:
        raise Unproven(
            chip,
            f"{pair}, whose value and index are not the two results of one argmax: the "
            "index must be where that value was found",
            TpReject.NOT_ARGMAX,
        )
    form = argmax(op)
    if form is None or (v, i) != (op.results[0], op.results[1]):
        raise Unproven(
            chip,
            f"{pair} from '{op.name}', which is not an argmax as tp writes one (one reduced "
            "loop, keeping the first strictly greater value and its loop index plus a "
            "constant; the value result first)",
            TpReject.NOT_ARGMAX,
        )
    name = value_name(op.results[1])
    if form.offset is None:
        raise Unproven(
            chip,
            f"from %{name}, whose index adds an offset that is not a constant: which "
            "positions it reports cannot be proven",
            TpReject.NOT_ARGMAX,
        )
    view = loop_view(op)
    assert view is not None  # argmax() read it
    n_in = view.n_inputs
    max_init, index_init = (exact(u, vcalls)[0] for u in op.operands[n_in : n_in + 2])
    if filled_with(max_init) != float("-inf"):
        raise Unproven(
            chip,
            f"from %{name}, whose largest value starts from %{value_name(max_init)}, not from "
            "a fill of -inf: where every logit lies below that start it reports the start, "
            "not its own largest",
            TpReject.NOT_ARGMAX,
        )
    start = filled_with(index_init)
    if start is None:
        raise Unproven(
            chip,
            f"from %{name}, whose index starts from %{value_name(index_init)}, not from a "
            "fill of a constant: what it reports where no logit beats -inf cannot be told",
            TpReject.NOT_ARGMAX,
        )
    logits = op.operands[0]
    amap = view.maps[0]
    axes = [a for a, e in enumerate(amap.results) if form.loop in e.used_dims()]
    if len(axes) != 1 or not isinstance(amap.results[axes[0]], AffineDimExpr):
        raise Unproven(
            chip,
            f"from %{name}, which reads its reduced loop d{form.loop} otherwise than as one "
            f"axis of %{value_name(logits)}: which positions it picks from cannot be proven",
        )
    axis = axes[0]
    held = tracer.positions.of(logits, vcalls)
    p = held[axis] if axis < len(held) else UNKNOWN
    if not isinstance(p, Axis):
        raise Unproven(
            chip,
            f"from %{name}, which picks along axis {axis} of %{value_name(logits)}, whose "
            "positions cannot be told: which run of the axis it picks from cannot be proven",
        )
    if len(p.runs) != 1:
        runs = " + ".join(f"[{s}, {s + n})" for s, n in p.runs) or "nothing"
        raise Unproven(
            chip,
            f"from %{name}, which picks along axis {axis} of %{value_name(logits)}, holding "
            f"{runs} of {p.full}: an index counted as linalg.index + {form.offset} names the "
            "positions of one run, not of several",
            TpReject.SLICES_MISALIGNED,
        )
    ((s, n),) = p.runs
    if form.offset != s:
        raise Unproven(
            chip,
            f"from %{name}, whose index is linalg.index + {form.offset}, but which picks "
            f"along axis {axis} of %{value_name(logits)}, holding [{s}, {s + n}) of "
            f"{p.full}: the index must count from the run's start, {s}",
            TpReject.SLICES_MISALIGNED,
        )
    out = tracer.positions.of(op.results[0], vcalls)
    return Pick(chip, op, (s, n), p.full, out, start, value_name(logits))


def _same_elements(op: MaxLocOp, picks: list[Pick]) -> None:
    """Rule 4: every chip picks over an axis of the same size, for the same elements, from
    the same start."""
    first = picks[0]
    for other in picks[1:]:
        if other.full != first.full:
            raise TpReject.SLICES_GAP.at(
                op,
                f"{_WHAT} chip {first.chip}'s pair, picked from an axis of {first.full} "
                f"positions (%{first.logits}), and chip {other.chip}'s, from one of "
                f"{other.full} (%{other.logits}): which part of one axis each covers cannot "
                "be proven",
            )
        if other.out != first.out:
            raise TpReject.SLICES_MISALIGNED.at(
                op,
                f"{_WHAT} chip {first.chip}'s and chip {other.chip}'s pairs, which hold "
                "different elements of its result: every chip must pick for the same "
                "elements",
            )
        if other.start != first.start:
            raise TpReject.NOT_ARGMAX.at(
                op,
                f"{_WHAT} chip {first.chip}'s pair, whose index starts from "
                f"{first.start:g}, and chip {other.chip}'s, from {other.start:g}: where no "
                "logit beats -inf the result would depend on the chips",
            )


def _partition(op: MaxLocOp, picks: list[Pick]) -> None:
    """Rule 5: the runs are disjoint and cover the axis."""
    full = picks[0].full
    what = f"runs of an axis of {full} positions (%{picks[0].logits})"
    reach, reacher = 0, -1
    for p in sorted(picks, key=lambda p: (p.run[0], p.chip)):
        start, end = p.run[0], p.run[0] + p.run[1]
        if start < reach:
            raise TpReject.SLICES_OVERLAP.at(
                op,
                f"{_WHAT} argmaxes over {what}, and chips {reacher} and {p.chip} both "
                f"pick from [{start}, {min(end, reach)}): each chip must pick from its own "
                "run of the axis",
            )
        if start > reach:
            raise _gap(op, what, reach, start)
        reach, reacher = end, p.chip
    if reach < full:
        raise _gap(op, what, reach, full)


def _gap(op: MaxLocOp, what: str, start: int, end: int) -> Exception:
    return TpReject.SLICES_GAP.at(
        op,
        f"{_WHAT} argmaxes over {what}, but no chip picks from [{start}, {end}): the "
        "runs must cover the axis, or its largest value may be missed",
    )
