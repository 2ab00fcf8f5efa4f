"""The all-gather rule: a ``tp.all_gather`` assembles a tensor the unsharded program has.

1. **Where each block lies.** Chip c's block holds, along the gathered axis, one run of a full
   axis: the run its slice names, shifted by an offset the same for every chip (0 for a
   whole tensor; a tile's start when the gathered tensor is a tile of the rows), of the same
   full axis on every chip (`positions.PositionAnalysis`: a reduce-scatter's block holds its
   slice of the sum; a window, the positions under it) — or is constant along it; on every
   other axis it holds chip 0's positions, and every chip's parts are paired alike
   (`positions.Axis.pairs`).
2. **Row by row.** Every op that computes a block from a tensor cut along an axis (holding part
   of it: a block, a window of the rows) computes each output position from the same
   position of its cut operands: each cut axis is read by a parallel loop that names an axis
   of the output, every cut operand read by that loop holds the same positions (no shift), and
   the body does not read that loop's index (a chip's local index is not the row). A
   reduction over part of the rows, a broadcast of one row, attention over the chip's own
   tokens or a block plus another block's rows breaks it (``slices-misaligned``). The walk
   starts at each block and stops where nothing is cut (a whole tensor, a host argument) and
   at what makes a cut by itself (a ``tp.shard``, a reduce-scatter's blocks); an int8 wire's
   per-block scale (`int8_scale`, recognised op by op) only sets how finely each element is
   rounded, so the walk does not follow it.

Then the gathered tensor holds each of its positions once, in order, each computed as the
unsharded program computes it there. As for an all-reduce, the rule is on positions and
loops; that each chip runs the same ops is what ``tp-run --check`` measures.
"""

from __future__ import annotations

from xdsl.dialects import tensor
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from tp_dialect.analysis.certify.coverage import Calls, ModuleIndex, Tracer, chains_to_check
from tp_dialect.analysis.certify.int8_scale import is_int8_scale
from tp_dialect.analysis.certify.positions import ANY, Axis, AxisPos, Positions
from tp_dialect.analysis.certify.provenance import Solver
from tp_dialect.attrs import chip_of
from tp_dialect.linalg_kinds import LoopView, index_loops, loop_view
from tp_dialect.names import value_name
from tp_dialect.ops import Collective, ShardOp
from tp_dialect.reject import TpReject
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp


def _runs(p: AxisPos) -> str:
    if isinstance(p, Axis):
        return (" + ".join(f"[{s}, {s + n})" for s, n in p.runs) or "nothing") + f" of {p.full}"
    return "positions that cannot be told" if p is not ANY else "any position (a constant)"


def _pairs(p: Axis) -> str:
    shifts = ", ".join(f"{k:+d} of an axis of {full}" for full, k in sorted(p.pairs))
    return f"shifts parts by {shifts}" if shifts else "pairs its parts position by position"


def check_gather(op: AllGatherOp, solver: Solver, index: ModuleIndex | None = None) -> None:
    """Raise a `TpReject` (``slices-gap``, ``slices-misaligned``) when a block of ``op``
    breaks the rule of the module docstring, in any call chain reaching it, naming the chip."""
    index = index or ModuleIndex(op.get_toplevel_object())
    contexts = chains_to_check(
        op, index, "the all-gather", "which positions its blocks hold cannot be proven"
    )
    tracer = index.tracer(op, solver)
    for calls in contexts:
        held = [tracer.positions.of(part, calls) for part in op.parts]
        _where(op, held)
        for c, part in enumerate(op.parts):
            _row_by_row(op, c, part, tracer, calls, solver)


