"""The all-gather rule: a ``tp.all_gather`` assembles the tensor the unsharded program has.

Chip c's block must hold, along the gathered axis, exactly the run its slice names, of an
axis as long as the result's (`positions.PositionAnalysis`: a reduce-scatter's block holds
its slice of the sum; a window of a spine tensor, the positions under it; an elementwise op
or a norm over another axis, its operands'), or be constant along it; on every other axis
the positions chip 0's block holds; and every chip's block must be computed from parts
paired alike (a block plus the residual's rows beside it pairs them shifted:
`positions.Axis.pairs`). Then the gathered tensor holds every position of the axis once, in
order, each where the unsharded tensor has it: the blocks are the chips' parts of one
tensor, not any tensors of the right shapes. As for an all-reduce, the rule is on positions;
that each chip computes its part alike is what ``tp-run --check`` measures.
"""

from __future__ import annotations

from tp_dialect.analysis.certify.coverage import ModuleIndex, chains_to_check
from tp_dialect.analysis.certify.positions import ANY, Axis, AxisPos
from tp_dialect.analysis.certify.provenance import Solver
from tp_dialect.names import value_name
from tp_dialect.reject import TpReject
from tp_dialect.scatter_ops import AllGatherOp


def _runs(p: AxisPos) -> str:
    if isinstance(p, Axis):
        return (" + ".join(f"[{s}, {s + n})" for s, n in p.runs) or "nothing") + f" of {p.full}"
    return "positions that cannot be told" if p is not ANY else "any position (a constant)"


def _pairs(p: Axis) -> str:
    shifts = ", ".join(f"{k:+d} of an axis of {full}" for full, k in sorted(p.pairs))
    return f"shifts parts by {shifts}" if shifts else "pairs its parts position by position"


def check_gather(op: AllGatherOp, solver: Solver, index: ModuleIndex | None = None) -> None:
    """Raise a `TpReject` (``slices-gap``, ``slices-misaligned``) when a block of ``op``
    does not hold what its slice names, in any call chain reaching it, naming the chip."""
    index = index or ModuleIndex(op.get_toplevel_object())
    contexts = chains_to_check(
        op, index, "the all-gather", "which positions its blocks hold cannot be proven"
    )
    tracer = index.tracer(op, solver)
    axis = op.axis
    size = op.slices.data[0].full_shape[axis]
    for calls in contexts:
        held = [tracer.positions.of(part, calls) for part in op.parts]
        for c, (part, pos, sl) in enumerate(zip(op.parts, held, op.slices.data, strict=True)):
            p = pos[axis]
            want = Axis.of(sl.ranges, size)
            if p is ANY:
                continue
            if not isinstance(p, Axis):
                raise TpReject.SLICES_GAP.at(
                    op,
                    f"the all-gather takes chip {c}'s block %{value_name(part)}, whose axis "
                    f"{axis} holds {_runs(p)}: that it is the run {_runs(want)} cannot be "
                    "proven",
                )
            if p.runs != want.runs or p.full != want.full:
                raise TpReject.SLICES_MISALIGNED.at(
                    op,
                    f"the all-gather puts chip {c}'s block %{value_name(part)} at "
                    f"{_runs(want)} of axis {axis}, but it holds {_runs(p)}",
                )
            first_cut = held[0][axis]
            if isinstance(first_cut, Axis) and p.pairs != first_cut.pairs:
                raise TpReject.SLICES_MISALIGNED.at(
                    op,
                    f"the all-gather's blocks were computed from parts paired otherwise: "
                    f"chip {c}'s %{value_name(part)} along axis {axis} {_pairs(p)}, chip 0's "
                    f"{_pairs(first_cut)}",
                )
            for a, (mine, first) in enumerate(zip(pos, held[0], strict=True)):
                if a == axis or mine is ANY or first is ANY or mine == first:
                    continue
                raise TpReject.SLICES_MISALIGNED.at(
                    op,
                    f"the all-gather's blocks differ along axis {a}: chip {c}'s "
                    f"%{value_name(part)} holds {_runs(mine)}, chip 0's {_runs(first)}",
                )
