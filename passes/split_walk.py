"""tp-split's walk over one function: each op in order, its cut operands' rule applied
(the rules and the pass's invariant: `tp_dialect.passes.split`; an embedding gather and a
greedy argmax over a cut vocabulary: `tp_dialect.passes.split_vocab`).

`Splitter` is the walk of a program without calls; `tp_dialect.passes.split_calls` extends
it for an outlined program (the entry's walk, and each callee's).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, TensorType, i64
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.analysis.split.layouts import Split, collapse, expand, window
from tp_dialect.analysis.split.plan import TpPlan
from tp_dialect.attrs import SliceAttr, on_chip
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.linalg_kinds import argmax, contraction, is_zeros
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp, ShardOp, UnshardOp
from tp_dialect.passes.split_vocab import split_argmax, split_gather
from tp_dialect.reject import TpReject
from tp_dialect.signature import NAME_ATTR, ROLE_ATTR


def shape_of(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def _local(t: Attribute, chip: int, cut: Split | None, axis: int | None = None) -> TensorType:
    """``t`` as chip ``chip``'s tensor: its cut axis shortened to the chip's runs."""
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    if cut is not None:
        shape[cut.axis if axis is None else axis] = cut.local(chip)
    return _chip_type(t.element_type, tuple(shape), chip)


@functools.cache
def _chip_type(element: Attribute, shape: tuple[int, ...], chip: int) -> TensorType:
    """One type object per (element, shape, chip): building and verifying a type anew for
    each of the N copies of each op was a quarter of the pass's time."""
    return on_chip(TensorType(element, shape), chip)


