"""Which positions of a full axis each axis of a tensor holds, element by element.

A chip's tensor in a tensor-parallel program is a part of a tensor of the unsharded one: a
``tp.shard`` holds the runs of its weight's cut axis that its slice names, a column-parallel
projection's output holds, along its output axis, the runs its weight slice holds, and a
window (``tensor.extract_slice``) of either holds the runs under the window. For every axis
of a tensor value `PositionAnalysis` tells one of:

- an `Axis`: runs ``(start, len)`` of a full axis of ``full`` positions, concatenated in
  order: local element ``j`` of the axis is the ``j``-th position they list. A
  spine tensor that is not a window holds its whole axis (``Axis.whole(size)``);
- ``ANY``: the value does not vary along the axis (an empty tensor, a fill, a splat), so
  it matches any positions;
- ``UNKNOWN``: the rule cannot tell (an op it has no rule for, parts that disagree).

Positions are measured in the coordinates of the axis they were first read in (a weight's
cut axis, a spine tensor's axis). Where an op reads several operands along one loop (an
elementwise op, a contraction), their positions must *correspond*: one is another shifted by
a constant ``k`` (a packed qkv projection's v part holds positions ``k = 2·hidden`` beyond the
o-projection's rows it pairs with, a fused gate_up's up part ``k = intermediate`` beyond its
gate part). The one with the
smallest full axis (the first on ties; for a value, among the parts cut from a larger axis
where there are some) names the loop's positions; parts that do not correspond make the loop
``UNKNOWN``. Coverage (`analysis.coverage`) asks this of the
operands of every contraction an all-reduce sums.

The analysis follows values through what hands them on unchanged (sections, programs, links,
casts, copies, calls: `coverage.Tracer`) and is computed on demand, each value once, without
recursion (a chain of thousands of ops is a loop, not a stack).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeAlias

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseIntOrFPElementsAttr, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from tp_dialect.attrs import chip_of
from tp_dialect.linalg_kinds import LoopView, index_loops, loop_view
from tp_dialect.ops import Collective, ShardOp, UnshardOp
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp


class Mark(Enum):
    """An axis with no runs to tell: ``ANY`` (constant along it), ``UNKNOWN``."""

    ANY = "any"
    UNKNOWN = "unknown"


ANY = Mark.ANY
UNKNOWN = Mark.UNKNOWN


Pairs: TypeAlias = frozenset[tuple[int, int]]


@dataclass(frozen=True)
class Axis:
    """The positions one local axis holds: ``runs`` of a full axis of ``full`` positions,
    concatenated (adjacent runs merged, so equal position sequences compare equal); and
    ``pairs``, how the parts it was computed from were paired on the way: the full axis and
    shift of each part that did not hold these very positions. Chips that compute their parts
    alike pair them alike; a chip that pairs another way (a bias's runs swapped with another
    chip's) shows in ``pairs``."""

    runs: tuple[tuple[int, int], ...]
    full: int
    pairs: Pairs = frozenset()

    @staticmethod
    def of(runs: Iterable[tuple[int, int]], full: int, pairs: Pairs = frozenset()) -> Axis:
        """The axis holding ``runs`` of ``full``, normalised: empty runs dropped, adjacent
        ones merged."""
        merged: list[tuple[int, int]] = []
        for start, length in runs:
            if length <= 0:
                continue
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        return Axis(tuple(merged), full, pairs)

    @staticmethod
    def whole(size: int) -> Axis:
        """An axis holding every position of itself, in order."""
        return Axis(((0, size),) if size > 0 else (), size)

    @property
    def size(self) -> int:
        return sum(n for _, n in self.runs)

    def is_whole(self) -> bool:
        """Whether the axis holds every position of its full axis, in order."""
        return self.runs == Axis.whole(self.full).runs

    def window(self, offset: int, size: int) -> Axis:
        """Local elements ``[offset, offset + size)`` of this axis."""
        out: list[tuple[int, int]] = []
        at = 0
        for start, length in self.runs:
            lo, hi = max(offset, at), min(offset + size, at + length)
            if lo < hi:
                out.append((start + lo - at, hi - lo))
            at += length
        return Axis.of(out, self.full, self.pairs)

    def shift_from(self, base: Axis) -> int | None:
        """``k`` with position ``j`` of this axis equal to position ``j`` of ``base`` plus
        ``k``, for every ``j``; None if there is none."""
        if len(self.runs) != len(base.runs) or not self.runs:
            return None if self.runs or base.runs else 0
        k = self.runs[0][0] - base.runs[0][0]
        for (s, n), (bs, bn) in zip(self.runs, base.runs, strict=True):
            if n != bn or s - bs != k:
                return None
        return k


AxisPos: TypeAlias = Axis | Mark
Positions: TypeAlias = tuple[AxisPos, ...]


def correspond(
    parts: Sequence[AxisPos], follow_cut: bool = True
) -> tuple[AxisPos, list[int | None]]:
    """The positions a loop read through ``parts`` holds, and each part's shift from them
    (None for an ``ANY`` part): ``ANY`` when every part is; ``UNKNOWN`` when a part is, or
    when the known parts do not all correspond to one of them. That one is the part with the
    smallest full axis, the first on ties — among the parts cut from a larger axis, where
    there are some and ``follow_cut`` (a value's positions: a whole spine tensor paired with
    a chip's slice follows the slice, which is what differs between chips); among all parts
    otherwise (a sum's summed loop, whose positions must cover the smallest axis read)."""
    known = [p for p in parts if isinstance(p, Axis)]
    if any(p is UNKNOWN for p in parts):
        return UNKNOWN, [None] * len(parts)
    if not known:
        return ANY, [None] * len(parts)
    pool = [p for p in known if not p.is_whole()] if follow_cut else []
    base = min(pool or known, key=lambda a: a.full)
    shifts = [p.shift_from(base) if isinstance(p, Axis) else None for p in parts]
    if any(isinstance(p, Axis) and k is None for p, k in zip(parts, shifts, strict=True)):
        return UNKNOWN, shifts
    pairs = set(base.pairs)
    for p, k in zip(parts, shifts, strict=True):
        if isinstance(p, Axis):
            pairs |= p.pairs
            if (p.full, k) != (base.full, 0):
                pairs.add((p.full, k))  # type: ignore[arg-type]
    return Axis(base.runs, base.full, frozenset(pairs)), shifts


def _shape(value: SSAValue) -> tuple[int, ...] | None:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def whole(value: SSAValue) -> Positions:
    """Every axis of ``value`` held whole (a spine tensor's own positions)."""
    return tuple(Axis.whole(n) for n in _shape(value) or ())


def unknown(value: SSAValue) -> Positions:
    return (UNKNOWN,) * len(_shape(value) or ())


Key = tuple[SSAValue, object]  # a value and the call chain it is seen in
Exact = Callable[[SSAValue, object], tuple[SSAValue, object]]


class PositionAnalysis:
    """The positions every axis of every tensor value holds (see the module docstring),
    computed on demand and kept. ``exact(value, calls)`` follows a value back through what
    hands it on unchanged, into and out of calls (the coverage tracer's)."""

    def __init__(self, exact: Exact) -> None:
        self.exact = exact
        self.memo: dict[Key, Positions] = {}
        self.views: dict[Operation, LoopView | None] = {}  # each op's loops, read once

    def of(self, value: SSAValue, calls: object = ()) -> Positions:
        """The positions each axis of ``value`` (seen in the call chain ``calls``) holds."""
        root = self.exact(value, calls)
        if root in self.memo:
            return self.memo[root]
        stack: list[tuple[Key, bool]] = [(root, False)]
        while stack:
            key, expanded = stack.pop()
            if key in self.memo:
                continue
            needs = [d for d in self._deps(key) if d not in self.memo]
            if needs and not expanded:
                stack.append((key, True))
                stack.extend((d, False) for d in needs)
                continue
            # Every dependency known, or one of them is this value's own ancestor (IR going
            # round): that one reads as UNKNOWN.
            self.memo[key] = self._rule(key)
        return self.memo[root]

    # -- what a value's positions are computed from -----------------------------------------

    def _deps(self, key: Key) -> list[Key]:
        value, calls = key
        owner = value.owner
        if not isinstance(owner, Operation) or _shape(value) is None:
            return []
        return [self.exact(v, calls) for v in _data_operands(owner)]

    def _get(self, value: SSAValue, calls: object) -> Positions:
        key = self.exact(value, calls)
        found = self.memo.get(key)
        return found if found is not None else unknown(key[0])

    def _rule(self, key: Key) -> Positions:
        value, calls = key
        shape = _shape(value)
        if shape is None:
            return ()
        owner = value.owner
        if not isinstance(owner, Operation):
            return self._argument(value)
        get = lambda v: self._get(v, calls)  # noqa: E731 - the operand's positions
        if owner not in self.views:
            self.views[owner] = loop_view(owner)
        found = _rules(owner, value, get, self.views[owner])
        if found is None:  # no rule: a spine tensor is its own, a chip's cannot be told
            return whole(value) if chip_of(value.type) is None else unknown(value)
        return found

    def _argument(self, value: SSAValue) -> Positions:
        """A block argument no call maps back: a spine argument holds itself; a chip's
        argument, or a region's (a loop's carried value), cannot be told."""
        if chip_of(value.type) is None and isinstance(value, BlockArgument):
            parent = value.owner.parent_op() if isinstance(value.owner, Block) else None
            if isinstance(parent, func.FuncOp):
                return whole(value)
        return unknown(value)


def _data_operands(op: Operation) -> list[SSAValue]:
    """The tensor operands a rule reads."""
    if isinstance(op, tensor.InsertSliceOp):
        return [op.source, op.dest]
    if isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp):
        return [op.src]
    if isinstance(op, ShardOp):
        return [op.source]
    return [v for v in op.operands if isinstance(v.type, TensorType)]


