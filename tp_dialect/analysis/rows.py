"""Where the work after an all-reduce goes row by row: the sequence-parallel region.

From each statement-level all-reduce, along one axis of its sum (a prefill's tokens), every
later statement of the function that reads a region value and treats that axis row by row
joins: an elementwise ``arith``/``math`` op on tensors, or a ``linalg.generic`` whose region
operands' maps name that axis by one *parallel* loop (each output holding that loop once) —
a residual add, an RMSNorm's sum of squares (parallel over tokens, reducing over the hidden
axis) and its scaling. What reads a region value otherwise (a projection, a return) reads it
whole: an exit. tp-sequence-parallel runs the region on each chip's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue, Use
from xdsl.ir.affine import AffineDimExpr

from tp_dialect.attrs import chip_of
from tp_dialect.linalg_kinds import index_loops, loop_view
from tp_dialect.ops import AllReduceOp


@dataclass
class Rows:
    """One function's sequence-parallel region: the all-reduces it starts from, the ops it
    runs per chip (in program order), and the row axis of every value in it."""

    seeds: list[AllReduceOp] = field(default_factory=list[AllReduceOp])
    ops: list[Operation] = field(default_factory=list[Operation])
    axis: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    loop: dict[Operation, int] = field(default_factory=dict[Operation, int])
    """A generic's row loop (its operands' row axes are where their maps name it)."""

    def exits(self) -> dict[SSAValue, list[Use]]:
        """Each region value read by anything outside the region, with those uses."""
        inside = set(self.ops)
        out: dict[SSAValue, list[Use]] = {}
        for v in self.axis:
            uses = [u for u in v.uses if u.operation not in inside]
            if uses:
                out[v] = uses
        return out


def spine_shape(v: SSAValue) -> tuple[int, ...] | None:
    """The static shape of a spine tensor ``v``; None for anything else."""
    t = v.type
    if isinstance(t, TensorType) and chip_of(t) is None and all(d >= 0 for d in t.get_shape()):
        return tuple(t.get_shape())
    return None


def row_axes(op: Operation, rows: Rows) -> tuple[int, list[int | None], list[int]] | None:
    """How ``op`` joins the region: its row loop (-1: elementwise), each operand's row axis
    (None: read whole), each result's; None when it does not go row by row."""
    if not op.results or any(spine_shape(r) is None for r in op.results):
        return None
    read = [rows.axis.get(v) for v in op.operands]
    if isinstance(op, linalg.GenericOp):
        maps = [m.data for m in op.indexing_maps]
        loops: set[int] = set()
        for a, m in zip(read, maps, strict=True):
            if a is not None:
                e = m.results[a]
                if not isinstance(e, AffineDimExpr):
                    return None
                loops.add(e.position)
        if len(loops) != 1:
            return None
        (d,) = loops
        if str(op.iterator_types.data[d].data) != "parallel":
            return None
        view = loop_view(op)
        if view is None or d in index_loops(view):
            return None  # its body reads the row's index: a chip's own rows count from 0
        axes: list[int | None] = []
        for v, m in zip(op.operands, maps, strict=True):
            at = [i for i, e in enumerate(m.results) if d in e.used_dims()]
            if not at:
                axes.append(None)
                continue
            if len(at) != 1 or not isinstance(m.results[at[0]], AffineDimExpr):
                return None
            if spine_shape(v) is None:
                return None
            axes.append(at[0])
        outs = axes[len(op.inputs) :]
        if any(a is None for a in outs):
            return None
        return d, axes, [a for a in outs if a is not None]
    if op.dialect_name() in ("arith", "math") and not op.regions and len(op.results) == 1:
        shape = spine_shape(op.results[0])
        if any(spine_shape(v) != shape for v in op.operands):
            return None
        row = {a for a in read if a is not None}
        if len(row) != 1:
            return None
        (a,) = row
        return -1, [a] * len(op.operands), [a]
    return None


def grow(func: FuncOp, seeds: dict[AllReduceOp, int]) -> Rows:
    """The region of ``seeds`` (each all-reduce with its row axis) in ``func``: every
    statement after them that reads a region value and goes row by row along it."""
    rows = Rows(seeds=list(seeds))
    for op in func.body.block.ops:
        if op in seeds:
            rows.axis[op.results[0]] = seeds[op]  # type: ignore[index]
            continue
        if not any(v in rows.axis for v in op.operands):
            continue
        how = row_axes(op, rows)
        if how is None:
            continue
        d, _, outs = how
        rows.ops.append(op)
        rows.loop[op] = d
        for r, a in zip(op.results, outs, strict=True):
            rows.axis[r] = a
    return rows


def plan(func: FuncOp, n: int) -> Rows | None:
    """``func``'s region: its statement-level all-reduces along one axis (of at least ``n``
    positions), the one along which the most work goes row by row — an all-reduce whose sum
    only the rest of the program reads whole keeps its form; None when no axis has any."""
    reduces = [
        op
        for op in func.body.block.ops
        if isinstance(op, AllReduceOp) and len(op.partials) == n and spine_shape(op.result)
    ]
    best: Rows | None = None
    for a in range(max((len(spine_shape(r.result) or ()) for r in reduces), default=0)):
        seeds = {r: a for r in reduces if (spine_shape(r.result) or ())[a : a + 1] >= (n,)}
        rows = grow(func, seeds)
        inside = set(rows.ops)
        useful = {r: a for r in seeds if any(u.operation in inside for u in r.result.uses)}
        if useful != seeds:
            rows = grow(func, useful)
        if rows.ops and (best is None or len(rows.ops) > len(best.ops)):
            best = rows
    return best