def _where(op: AllGatherOp, held: list[Positions]) -> None:
    """Rule 1: each block's run along the gathered axis, its other axes, its pairing."""
    axis = op.axis
    size = op.slices.data[0].full_shape[axis]
    base: tuple[int, int] | None = None  # (offset, full) every chip's run shares
    for c, (part, pos, sl) in enumerate(zip(op.parts, held, op.slices.data, strict=True)):
        p = pos[axis]
        want = Axis.of(sl.ranges, size)
        if p is ANY:
            continue
        if not isinstance(p, Axis):
            raise TpReject.SLICES_GAP.at(
                op,
                f"the all-gather takes chip {c}'s block %{value_name(part)}, whose axis "
                f"{axis} holds {_runs(p)}: that it is the run {_runs(want)} cannot be proven",
            )
        ((start, length),) = want.runs
        if len(p.runs) != 1 or p.runs[0][1] != length:
            raise TpReject.SLICES_MISALIGNED.at(
                op,
                f"the all-gather puts chip {c}'s block %{value_name(part)} at "
                f"{_runs(want)} of axis {axis}, but it holds {_runs(p)}",
            )
        mine = (p.runs[0][0] - start, p.full)
        if base is None:
            base = mine
        if mine != base or (base[1] == size and base[0] != 0):
            raise TpReject.SLICES_MISALIGNED.at(
                op,
                f"the all-gather puts chip {c}'s block %{value_name(part)} at "
                f"{_runs(want)} of axis {axis}, but it holds {_runs(p)}: the blocks must "
                "hold one run after another of one axis, in chip order",
            )
        first_cut = held[0][axis]
        if isinstance(first_cut, Axis) and p.pairs != first_cut.pairs:
            raise TpReject.SLICES_MISALIGNED.at(
                op,
                f"the all-gather's blocks were computed from parts paired otherwise: "
                f"chip {c}'s %{value_name(part)} along axis {axis} {_pairs(p)}, chip 0's "
                f"{_pairs(first_cut)}",
            )
        for a, (other, first) in enumerate(zip(pos, held[0], strict=True)):
            if a == axis or other is ANY or first is ANY or other == first:
                continue
            raise TpReject.SLICES_MISALIGNED.at(
                op,
                f"the all-gather's blocks differ along axis {a}: chip {c}'s "
                f"%{value_name(part)} holds {_runs(other)}, chip 0's {_runs(first)}",
            )


def _cut(p: AxisPos) -> bool:
    """Whether an axis holds part of its full axis (not every position in order)."""
    return isinstance(p, Axis) and not p.is_whole()


_MOVES = (
    tensor.ExtractSliceOp,
    tensor.InsertSliceOp,
    tensor.ConcatOp,
    tensor.ExpandShapeOp,
    tensor.CollapseShapeOp,
)
"""Ops that move data without computing: the position analysis follows where it goes."""


def _row_by_row(
    op: AllGatherOp, chip: int, block: SSAValue, tracer: Tracer, calls: Calls, solver: Solver
) -> None:
    """Rule 2 for chip ``chip``'s ``block``: every op it is computed from, back to where
    nothing is a chip's or cut, goes row by row; raises naming the op that does not."""
    todo = [tracer.exact(block, calls)]
    seen: set[tuple[SSAValue, Calls]] = set()
    while todo:
        value, cs = todo.pop()
        if (value, cs) in seen:
            continue
        seen.add((value, cs))
        maker = value.owner
        if (
            not isinstance(maker, Operation)
            or isinstance(maker, ShardOp | ReduceScatterOp | Collective)
            or maker in solver.prov.fold_sums
        ):
            continue  # an argument; a cut, or a sum, made by itself
        inputs = _inputs(maker)
        held = {v: tracer.positions.of(v, cs) for v in inputs if isinstance(v.type, TensorType)}
        if any(_cut(p) for v in held for p in held[v]):
            made = [tracer.positions.of(r, cs) for r in maker.results]
            _judge(op, chip, block, maker, held, made)
        for v in inputs:
            if (
                solver.placement(v).chips
                or chip_of(v.type) is not None
                or any(_cut(p) for p in held.get(v, ()))
            ):
                root = tracer.exact(v, cs)
                exact = lambda v, cs=cs: tracer.exact(v, cs)[0]  # noqa: E731
                if not is_int8_scale(root[0], exact):  # it only sets how fine the rounding is
                    todo.append(root)