def _rules(
    op: Operation, value: SSAValue, get: Callable[[SSAValue], Positions], view: LoopView | None
) -> Positions | None:
    """``value``'s positions by ``op``'s rule (``view``: its loops, if it is a linalg op),
    None where ``op`` has none."""
    shape = _shape(value)
    assert shape is not None
    if isinstance(op, tensor.EmptyOp | linalg.FillOp):
        return (ANY,) * len(shape)
    if isinstance(op, arith.ConstantOp):
        dense = op.value
        splat = isinstance(dense, DenseIntOrFPElementsAttr) and dense.is_splat()
        return (ANY,) * len(shape) if splat else whole(value)
    if isinstance(op, AllGatherOp):
        return _gathered(op, value, get)
    if isinstance(op, Collective | UnshardOp):
        return whole(value)  # a collective's result, a host output: whole on the spine
    if isinstance(op, ReduceScatterOp):
        # Chip c's block of the sum: the window its slice names of what the partials hold
        # (as its spelled form, a fold of those windows, holds them).
        sl = op.slices.data[op.parts.index(value)]  # type: ignore[arg-type]
        ((start, length),) = sl.ranges
        cut = sl.axis_index
        held = [get(p) for p in op.partials]
        windows = [
            [
                p.window(start, length) if a == cut and isinstance(p, Axis) else p
                for a, p in enumerate(h)
            ]
            for h in held
        ]
        return tuple(correspond([w[a] for w in windows])[0] for a in range(len(shape)))
    if isinstance(op, ShardOp):
        return _shard(op, get(op.source))
    if isinstance(op, tensor.ExtractSliceOp):
        return _extract(op, get(op.source), len(shape))
    if isinstance(op, tensor.InsertSliceOp):
        return _insert(op, get(op.source), get(op.dest), len(shape))
    if isinstance(op, tensor.ConcatOp):
        parts = [get(v) for v in op.inputs]
        dim = op.dim.value.data
        if chip_of(value.type) is None and all(
            len(p) > dim and (p[dim] is ANY or (isinstance(p[dim], Axis) and p[dim].is_whole()))
            for p in parts
        ):
            return whole(value)  # spine tensors joined end to end: a new tensor, its own axes
        return _concat(dim, parts, len(shape))
    if isinstance(op, tensor.ExpandShapeOp):
        return _expand(_groups(op), get(op.src), shape)
    if isinstance(op, tensor.CollapseShapeOp):
        source = _shape(op.src)
        return None if source is None else _collapse(_groups(op), get(op.src), source)
    if view is not None:
        return _loops(op, view, value, get)
    if op.dialect_name() in ("arith", "math") and not op.regions:
        parts = [get(v) for v in op.operands if isinstance(v.type, TensorType)]
        if all(len(p) == len(shape) for p in parts) and parts:
            return tuple(correspond([p[a] for p in parts])[0] for a in range(len(shape)))
    return None


