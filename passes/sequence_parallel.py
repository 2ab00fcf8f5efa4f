"""tp-sequence-parallel{mode=auto|on machine=sn40l report=false}: the work after an all-reduce
that goes row by row runs on each chip's block of the rows (Megatron-LM's sequence
parallelism).

Invariant: an all-reduce whose sum feeds spine work that treats one axis row by row (the
residual add, an RMSNorm's sum of squares and scaling: elementwise ops and ``linalg.generic``s
reading that axis by one parallel loop) becomes a ``tp.reduce_scatter`` along that axis; that
work is done once per chip on the chip's block of rows (its other operands windowed to the
block: the residual stream's rows, an init made afresh; a norm's weight, which has no such
axis, read whole), and each value the rest of the program reads whole is assembled by a
``tp.all_gather`` where it is made. Two all-reduces whose row-wise work meets (a layer's two
residual adds) share one region. Every chip computes each of its rows exactly as the spine did
(the same ops on the same values), so the numbers are the source's to f32 rounding, bitwise
with the default reduce-scatter; the certificate is checked again and stamped anew (the
all-gather rule: each block holds its rows).

The axis of each all-reduce is the one (of at least N positions, so every chip has a row)
along which the most work goes row by row: a prefill's tokens. A decode step has one token: its
only such axis is the hidden one, where an RMSNorm ends the region at once. ``mode=on`` takes
every all-reduce with a region; ``mode=auto`` (the default) takes a function's regions only
when the model (`tp_dialect.analysis.timing.cost`, on ``machine=``) says they pay: the rows'
work on 1/N of the rows, a reduce-scatter and an all-gather per value read whole, against the
all-reduces (each its cheapest algorithm) and the work on every row, every chip.
``report=true`` prints both estimates per function. Runs on statements, before tp-relocate.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue, Use
from xdsl.ir.affine import AffineDimExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.analysis.timing.cost import (
    all_gather_time,
    allreduce_time,
    best_allreduce,
    op_cost,
    reduce_scatter_time,
)
from tp_dialect.attrs import blocks, chip_of, on_chip
from tp_dialect.certificate import drop, status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import stated_chips
from tp_dialect.machine import Machine, MachineError, machine_from
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp, SectionOp
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.scatter_ops import DIRECT, AllGatherOp, ReduceScatterOp


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


def _shape(v: SSAValue) -> tuple[int, ...] | None:
    t = v.type
    if isinstance(t, TensorType) and chip_of(t) is None and all(d >= 0 for d in t.get_shape()):
        return tuple(t.get_shape())
    return None


def _row_axes(op: Operation, rows: Rows) -> tuple[int, list[int | None], list[int]] | None:
    """How ``op`` joins the region: its row loop (-1: elementwise), each operand's row axis
    (None: read whole), each result's; None when it does not go row by row."""
    if not op.results or any(_shape(r) is None for r in op.results):
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
        axes: list[int | None] = []
        for v, m in zip(op.operands, maps, strict=True):
            at = [i for i, e in enumerate(m.results) if d in e.used_dims()]
            if not at:
                axes.append(None)
                continue
            if len(at) != 1 or not isinstance(m.results[at[0]], AffineDimExpr):
                return None
            if _shape(v) is None:
                return None
            axes.append(at[0])
        outs = axes[len(op.inputs) :]
        if any(a is None for a in outs):
            return None
        return d, axes, [a for a in outs if a is not None]
    if op.dialect_name() in ("arith", "math") and not op.regions and len(op.results) == 1:
        shape = _shape(op.results[0])
        if any(_shape(v) != shape for v in op.operands):
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
        how = _row_axes(op, rows)
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
        if isinstance(op, AllReduceOp) and len(op.partials) == n and _shape(op.result)
    ]
    best: Rows | None = None
    for a in range(max((len(_shape(r.result) or ()) for r in reduces), default=0)):
        seeds = {r: a for r in reduces if (_shape(r.result) or ())[a : a + 1] >= (n,)}
        rows = grow(func, seeds)
        inside = set(rows.ops)
        useful = {r: a for r in seeds if any(u.operation in inside for u in r.result.uses)}
        if useful != seeds:
            rows = grow(func, useful)
        if rows.ops and (best is None or len(rows.ops) > len(best.ops)):
            best = rows
    return best