def dense_i64(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


class Splitter:
    """The walk: each op of the entry function in order, its cut operands' rule applied."""

    def __init__(self, fn: func.FuncOp, plan: TpPlan, chips: int) -> None:
        self.fn, self.plan, self.n = fn, plan, chips
        self.rewriter = Rewriter()
        self.cut: dict[SSAValue, Split] = {}  # cut values of the source
        self.parts: dict[SSAValue, list[SSAValue]] = {}  # their chip values (or addends)
        self.partial: set[SSAValue] = set()  # values each chip holds an addend of
        self.summed: dict[SSAValue, SSAValue] = {}
        self.views: dict[tuple[SSAValue, Split | None, int], SSAValue] = {}
        self.dead: list[Operation] = []
        self.here: Operation | None = None
        self.tails: dict[SSAValue, str] = {}  # an argument's part of its chips' copies' names
        # Host values, loaded onto a chip by tp.shard: the function's arguments (a callee's
        # are narrowed to those every call hands an entry argument, `split_calls`).
        self.hosts: set[SSAValue] = set(fn.body.block.args)

    # -- driving ---------------------------------------------------------------------------

    def run(self) -> None:
        self.cut_weights()
        for op in list(self.fn.body.block.ops):
            self.here = op
            self.visit(op)
        for op in reversed(self.dead):
            self.rewriter.erase_op(op)
        # Buffers the chips now make for themselves: the whole ones, left unread, go.
        stale = [v.owner for v, _, _ in self.views if isinstance(v.owner, Operation)]
        while stale:
            op = stale.pop()
            if op.parent is not None and all(not r.uses for r in op.results):
                if isinstance(op, tensor.EmptyOp | linalg.FillOp | arith.ConstantOp):
                    stale += [v.owner for v in op.operands if isinstance(v.owner, Operation)]
                    self.rewriter.erase_op(op)

    def cut_weights(self) -> None:
        """Each argument the plan names gets its cut; each entry must name some argument."""
        used: set[str] = set()
        attrs = self.fn.arg_attrs.data if self.fn.arg_attrs else ()
        for arg, a in zip(self.fn.body.block.args, attrs, strict=False):
            named = a.data.get(NAME_ATTR)
            name = getattr(named, "data", None)
            role = getattr(a.data.get(ROLE_ATTR), "data", "weight")
            if isinstance(name, str):  # what a chip's copy is called: l0_q_weight_c1
                self.tails[arg] = name.rsplit(".", 1)[-1] if role == "weight" else str(role)
            if not isinstance(name, str) or (entry := self.plan.entry_for(name)) is None:
                continue
            used.add(entry.pattern)
            got = entry.cut(name, shape_of(arg), self.n)
            if isinstance(got, str):
                raise TpReject.PLAN_MISMATCH.at(self.fn, got)
            if got is not None:
                self.cut[arg] = Split(got.axis, shape_of(arg)[got.axis], got.ranges)
        for entry in self.plan.entries:
            if entry.pattern not in used and not entry.optional:
                raise TpReject.PLAN_MISMATCH.at(
                    self.fn,
                    f"plan entry '{entry.pattern}' ({self.plan.source}) matches no argument of "
                    f"@{self.fn.sym_name.data}: check the names the program states (tp.name)",
                )

    def refuse(self, op: Operation, value: SSAValue, why: str) -> TpDiagnostic:
        cut = self.cut.get(value)
        state = f"cut along {cut.describe()}" if cut else "a partial sum"
        return TpReject.CANNOT_SPLIT.at(
            op, f"'{op.name}' reads %{value_name(value)} ({state}): {why}"
        )

    def visit(self, op: Operation) -> None:
        captured: list[SSAValue] = []  # cut values read inside op's regions
        for inner in op.walk():
            if inner is op:
                continue
            for v in inner.operands:
                if v in self.partial or (v in self.cut and not isinstance(op, linalg.GenericOp)):
                    raise self.refuse(
                        inner, v, "a value used inside a region is not split: pass it in"
                    )
                if v in self.cut and v not in captured:
                    captured.append(v)
        if isinstance(op, func.ReturnOp):
            self.finish(op)
            return
        if any(v in self.partial for v in op.operands):
            op.operands = [self.sum(v) if v in self.partial else v for v in op.operands]
        if isinstance(op, func.CallOp) and self.call(op):
            return
        if captured:
            assert isinstance(op, linalg.GenericOp)
            split_gather(self, op, captured)  # an embedding lookup from a cut table
            return
        if not any(v in self.cut for v in op.operands):
            return  # the spine: every chip computes it whole
        if isinstance(op, linalg.GenericOp):
            self.generic(op)
        elif isinstance(op, linalg.FillOp) or elementwise(op):
            self.elementwise(op)
        elif isinstance(op, tensor.ExtractSliceOp):
            self.extract(op)
        elif isinstance(op, tensor.InsertSliceOp):
            self.insert(op)
        elif isinstance(op, tensor.ConcatOp):
            self.concat(op)
        elif isinstance(op, tensor.ExpandShapeOp):
            self.expand(op)
        elif isinstance(op, tensor.CollapseShapeOp):
            self.collapse(op)
        else:
            v = next(v for v in op.operands if v in self.cut)
            raise self.refuse(op, v, f"tp-split has no rule for '{op.name}' on a cut value")

    def call(self, op: func.CallOp) -> bool:
        """Whether ``op`` was split as a call (`split_calls.EntrySplitter` does); here a call
        is any other op: the spine when no operand is cut, else refused."""
        return False

    # -- values ------------------------------------------------------------------------------

    def chip_type(self, v: SSAValue, chip: int) -> TensorType:
        """The whole value ``v``'s type as chip ``chip``'s."""
        return _local(v.type, chip, None)

    def emit(self, op: Operation) -> Operation:
        assert self.here is not None
        self.rewriter.insert_op(op, InsertPoint.before(self.here))
        return op

    def chip_value(self, v: SSAValue, chip: int) -> SSAValue:
        """Chip ``chip``'s part of the cut value ``v``."""
        if v not in self.parts:
            self.parts[v] = [self.view(v, self.cut[v], c) for c in range(self.n)]
        return self.parts[v][chip]

    def view(self, v: SSAValue, cut: Split | None, chip: int) -> SSAValue:
        """The whole value ``v`` made chip ``chip``'s (its runs of ``cut``, or all of it):
        a host value by ``tp.shard``, a fresh buffer made anew on the chip, anything else by
        ``tensor.extract_slice``."""
        key = (v, cut, chip)
        if key in self.views:
            return self.views[key]
        t = v.type
        assert isinstance(t, TensorType)
        local = _local(t, chip, cut)
        owner = v.owner
        if v in self.hosts:
            axis, runs = (
                (0, ((0, shape_of(v)[0]),)) if cut is None else (cut.axis, cut.ranges[chip])
            )
            made = self.emit(ShardOp(v, SliceAttr(axis, runs, shape_of(v)), local)).results[0]
        elif isinstance(owner, tensor.EmptyOp) and not owner.dynamic_sizes:
            made = self.emit(tensor.EmptyOp([], local)).results[0]
        elif isinstance(owner, linalg.FillOp):
            init = self.view(owner.outputs[0], cut, chip)
            made = self.emit(linalg.FillOp(owner.inputs, [init], [local])).results[0]
        else:
            made = self.slice_of(v, cut, chip, local)
        # Named after the op that first needs it (so layer figures count it with its layer).
        here = self.here.results[0] if self.here and self.here.results else v
        made.name_hint = value_hint(
            f"{value_name(here)}_{self.tails.get(v, value_name(v))}_c{chip}"
        )
        self.views[key] = made
        return made

    def slice_of(self, v: SSAValue, cut: Split | None, chip: int, local: TensorType) -> SSAValue:
        """Chip ``chip``'s runs of the whole value ``v``, cut from it on the chip."""
        shape = list(shape_of(v))
        runs = ((0, shape[0]),) if cut is None else cut.ranges[chip]
        axis = 0 if cut is None else cut.axis
        pieces = []
        for start, n in runs:
            offsets, sizes = [0] * len(shape), shape.copy()
            offsets[axis], sizes[axis] = start, n
            piece_t = on_chip(TensorType(local.element_type, sizes), chip)
            op = tensor.ExtractSliceOp.build(
                operands=[v, [], [], []],
                result_types=[piece_t],
                properties={
                    "static_offsets": dense_i64(offsets),
                    "static_sizes": dense_i64(sizes),
                    "static_strides": dense_i64([1] * len(shape)),
                },
            )
            pieces.append(self.emit(op).results[0])
        if len(pieces) == 1:
            return pieces[0]
        return self.emit(tensor.ConcatOp(pieces, axis, local)).results[0]

    def sum(self, v: SSAValue) -> SSAValue:
        """The all-reduce of the partial sum ``v``: once, before its first reader."""
        if v not in self.summed:
            t = v.type
            assert isinstance(t, TensorType)
            reduce = self.emit(AllReduceOp(self.parts[v], on_chip(t, None)))
            reduce.results[0].name_hint = value_hint(f"{value_name(v)}_sum")
            self.summed[v] = reduce.results[0]
        return self.summed[v]

    def bind(self, op: Operation, per_chip: list[Operation], cuts: Sequence[Split | None]) -> None:
        """``op``'s results are now the chips' (cut by ``cuts``; None: partial sums)."""
        for i, r in enumerate(op.results):
            self.parts[r] = [o.results[i] for o in per_chip]
            for c, o in enumerate(per_chip):
                o.results[i].name_hint = chip_hint(r, c)
            cut = cuts[i]
            if cut is None:
                self.partial.add(r)
            else:
                self.cut[r] = cut
        self.dead.append(op)

    def clone_on(
        self,
        op: Operation,
        chip: int,
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        **properties: Attribute,
    ) -> Operation:
        """``op`` on chip ``chip``: the same op over its chip's operands and types."""
        made = type(op).create(
            operands=list(operands),
            result_types=list(result_types),
            properties={**op.properties, **properties},
            attributes=dict(op.attributes),
            regions=[self.region_for(r, chip) for r in op.regions],
        )
        return self.emit(made)

    def region_for(self, region: Region, chip: int) -> Region:
        """A copy of ``region`` for chip ``chip``; the last chip takes the original's blocks
        (the original op is erased once the walk is over: one copy fewer to build)."""
        if chip < self.n - 1:
            return region.clone()
        taken = Region()
        region.move_blocks(taken)
        return taken

    # -- rules -------------------------------------------------------------------------------

    def one_cut(self, op: Operation, values: Sequence[SSAValue]) -> tuple[SSAValue, Split]:
        """The cut shared by every cut operand among ``values`` (refused if two differ)."""
        cut_values = [v for v in values if v in self.cut]
        first = cut_values[0]
        for v in cut_values[1:]:
            if self.cut[v] != self.cut[first]:
                raise self.refuse(
                    op,
                    v,
                    f"it is cut otherwise than %{value_name(first)} "
                    f"({self.cut[first].describe()}): the chips would not hold matching parts",
                )
        return first, self.cut[first]

    def elementwise(self, op: Operation) -> None:
        _, cut = self.one_cut(op, op.operands)
        per_chip = []
        for c in range(self.n):
            operands = [
                self.chip_value(v, c)
                if v in self.cut
                else (self.view(v, cut, c) if isinstance(v.type, TensorType) else v)
                for v in op.operands
            ]
            types = [_local(r.type, c, cut) for r in op.results]
            per_chip.append(self.clone_on(op, c, operands, types))
        self.bind(op, per_chip, [cut] * len(op.results))

    def generic(self, op: linalg.GenericOp) -> None:
        maps = [m.data for m in op.indexing_maps]
        operands = list(op.operands)
        loop: int | None = None
        first: SSAValue | None = None
        for v, m in zip(operands, maps, strict=True):
            if v not in self.cut:
                continue
            expr = m.results[self.cut[v].axis]
            if not isinstance(expr, AffineDimExpr):
                raise self.refuse(op, v, f"its cut axis is read through '{expr}', not one loop")
            if loop is None:
                loop, first = expr.position, v
            elif expr.position != loop:
                raise self.refuse(
                    op, v, f"its cut axis is another loop than %{value_name(first)}'s"
                )
            elif not self.cut[v].same_cut(self.cut[first]):  # type: ignore[index]
                raise self.refuse(op, v, f"it is cut otherwise than %{value_name(first)}")
        assert loop is not None and first is not None
        cut = self.cut[first]
        kind = argmax(op)
        if kind is not None and kind.loop == loop:
            split_argmax(self, op, first, kind)  # the greedy head over a cut vocab
            return
        for inner in op.body.walk():
            if isinstance(inner, linalg.IndexOp) and inner.dim.value.data == loop:
                raise self.refuse(
                    op, first, "the body reads the index of the cut loop, which differs per chip"
                )
        reducing = str(op.iterator_types.data[loop].data) == "reduction"
        if reducing:
            if contraction(op) is None:
                raise self.refuse(
                    op,
                    first,
                    "it reduces along the cut axis by something other than a sum "
                    "of products: the chips' parts cannot be combined by an all-reduce",
                )
            for init in op.outputs:
                if not is_zeros(init):
                    raise self.refuse(
                        op,
                        first,
                        f"the sum along the cut starts from %{value_name(init)}, "
                        "not zeros: each chip would add it once more",
                    )
        axes: list[int | None] = []
        for v, m in zip(operands, maps, strict=True):
            at = [i for i, e in enumerate(m.results) if loop in e.used_dims()]
            if v in self.cut or not at:
                axes.append(None)
            elif len(at) > 1 or not isinstance(m.results[at[0]], AffineDimExpr):
                raise self.refuse(
                    op, first, f"%{value_name(v)} reads the cut loop otherwise than as one axis"
                )
            else:
                axes.append(at[0])
        n_in = len(op.inputs)
        result_cuts: list[Split | None] = []
        for i in range(len(op.outputs)):
            axis = axes[n_in + i]
            if reducing:
                result_cuts.append(None)
            elif axis is None:
                raise self.refuse(op, first, "its result does not keep the cut loop")
            else:
                result_cuts.append(cut.on_axis(axis))
        per_chip = []
        for c in range(self.n):
            new: list[SSAValue] = []
            for i, v in enumerate(operands):
                if v in self.cut:
                    new.append(self.chip_value(v, c))
                elif axes[i] is not None:
                    new.append(self.view(v, cut.on_axis(axes[i]), c))  # type: ignore[arg-type]
                elif i >= n_in:
                    new.append(self.view(v, None, c))  # each chip writes its own buffer
                else:
                    new.append(v)
            types = [_local(r.type, c, rc) for r, rc in zip(op.results, result_cuts, strict=True)]
            per_chip.append(self.clone_on(op, c, new, types))
        self.bind(op, per_chip, result_cuts)

    def extract(self, op: tensor.ExtractSliceOp) -> None:
        cut = self.cut[op.source]
        offsets = list(op.static_offsets.get_values())
        sizes = list(op.static_sizes.get_values())
        strides = list(op.static_strides.get_values())
        a = cut.axis
        if len(shape_of(op.result)) != len(sizes):
            raise self.refuse(op, op.source, "a rank-reducing slice of a cut value")
        if offsets[a] == DYNAMIC_INDEX or sizes[a] == DYNAMIC_INDEX or strides[a] != 1:
            raise self.refuse(op, op.source, f"the slice of axis {a} is not static with stride 1")
        got = window(cut, offsets[a], sizes[a])
        if isinstance(got, str):
            raise self.refuse(op, op.source, got)
        per_chip = []
        for c in range(self.n):
            offs, szs = offsets.copy(), sizes.copy()
            offs[a], szs[a] = got.local[c]
            per_chip.append(
                self.clone_on(
                    op,
                    c,
                    [self.chip_value(op.source, c), *op.offsets, *op.sizes, *op.strides],
                    [_local(op.result.type, c, got.split)],
                    static_offsets=dense_i64(offs),
                    static_sizes=dense_i64(szs),
                )
            )
        self.bind(op, per_chip, [got.split])

    def insert(self, op: tensor.InsertSliceOp) -> None:
        src, dest = op.source, op.dest
        _, cut = self.one_cut(op, [src, dest])
        offsets = list(op.static_offsets.get_values())
        sizes = list(op.static_sizes.get_values())
        a = cut.axis
        if len(shape_of(src)) != len(shape_of(dest)):
            raise self.refuse(op, src, "a rank-changing insert of a cut value")
        if offsets[a] != 0 or sizes[a] != shape_of(dest)[a] or cut.full != shape_of(dest)[a]:
            raise self.refuse(
                op,
                src,
                f"the insert does not span axis {a} of %{value_name(dest)}, so the "
                "destination cannot be cut the same way",
            )
        per_chip = []
        for c in range(self.n):
            s = self.chip_value(src, c) if src in self.cut else self.view(src, cut, c)
            d = self.chip_value(dest, c) if dest in self.cut else self.view(dest, cut, c)
            szs = sizes.copy()
            szs[a] = cut.local(c)
            per_chip.append(
                self.clone_on(
                    op,
                    c,
                    [s, d, *op.offsets, *op.sizes, *op.strides],
                    [_local(op.result.type, c, cut)],
                    static_sizes=dense_i64(szs),
                )
            )
        self.bind(op, per_chip, [cut])

    def concat(self, op: tensor.ConcatOp) -> None:
        first, cut = self.one_cut(op, op.inputs)
        if cut.axis == op.dim.value.data:
            raise self.refuse(op, first, "it concatenates along the cut axis")
        self.elementwise(op)

    def expand(self, op: tensor.ExpandShapeOp) -> None:
        cut = self.cut[op.src]
        groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
        group = groups[cut.axis]
        out = shape_of(op.result)
        got = expand(cut, [out[i] for i in group], group[0])
        if isinstance(got, str):
            raise self.refuse(op, op.src, got)
        per_chip = []
        for c in range(self.n):
            shape = list(out)
            shape[got.axis] = got.local(c)
            per_chip.append(
                self.clone_on(
                    op,
                    c,
                    [self.chip_value(op.src, c)],
                    [_local(op.result.type, c, got)],
                    static_output_shape=dense_i64(shape),
                )
            )
        self.bind(op, per_chip, [got])

    def collapse(self, op: tensor.CollapseShapeOp) -> None:
        cut = self.cut[op.src]
        groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
        out_axis = next(i for i, g in enumerate(groups) if cut.axis in g)
        group = groups[out_axis]
        src = shape_of(op.src)
        got = collapse(cut, [src[i] for i in group], group.index(cut.axis), out_axis)
        if isinstance(got, str):
            raise self.refuse(op, op.src, got)
        per_chip = [
            self.clone_on(op, c, [self.chip_value(op.src, c)], [_local(op.result.type, c, got)])
            for c in range(self.n)
        ]
        self.bind(op, per_chip, [got])

    def finish(self, ret: func.ReturnOp) -> None:
        """Host outputs: a partial sum summed, a cut value stored back by ``tp.unshard`` as
        soon as its parts are made (right after the last of them: a layer's KV cache is
        stored with its layer, in a flat program as in an outlined one's callee)."""
        block = self.fn.body.block
        order = {op: i for i, op in enumerate(block.ops)}
        after: dict[Operation, Operation] = {}  # where the next store made ready there goes
        values: list[SSAValue] = []
        for v in ret.operands:
            if v in self.partial:
                v = self.sum(v)
            elif v in self.cut:
                cut, full = self.cut[v], shape_of(v)
                t = v.type
                assert isinstance(t, TensorType)
                parts = [self.chip_value(v, c) for c in range(self.n)]
                slices = [SliceAttr(cut.axis, cut.ranges[c], full) for c in range(self.n)]
                store = UnshardOp(parts, slices, t)
                owners = [p.owner for p in parts if p.owner in order]
                if len(owners) == len(parts):
                    ready = max(owners, key=order.__getitem__)  # type: ignore[arg-type]
                    assert isinstance(ready, Operation)
                    self.rewriter.insert_op(store, InsertPoint.after(after.get(ready, ready)))
                    after[ready] = store
                else:  # a part made before the block's ops (an argument): before the return
                    self.emit(store)
                store.results[0].name_hint = value_hint(value_name(v))
                v = store.results[0]
            values.append(v)
        ret.operands = values


def chip_hint(v: SSAValue, chip: int) -> str:
    """Chip ``chip``'s copy of ``v`` is named ``<v>_c<chip>`` (`chip_base` reads it back)."""
    return value_hint(f"{value_name(v)}_c{chip}")


def chip_base(name: str, chip: int) -> str:
    """``name`` without the ``_c<chip>`` that `chip_hint` adds (and a printer's ``_<k>``
    after it, kept): the name of the value a chip's copy stands for."""
    return re.sub(rf"_c{chip}(_\d+)?$", r"\1", name)


def elementwise(op: Operation) -> bool:
    """An arith op on tensors, or a named linalg op, every operand and result of one shape."""
    if not (
        op.name.startswith("arith.") or isinstance(op, linalg.AddOp | linalg.SubOp | linalg.MulOp)
    ):
        return False
    shapes = {shape_of(v) for v in (*op.operands, *op.results)}
    return len(shapes) == 1 and all(isinstance(v.type, TensorType) for v in op.results)