def _gathered(op: AllGatherOp, value: SSAValue, get: Callable[[SSAValue], Positions]) -> Positions:
    """An all-gather's result, on the spine, every axis but its own whole. Along its axis:
    the run of one full axis its blocks hold end to end at one offset (a tile of a
    sequence's rows), a constant block taking the run its slice names at that offset (the
    all-gather rule lets a block constant along the axis stand for any rows: here it stands
    for its own, so two tiles never look alike); unknown where the blocks disagree (the rule
    refuses that all-gather); the result's own whole axis when every block is constant."""
    own = whole(value)
    axis = op.axis
    along = [h[axis] if len(h) > axis else UNKNOWN for h in (get(p) for p in op.parts)]
    known = [(c, p) for c, p in enumerate(along) if isinstance(p, Axis)]
    if not known and all(p is ANY for p in along):
        return own
    runs = [sl.ranges[0] for sl in op.slices.data]
    held: AxisPos = UNKNOWN
    if known and len(known) + sum(p is ANY for p in along) == len(along):
        c0, p0 = known[0]
        offset = p0.runs[0][0] - runs[c0][0] if p0.runs else 0
        full = p0.full
        if all(p == Axis.of([(offset + runs[c][0], runs[c][1])], full, p.pairs) for c, p in known):
            size = sum(n for _, n in runs)
            if 0 <= offset and offset + size <= full:
                held = Axis.of([(offset, size)], full)
    return tuple(held if a == axis else p for a, p in enumerate(own))