def estimate(rows: Rows, n: int, machine: Machine) -> tuple[float, float]:
    """Modelled time of the region's collectives and work as it stands (all-reduces, each its
    cheapest algorithm; the work on every row) and sequence-parallel (a reduce-scatter per
    all-reduce, an all-gather per value read whole; the work on 1/N of the rows)."""
    work = sum(op_cost(op).time(machine) for op in rows.ops)
    before = work + sum(
        allreduce_time(best_allreduce(s.result.type, n, machine)[0], s.result.type, n, machine)
        for s in rows.seeds
    )
    after = work / n
    after += sum(reduce_scatter_time(DIRECT, s.result.type, n, machine) for s in rows.seeds)
    after += sum(all_gather_time(DIRECT, v.type, n, machine) for v in rows.exits())
    return before, after


class _Rewrite:
    """Writes one region per chip (`TpSequenceParallel`)."""

    def __init__(self, rows: Rows, n: int) -> None:
        self.rows, self.n = rows, n
        self.blocks: dict[SSAValue, list[SSAValue]] = {}
        self.windows: dict[tuple[SSAValue, int, int], SSAValue] = {}
        self.last: dict[SSAValue, Operation] = {}  # what makes a value's last block

    def run(self) -> None:
        for seed in self.rows.seeds:
            self._scatter(seed)
        for op in self.rows.ops:
            self._per_chip(op)
        for v, uses in self.rows.exits().items():
            self._gather(v, uses)
        inits = [v.owner for op in self.rows.ops for v in op.operands]
        for op in reversed([*self.rows.seeds, *self.rows.ops]):
            Rewriter.erase_op(op)
        # The spine's inits no region op writes into any more (a norm's zeros), if unread.
        for op in reversed(list(dict.fromkeys(inits))):
            if isinstance(op, tensor.EmptyOp | linalg.FillOp) and not any(
                r.uses for r in op.results
            ):
                owner = op.operands[-1].owner if isinstance(op, linalg.FillOp) else None
                Rewriter.erase_op(op)
                if isinstance(owner, tensor.EmptyOp) and not owner.results[0].uses:
                    Rewriter.erase_op(owner)

    def _cut(self, v: SSAValue) -> list:
        shape = _shape(v)
        assert shape is not None
        return blocks(self.rows.axis[v], shape, self.n)

    def _scatter(self, seed: AllReduceOp) -> None:
        rs = ReduceScatterOp(list(seed.partials), self._cut(seed.result))
        Rewriter.insert_op(rs, InsertPoint.before(seed))
        for c, part in enumerate(rs.parts):
            part.name_hint = value_hint(f"{value_name(seed.result)}_b{c}")
        self.blocks[seed.result] = list(rs.parts)
        self.last[seed.result] = rs

    def _window(self, v: SSAValue, axis: int, c: int, before: Operation) -> SSAValue:
        """Chip c's rows of the spine tensor ``v`` along ``axis``, as chip c's."""
        key = (v, axis, c)
        if key not in self.windows:
            shape = _shape(v)
            assert shape is not None
            sl = blocks(axis, shape, self.n)[c]
            ((start, length),) = sl.ranges
            offsets = [0] * len(shape)
            offsets[axis] = start
            t = v.type
            assert isinstance(t, TensorType)
            cut = tensor.ExtractSliceOp.build(
                operands=[v, [], [], []],
                result_types=[on_chip(TensorType(t.element_type, sl.shape), c)],
                properties={
                    "static_offsets": DenseArrayBase.from_list(i64, offsets),
                    "static_sizes": DenseArrayBase.from_list(i64, list(sl.shape)),
                    "static_strides": DenseArrayBase.from_list(i64, [1] * len(shape)),
                },
            )
            cut.results[0].name_hint = value_hint(f"{value_name(v)}_w{c}")
            Rewriter.insert_op(cut, InsertPoint.before(before))
            self.windows[key] = cut.results[0]
        return self.windows[key]

    def _init(self, v: SSAValue, axis: int, c: int, before: Operation) -> SSAValue:
        """A generic's init for chip c's rows: a fresh empty tensor (or fill of one) where
        the spine's is one, else its window."""
        owner = v.owner
        sl = blocks(axis, _shape(v) or (), self.n)[c]
        t = v.type
        assert isinstance(t, TensorType)
        block_t = on_chip(TensorType(t.element_type, sl.shape), c)
        if isinstance(owner, tensor.EmptyOp):
            empty = tensor.EmptyOp([], block_t)
            Rewriter.insert_op(empty, InsertPoint.before(before))
            return empty.results[0]
        if isinstance(owner, linalg.FillOp) and isinstance(owner.outputs[0].owner, tensor.EmptyOp):
            empty = tensor.EmptyOp([], block_t)
            fill = linalg.FillOp(tuple(owner.inputs), (empty.results[0],), (block_t,))
            Rewriter.insert_op([empty, fill], InsertPoint.before(before))
            return fill.results[0]
        return self._window(v, axis, c, before)

    def _per_chip(self, op: Operation) -> None:
        how = _row_axes(op, self.rows)
        assert how is not None
        _, axes, outs = how
        n_in = len(op.inputs) if isinstance(op, linalg.GenericOp) else len(op.operands)
        made: list[Operation] = []
        for c in range(self.n):
            operands: list[SSAValue] = []
            for i, (v, a) in enumerate(zip(op.operands, axes, strict=True)):
                if v in self.blocks:
                    operands.append(self.blocks[v][c])
                elif a is None:
                    operands.append(v)  # no rows: every chip reads it whole
                elif i >= n_in:
                    operands.append(self._init(v, a, c, op))
                else:
                    operands.append(self._window(v, a, c, op))
            types = []
            for r, a in zip(op.results, outs, strict=True):
                shape = _shape(r)
                assert shape is not None
                types.append(
                    on_chip(TensorType(r.type.element_type, blocks(a, shape, self.n)[c].shape), c)
                )  # type: ignore[attr-defined]
            new = type(op).create(
                operands=operands,
                result_types=types,
                properties=dict(op.properties),
                attributes=dict(op.attributes),
                regions=[r.clone() for r in op.regions],
            )
            for r, old in zip(new.results, op.results, strict=True):
                r.name_hint = value_hint(f"{value_name(old)}_b{c}")
            Rewriter.insert_op(new, InsertPoint.before(op))
            made.append(new)
        for k, r in enumerate(op.results):
            self.blocks[r] = [m.results[k] for m in made]
            self.last[r] = made[-1]

    def _gather(self, v: SSAValue, uses: Sequence[Use]) -> None:
        ag = AllGatherOp(self.blocks[v], self._cut(v))
        ag.result.name_hint = v.name_hint
        Rewriter.insert_op(ag, InsertPoint.after(self.last[v]))
        for use in list(uses):
            use.operation.operands[use.index] = ag.result