def _inputs(op: Operation) -> list[SSAValue]:
    """What ``op`` reads: its operands, and what its regions capture from outside it."""
    found = dict.fromkeys(op.operands)
    for inner in op.walk():
        for v in inner.operands:
            defined = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
            if defined is None or not op.is_ancestor(defined):
                found.setdefault(v)
    return list(found)


def _judge(
    op: AllGatherOp,
    chip: int,
    block: SSAValue,
    maker: Operation,
    held: dict[SSAValue, Positions],
    made: list[Positions],
) -> None:
    """``maker``, reading a cut tensor, computes row by row (rule 2) or raises."""
    cut = [v for v in held if any(_cut(p) for p in held[v])]
    if isinstance(maker, _MOVES):
        kept = {p.full for m in made for p in m if isinstance(p, Axis)}
        for v in cut:
            for a, p in enumerate(held[v]):
                if _cut(p) and p.full not in kept:  # type: ignore[union-attr]
                    why = f"it drops axis {a} of %{value_name(v)}, which holds part of that axis"
                    raise _broken(op, chip, block, maker, why)
    elif (view := loop_view(maker)) is not None:
        _loops_row_by_row(op, chip, block, maker, view, held)
    elif maker.dialect_name() in ("arith", "math") and not maker.regions:
        for a in range(len(held[cut[0]])):
            if len({held[v][a] for v in cut if a < len(held[v]) and _cut(held[v][a])}) > 1:
                why = f"its operands hold other positions along axis {a}"
                raise _broken(op, chip, block, maker, why)
    else:
        raise _broken(op, chip, block, maker, "it has no rule for computing on part of an axis")


def _loops_row_by_row(
    op: AllGatherOp,
    chip: int,
    block: SSAValue,
    maker: Operation,
    view: LoopView,
    held: dict[SSAValue, Positions],
) -> None:
    """Each cut axis of ``maker``'s operands read by a parallel loop of its output, every
    operand read by that loop at the same positions, the loop's index unread."""
    outputs = view.maps[view.n_inputs :]
    named = {e.position for m in outputs for e in m.results if isinstance(e, AffineDimExpr)}
    at_loop: dict[int, AxisPos] = {}
    indexed = index_loops(view)
    for v, m in zip(maker.operands, view.maps, strict=False):
        for a, p in enumerate(held.get(v, ())):
            if not _cut(p) or a >= len(m.results):
                continue
            e = m.results[a]
            if not isinstance(e, AffineDimExpr) or e.position in view.reduced:
                raise _broken(
                    op,
                    chip,
                    block,
                    maker,
                    f"it reduces or mixes over axis {a} of %{value_name(v)}, which holds part "
                    "of that axis",
                )
            if e.position not in named:
                raise _broken(
                    op,
                    chip,
                    block,
                    maker,
                    f"its loop over axis {a} of %{value_name(v)}, which holds part of that "
                    "axis, names no axis of its result",
                )
            if e.position in indexed:
                raise _broken(
                    op,
                    chip,
                    block,
                    maker,
                    f"its body reads the index of the loop over axis {a} of %{value_name(v)}: "
                    "a chip's local index, not the position",
                )
            if at_loop.setdefault(e.position, p) != p:
                raise _broken(
                    op,
                    chip,
                    block,
                    maker,
                    f"it pairs %{value_name(v)}'s positions along axis {a} with others",
                )


def _broken(op: AllGatherOp, chip: int, block: SSAValue, maker: Operation, why: str) -> Exception:
    return TpReject.SLICES_MISALIGNED.at(
        op,
        f"the all-gather takes chip {chip}'s block %{value_name(block)}, computed by "
        f"'{maker.name}' not row by row: {why}",
    )