def _shard(op: ShardOp, source: Positions) -> Positions:
    sl = op.slice
    axis = sl.axis_index
    if axis >= len(source):
        return (UNKNOWN,) * len(source)
    cut = source[axis]
    if isinstance(cut, Axis):
        runs = [r for s, n in sl.ranges for r in cut.window(s, n).runs]
        cut = Axis.of(runs, cut.full, cut.pairs)
    elif cut is ANY:
        cut = ANY
    return tuple(cut if a == axis else p for a, p in enumerate(source))


def _static(values: Sequence[int]) -> bool:
    return all(v != DYNAMIC_INDEX for v in values)


def _extract(op: tensor.ExtractSliceOp, source: Positions, rank: int) -> Positions:
    offsets = op.static_offsets.get_values()
    sizes = op.static_sizes.get_values()
    strides = op.static_strides.get_values()
    if rank != len(source) or len(sizes) != rank or any(s != 1 for s in strides):
        return (UNKNOWN,) * rank
    out: list[AxisPos] = []
    for a, p in enumerate(source):
        if not _static([offsets[a], sizes[a]]):
            out.append(UNKNOWN)
        elif isinstance(p, Axis):
            out.append(p.window(offsets[a], sizes[a]))
        else:
            out.append(p)
    return tuple(out)


def _insert(op: tensor.InsertSliceOp, source: Positions, dest: Positions, rank: int) -> Positions:
    offsets = op.static_offsets.get_values()
    sizes = op.static_sizes.get_values()
    full = _shape(op.dest)
    if len(source) != rank or len(sizes) != rank or full is None:
        return (UNKNOWN,) * rank
    out: list[AxisPos] = []
    for a in range(rank):
        if offsets[a] == 0 and sizes[a] == full[a]:  # the whole axis replaced: parts agree
            out.append(correspond([source[a], dest[a]])[0])
        elif _uncut(source[a]) and _uncut(dest[a]):  # a few elements of an uncut axis
            out.append(dest[a])
        else:
            out.append(UNKNOWN)
    return tuple(out)


def _uncut(p: AxisPos) -> bool:
    return p is ANY or (isinstance(p, Axis) and p.is_whole())


def _concat(dim: int, parts: list[Positions], rank: int) -> Positions:
    if not parts or any(len(p) != rank for p in parts):
        return (UNKNOWN,) * rank
    out: list[AxisPos] = []
    for a in range(rank):
        along = [p[a] for p in parts]
        if a != dim:
            out.append(correspond(along)[0])
        elif all(p is ANY for p in along):
            out.append(ANY)
        elif all(isinstance(p, Axis) for p in along) and len({p.full for p in along}) == 1:
            axes = [p for p in along if isinstance(p, Axis)]
            pairs = frozenset().union(*(p.pairs for p in axes))
            out.append(Axis.of([r for p in axes for r in p.runs], axes[0].full, pairs))
        else:
            out.append(UNKNOWN)
    return tuple(out)


def _groups(op: tensor.ExpandShapeOp | tensor.CollapseShapeOp) -> list[list[int]]:
    return [[i.value.data for i in group.data] for group in op.reassociation.data]


def _expand(groups: list[list[int]], source: Positions, shape: tuple[int, ...]) -> Positions:
    """Each source axis split into its group of axes, outermost first: the first axis of the
    group holds the source's runs in blocks of the inner axes' size (a unit axis too: one
    KV head of eight is block 3 of 8), the inner axes hold themselves."""
    out: list[AxisPos] = [UNKNOWN] * len(shape)
    if len(groups) != len(source):
        return tuple(out)
    for group, p in zip(groups, source, strict=True):
        if not isinstance(p, Axis) or not group:
            for j in group:
                out[j] = p
            continue
        outer = _split(p, math.prod(shape[j] for j in group[1:]))
        for j in group:
            out[j] = Axis.whole(shape[j]) if outer is not None else UNKNOWN
        if outer is not None:
            out[group[0]] = outer
    return tuple(out)