@dataclass(frozen=True)
class TpSequenceParallel(ModulePass):
    """Run the row-wise work after each all-reduce on each chip's block of the rows, between
    a reduce-scatter and an all-gather (``mode=on``), or where the model says it pays
    (``mode=auto``, on ``machine=``; ``report=true`` prints the estimates)."""

    name = "tp-sequence-parallel"

    mode: Literal["auto", "on"] = "auto"
    machine: str = "sn40l"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode not in ("auto", "on"):
            raise TpDiagnostic(None, f"{self.name}: mode={self.mode} is not one of auto, on")
        try:
            machine = machine_from(self.machine)
        except MachineError as err:
            raise TpDiagnostic(None, f"{self.name}: {err}") from None
        n = stated_chips(op) or 1
        for inner in op.walk():
            if isinstance(inner, SectionOp | ChipProgramOp):
                raise TpDiagnostic(
                    inner, f"{self.name} runs on statements: run it before tp-relocate"
                )
        if n < 2:
            return
        certified = status(op) == "valid"
        changed = False
        for func in [f for f in op.walk() if isinstance(f, FuncOp) and f.body.blocks]:
            rows = plan(func, n)
            if rows is None:
                continue
            before, after = estimate(rows, n, machine)
            take = self.mode == "on" or after < before
            if self.report:
                print(
                    f"{self.name}: @{func.sym_name.data}: {len(rows.seeds)} all-reduce(s), "
                    f"{len(rows.ops)} row-wise op(s), {len(rows.exits())} gathered; "
                    f"{before * 1e6:.2f} us as it is, {after * 1e6:.2f} us sequence-parallel "
                    f"({machine.name}) -> {'sequence-parallel' if take else 'kept'}",
                    file=sys.stderr,
                )
            if take:
                _Rewrite(rows, n).run()
                changed = True
        if changed:
            drop(op)
            if certified:
                certify_if_sound(op)