def _split(p: Axis, inner: int) -> Axis | None:
    """The outer axis of ``p`` cut into blocks of ``inner``: whole blocks only."""
    if inner <= 0 or p.full % inner or any(s % inner or n % inner for s, n in p.runs):
        return None
    return Axis.of([(s // inner, n // inner) for s, n in p.runs], p.full // inner, p.pairs)


def _collapse(groups: list[list[int]], source: Positions, shape: tuple[int, ...]) -> Positions:
    """Each group of source axes merged into one: the outer axis's runs in blocks of the
    inner axes' size, when every inner axis holds itself whole (else the merged positions
    are no runs of blocks: ``UNKNOWN``)."""
    out: list[AxisPos] = []
    if len(source) != len(shape):
        return (UNKNOWN,) * len(groups)
    for group in groups:
        parts = [source[j] for j in group]
        if not group or any(p is UNKNOWN for p in parts):
            out.append(UNKNOWN)
        elif all(p is ANY for p in parts):
            out.append(ANY)
        elif not all(_uncut(source[j]) for j in group[1:]):
            out.append(UNKNOWN)  # an inner axis cut
        else:
            outer = source[group[0]]
            head = outer if isinstance(outer, Axis) else Axis.whole(shape[group[0]])
            inner = math.prod(shape[j] for j in group[1:])
            pairs = frozenset().union(*(p.pairs for p in parts if isinstance(p, Axis)))
            merged = [(s * inner, n * inner) for s, n in head.runs]
            out.append(Axis.of(merged, head.full * inner, pairs))
    return tuple(out)


def _loops(
    op: Operation, view: LoopView, value: SSAValue, get: Callable[[SSAValue], Positions]
) -> Positions | None:
    operands = list(op.operands)
    if value not in op.results or len(operands) != len(view.maps):
        return None
    out_index = view.n_inputs + op.results.index(value)  # type: ignore[arg-type]
    loops = loop_positions(view, operands, get, reads_init=_reads_init(view, out_index))
    out_map = view.maps[out_index]
    found: list[AxisPos] = []
    for expr in out_map.results:
        found.append(
            loops.get(expr.position, UNKNOWN) if isinstance(expr, AffineDimExpr) else UNKNOWN
        )
    return tuple(found)


def _reads_init(view: LoopView, out_index: int) -> frozenset[int]:
    args = view.body.args
    if out_index < len(args) and args[out_index].uses:
        return frozenset({out_index})
    return frozenset()


def loop_readers(
    view: LoopView,
    operands: Sequence[SSAValue],
    get: Callable[[SSAValue], Positions],
    reads_init: frozenset[int] = frozenset(),
) -> dict[int, list[tuple[int, int, AxisPos]]]:
    """For each loop, every (operand, axis, positions) that reads it: by the loop index alone,
    the axis's positions; through any other expression of loops, each loop it uses whole if
    the axis holds itself whole, ``UNKNOWN`` if it is cut (nothing if it is constant along
    itself); a body reading ``linalg.index d`` reads loop ``d`` whole."""
    readers: dict[int, list[tuple[int, int, AxisPos]]] = {d: [] for d in range(len(view.extents))}
    for i, (operand, amap) in enumerate(zip(operands, view.maps, strict=True)):
        if i >= view.n_inputs and i not in reads_init:
            continue
        positions = get(operand)
        for axis, expr in enumerate(amap.results):
            p = positions[axis] if axis < len(positions) else UNKNOWN
            if isinstance(expr, AffineDimExpr):
                readers[expr.position].append((i, axis, p))
            elif p is not ANY:
                # An axis read through an expression of loops (a convolution's d2 + d5): local
                # position is global position only where the axis holds itself whole, and then
                # it reads each loop it uses whole; a cut axis read so cannot be told.
                for d in expr.used_dims():
                    whole = isinstance(p, Axis) and p.is_whole()
                    readers[d].append((i, axis, Axis.whole(view.extents[d]) if whole else UNKNOWN))
    for d in index_loops(view):
        if d in readers:
            readers[d].append((-1, -1, Axis.whole(view.extents[d])))
    return readers


def loop_positions(
    view: LoopView,
    operands: Sequence[SSAValue],
    get: Callable[[SSAValue], Positions],
    reads_init: frozenset[int] = frozenset(),
) -> dict[int, AxisPos]:
    """The positions each loop of ``view`` holds, by its readers (`loop_readers`)."""
    readers = loop_readers(view, operands, get, reads_init)
    return {d: correspond([p for _, _, p in rs])[0] for d, rs in readers.items()}
