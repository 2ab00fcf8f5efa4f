"""tp-export-shard's walk over one function: tp-split's output read back as the unsharded
program it split (the inverse of each `tp_dialect.passes.split_walk` rule; the pass and its
invariant: `tp_dialect.passes.export_shard`).

`Unsplitter` pairs each chip-0 op with the other chips' copies of it, then writes chip 0's as
the unsharded op over whole values into a new block: its cut axis the chips' runs summed,
its name without ``_c0``; a ``tp.shard`` or a chip's buffer a view of a whole value; a
``tp.allreduce``, ``tp.maxloc`` or ``tp.unshard`` the value its parts stand for; chip 0's
masked gather from a cut table unmasked. What tp-split never writes is refused
(``not-exportable``), located at the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.rewriter import Rewriter

from tp_dialect.analysis.split.layouts import Split, collapse, expand, window
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp, MaxLocOp, ShardOp, UnshardOp
from tp_dialect.passes.split_walk import (
    chip_base,
    dense_i64,
    elementwise,
    shape_of,
)
from tp_dialect.reject import TpReject

_KEPT_TP_OPS = (ShardOp, AllReduceOp, UnshardOp, MaxLocOp)


def _shape(v: SSAValue) -> list[int]:
    return list(shape_of(v))


def _whole(v: SSAValue, shape: Sequence[int]) -> TensorType:
    t = v.type
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, list(shape))


@dataclass
class _View:
    """A chip's buffer made for a whole value tp-split no longer holds (a ``tensor.empty``,
    or a ``linalg.fill`` of one): made whole once a reader states its shape."""

    op: Operation
    init: _View | None = None
    made: SSAValue | None = None


class Unsplitter:
    """The walk: P's entry block in order, each chip-0 op its unsharded op in a new block."""

    def __init__(self, fn: func.FuncOp, chips: int, outermost: bool = True) -> None:
        self.fn, self.n, self.outermost = fn, chips, outermost
        self.ambiguous = False  # an expand's un-split had a choice (`expand`)
        self.block = Block(arg_types=[a.type for a in fn.body.block.args])
        self.u: dict[SSAValue, SSAValue] = {}
        for old, new in zip(fn.body.block.args, self.block.args, strict=True):
            new.name_hint = old.name_hint
            self.u[old] = new
        self.views: dict[SSAValue, _View] = {}
        self.split: dict[SSAValue, Split] = {}  # cut values of the unsharded program
        self.summed: set[SSAValue] = set()  # its partial sums, which a tp.allreduce sums
        self.arg_cuts: dict[BlockArgument, set[Split]] = {}  # the plan's cuts
        self.loaded: dict[SSAValue, Split] = {}  # a chip's cut of an argument (tp.shard)
        # Places in the input's block, once (Block.get_operation_index walks the block).
        self.order = {op: i for i, op in enumerate(fn.body.block.ops)}
        self.peers = self._pair()

    # -- pairing chips' copies ---------------------------------------------------------

    def _pair(self) -> dict[Operation, list[Operation]]:
        """Each chip-0 op with the other chips' copies of it, by name: tp-split names chip
        c's copy of ``%x`` ``%x_c<c>`` (a view ``%<reader>_<x>_c<c>``); the k-th op of a
        name on chip c is the k-th of that name on chip 0. (Not by order: the parts of a cut
        argument are made for every chip at once, the other views chip by chip.)"""
        keyed: dict[int, dict[tuple[str, int], Operation]] = {}
        seen: dict[tuple[int, str], int] = {}
        for op in self.fn.body.block.ops:
            chips = {chip_of(r.type) for r in op.results} - {None}
            if len(chips) != 1 or isinstance(op, AllReduceOp | UnshardOp):
                continue
            chip = chips.pop()
            assert chip is not None
            base = chip_base(value_name(op.results[0]), chip)
            k = seen[(chip, base)] = seen.get((chip, base), -1) + 1
            keyed.setdefault(chip, {})[(base, k)] = op
        zero = keyed.get(0, {})
        if sorted(keyed) != list(range(self.n if zero else 0)) or any(
            ops.keys() != zero.keys() for ops in keyed.values()
        ):
            raise self.refuse(self.fn, "the chips do not run one program each as tp-split writes")
        peers = {op: [keyed[c][key] for c in range(self.n)] for key, op in zero.items()}
        for op, copies in peers.items():
            other = next((c for c in copies if c.name != op.name), None)
            if other is not None:
                raise self.refuse(
                    other,
                    f"chip {copies.index(other)}'s copy of %{value_name(op.results[0])} is a "
                    f"'{other.name}', chip 0's a '{op.name}': the chips run one program",
                )
        self.copies = {c for copies in peers.values() for c in copies[1:]}
        return peers

    def refuse(self, op: Operation, why: str) -> TpDiagnostic:
        return TpReject.NOT_EXPORTABLE.at(op, f"tp-export-shard: {why}")

    # -- values ----------------------------------------------------------------------------

    def mapped(self, v: SSAValue, at: Operation) -> SSAValue:
        """The unsharded value ``v`` stands for, read by ``at`` (refused where there is none:
        a chip's buffer read whole, a value tp-split never makes there)."""
        if v in self.u:
            return self.u[v]
        raise self.refuse(
            at, f"'{at.name}' reads %{value_name(v)}, which stands for no value of the unsharded "
            "program (tp-split never writes that)",
        )  # fmt: skip

    def made(self, view: _View, shape: Sequence[int]) -> SSAValue:
        """The whole buffer ``view`` stands for, at ``shape`` (made at its first reader)."""
        if view.made is not None:
            if list(_shape(view.made)) != list(shape):
                raise self.refuse(view.op, "one buffer read at two shapes")
            return view.made
        result = view.op.results[0]
        if isinstance(view.op, tensor.EmptyOp):
            op: Operation = tensor.EmptyOp([], _whole(result, shape))
        else:
            assert isinstance(view.op, linalg.FillOp) and view.init is not None
            init = self.made(view.init, shape)
            scalars = [self.mapped(v, view.op) for v in view.op.inputs]
            op = linalg.FillOp(scalars, [init], [init.type])
        self.block.add_op(op)
        view.made = op.results[0]
        view.made.name_hint = result.name_hint  # named by the view's name (`finish`)
        return view.made

    def cut_of(self, v: SSAValue) -> Split | None:
        if v in self.loaded:
            return self.loaded[v]
        return self.split.get(self.u[v]) if v in self.u else None

    # -- the walk --------------------------------------------------------------------------

    def run(self) -> None:
        for op in self.fn.body.block.ops:
            if op.name.startswith("tp.") and not isinstance(op, _KEPT_TP_OPS):
                raise self.refuse(
                    op,
                    f"'{op.name}': export tp-split's output, before tp-relocate and later passes",
                )
            if isinstance(op, func.ReturnOp):
                continue  # written by `finish`, over the unsharded values
            if isinstance(op, AllReduceOp | UnshardOp):
                self.u[op.results[0]] = self.mapped(op.operands[0], op)
                if isinstance(op, AllReduceOp):
                    self.summed.add(self.u[op.results[0]])
            elif isinstance(op, MaxLocOp):  # the chips' argmaxes: chip 0's is the argmax
                self.u[op.value] = self.mapped(op.values[0], op)
                self.u[op.index] = self.mapped(op.indices[0], op)
            elif op in self.copies:
                continue  # another chip's copy of an op chip 0's stands for
            elif op in self.peers:
                self.chip_op(op)
            elif not any(chip_of(v.type) is not None for v in (*op.results, *op.operands)):
                self.spine(op)
            else:
                raise self.refuse(
                    op, f"'{op.name}' mixes the chips' values with whole ones as tp-split "
                    "never writes",
                )  # fmt: skip

    def spine(self, op: Operation) -> None:
        # The clone maps its results (and its regions' values) into ``self.u`` as it goes.
        self.block.add_op(op.clone(value_mapper=self.u))

    def chip_op(self, op: Operation) -> None:
        peers = self.peers[op]
        if isinstance(op, ShardOp):
            return self.shard(op, peers)
        if isinstance(op, tensor.EmptyOp) and not op.dynamic_sizes:
            self.views[op.results[0]] = _View(op)
            return
        if isinstance(op, linalg.FillOp) and op.outputs[0] in self.views:
            self.views[op.results[0]] = _View(op, self.views[op.outputs[0]])
            return
        if isinstance(op, tensor.ExtractSliceOp) and chip_of(op.source.type) is None:
            self.u[op.result] = self.u[op.source]  # a chip's runs of a whole value
            return
        if isinstance(op, tensor.ConcatOp) and self.pieces_of_one(op):
            self.u[op.results[0]] = self.u[op.inputs[0]]
            return
        if isinstance(op, linalg.GenericOp):
            self.generic(op)
        elif isinstance(op, tensor.ExtractSliceOp):
            self.extract(op, peers)
        elif isinstance(op, tensor.ExpandShapeOp):
            self.expand(op)
        elif isinstance(op, tensor.CollapseShapeOp):
            self.collapse(op)
        elif _elementwise(op):
            self.elementwise(op)
        else:
            raise self.refuse(op, f"'{op.name}' on a chip is not a copy tp-split makes")

    def pieces_of_one(self, op: tensor.ConcatOp) -> bool:
        """Whether ``op`` joins a chip's runs of one whole value (`Splitter.slice_of`)."""
        sources = {
            o.owner.source
            for o in op.inputs
            if isinstance(o.owner, tensor.ExtractSliceOp) and chip_of(o.owner.source.type) is None
        }
        pieces = all(isinstance(o.owner, tensor.ExtractSliceOp) for o in op.inputs)
        return len(sources) == 1 and pieces

    def shard(self, op: ShardOp, peers: list[Operation]) -> None:
        arg = op.operands[0]
        if not isinstance(arg, BlockArgument):
            raise self.refuse(op, "a tp.shard of something other than an argument")
        slices = [p.slice for p in peers if isinstance(p, ShardOp)]
        ranges = tuple(tuple(s.ranges) for s in slices)
        at = slices[0]
        full = at.full_shape[at.axis_index]
        whole = all(r == ((0, full),) for r in ranges)
        cut = None if whole else Split(at.axis_index, full, ranges)
        # An argument the plan cuts has its chips' parts made at once, one after another
        # (`Splitter.chip_value`); a rule's view of a whole one is made chip by chip, each
        # before that chip's copy of the op reading it.
        together = all(self.order[p] == self.order[op] + c for c, p in enumerate(peers))
        if cut is not None and together:
            self.arg_cuts.setdefault(arg, set()).add(cut)
        self.u[op.results[0]] = self.u[arg]
        if cut is not None:
            self.loaded[op.results[0]] = cut

    # -- rules: each the inverse of its `Splitter` rule ------------------------------------

    def emit(self, op: Operation, made_types: Sequence[Attribute], **props: Attribute) -> Operation:
        """``op`` over the unsharded operands already in ``self.u`` (and views made whole),
        its results of ``made_types``, named without ``_c0``."""
        operands = [self.u[v] if v in self.u else v for v in op.operands]
        made = type(op).create(
            operands=operands,
            result_types=list(made_types),
            properties={**op.properties, **props},
            attributes=dict(op.attributes),
            regions=[self.region(r) for r in op.regions],
        )
        self.block.add_op(made)
        for old, new in zip(op.results, made.results, strict=True):
            new.name_hint = value_hint(chip_base(value_name(old), 0)) if old.name_hint else None
            self.u[old] = new
        return made

    def region(self, region: Region) -> Region:
        """A copy of ``region`` reading the unsharded values for the chip's it captures."""
        copy = Region()
        region.clone_into(copy, value_mapper=self.u)
        return copy

    def whole_operands(self, op: Operation, shapes: Sequence[Sequence[int] | None]) -> None:
        """Make every view ``op`` reads whole at its shape (None: a non-tensor)."""
        for v, shape in zip(op.operands, shapes, strict=True):
            if v in self.views and shape is not None:
                self.u[v] = self.made(self.views[v], shape)

    def widened(self, v: SSAValue, cut: Split) -> list[int]:
        shape = _shape(v)
        shape[cut.axis] = cut.full
        return shape

    def one_cut(self, op: Operation, values: Sequence[SSAValue]) -> Split:
        cuts = [c for v in values if (c := self.cut_of(v)) is not None]
        if not cuts:
            raise self.refuse(op, f"'{op.name}' on a chip reads no cut value")
        return cuts[0]

    def elementwise(self, op: Operation) -> None:
        cut = self.one_cut(op, op.operands)
        self.whole_operands(
            op,
            [self.widened(v, cut) if isinstance(v.type, TensorType) else None for v in op.operands],
        )
        props: dict[str, Attribute] = {}
        if isinstance(op, tensor.InsertSliceOp):
            sizes = list(op.static_sizes.get_values())
            sizes[cut.axis] = cut.full
            props["static_sizes"] = dense_i64(sizes)
        made = self.emit(op, [_whole(r, self.widened(r, cut)) for r in op.results], **props)
        for r in made.results:
            self.split[r] = cut

    def generic(self, op: linalg.GenericOp) -> None:
        maps = [m.data for m in op.indexing_maps]
        loop, cut = None, None
        for v, m in zip(op.operands, maps, strict=True):
            c = self.cut_of(v)
            if c is not None and isinstance(e := m.results[c.axis], AffineDimExpr):
                loop, cut = e.position, c
                break
        if loop is None or cut is None:
            if any(chip_of(v.type) is not None for o in op.body.walk() for v in o.operands):
                return self.gather(op)
            raise self.refuse(op, "a chip's linalg.generic reads no cut value along one loop")
        extents: dict[int, int] = {}
        for v, m in zip(op.operands, maps, strict=True):
            for size, e in zip(_shape(v), m.results, strict=False):
                if isinstance(e, AffineDimExpr):
                    extents.setdefault(e.position, size)
        extents[loop] = cut.full

        def shape_of(m: object, v: SSAValue) -> list[int]:
            return [
                extents[e.position] if isinstance(e, AffineDimExpr) else s
                for s, e in zip(_shape(v), m.results, strict=True)  # type: ignore[attr-defined]
            ]

        self.whole_operands(op, [shape_of(m, v) for v, m in zip(op.operands, maps, strict=True)])
        n_in = len(op.inputs)
        types = [
            _whole(r, shape_of(maps[n_in + i], op.outputs[i])) for i, r in enumerate(op.results)
        ]
        made = self.emit(op, types)
        for i, r in enumerate(made.results):
            at = [j for j, e in enumerate(maps[n_in + i].results) if loop in e.used_dims()]
            if at:
                self.split[r] = cut.on_axis(at[0])

    def gather(self, op: linalg.GenericOp) -> None:
        """The inverse of `split_vocab.split_gather`: chip 0's masked lookup in its rows of
        a cut table, unmasked, over the whole table; its result the partial sum's value."""
        self.whole_operands(op, [_shape(v) for v in op.operands])  # whole buffers
        made = self.emit(op, [_whole(r, _shape(r)) for r in op.results])
        block = made.regions[0].block
        reads = [o for o in block.ops if isinstance(o, tensor.ExtractOp)]
        masked = block.last_op.operands[0].owner if block.last_op else None  # type: ignore[union-attr]
        found = [
            (o, i, v.owner)
            for o in reads
            for i, v in enumerate(o.indices)
            if isinstance(v.owner, arith.SelectOp) and isinstance(v.owner.lhs.owner, arith.SubiOp)
        ]
        if len(found) != 1 or not isinstance(masked, arith.SelectOp):
            raise self.refuse(op, "a chip's gather is not masked as tp-split masks a lookup")
        extract, axis, safe = found[0]
        local = safe.lhs.owner
        inside = safe.cond.owner
        assert isinstance(local, arith.SubiOp)
        extract.operands = [
            extract.tensor,
            *(local.lhs if i == axis else v for i, v in enumerate(extract.indices)),
        ]
        yielded = block.last_op
        assert yielded is not None
        yielded.operands = [masked.lhs]
        # The mask's ops, each erased once its readers are: what `_mask` inserted.
        mask = [masked, masked.rhs.owner, safe, inside]
        mask += [v.owner for v in inside.operands]  # the two bounds' comparisons
        mask += [local, *(v.owner for c in mask[-2:] for v in c.operands[1:])]  # type: ignore[union-attr]
        mask.append(local.rhs.owner)
        for o in mask:
            if (
                isinstance(o, Operation)
                and o.parent is block
                and not any(r.uses for r in o.results)
            ):
                Rewriter.erase_op(o)

    def extract(self, op: tensor.ExtractSliceOp, peers: list[Operation]) -> None:
        cut = self.cut_of(op.source)
        if cut is None:
            raise self.refuse(op, "a chip's slice of a value that is not cut")
        a = cut.axis
        if len(_shape(op.result)) != len(_shape(op.source)) or op.offsets or op.sizes:
            raise self.refuse(op, "a rank-reducing or dynamic slice of a cut value")
        local = [
            (p.static_offsets.get_values()[a], p.static_sizes.get_values()[a])  # type: ignore[attr-defined]
            for p in peers
        ]
        if any(x < 0 for pair in local for x in pair):
            raise self.refuse(op, f"a dynamic slice of axis {a}, which is cut")
        size = sum(n for _, n in local)
        for offset in range(cut.full - size + 1):
            got = window(cut, offset, size)
            if not isinstance(got, str) and list(got.local) == local:
                break
        else:
            raise self.refuse(op, f"the chips' slices of axis {a} are no window of its cut")
        offsets = list(op.static_offsets.get_values())
        sizes = list(op.static_sizes.get_values())
        offsets[a], sizes[a] = offset, size
        shape = _shape(op.result)
        shape[a] = size
        made = self.emit(
            op,
            [_whole(op.result, shape)],
            static_offsets=dense_i64(offsets),
            static_sizes=dense_i64(sizes),
        )
        self.split[made.results[0]] = got.split

    def expand(self, op: tensor.ExpandShapeOp) -> None:
        cut = self.cut_of(op.src)
        if cut is None:
            raise self.refuse(op, "a chip's expand_shape of a value that is not cut")
        groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
        group = groups[cut.axis]
        local = _shape(op.result)
        fits: list[tuple[list[int], Split]] = []  # each dim the cut may land on: its result
        for d in group:
            shape = list(local)
            shape[d] = local[d] * cut.full // max(cut.local(0), 1)
            got = expand(cut, [shape[i] for i in group], group[0])
            if not isinstance(got, str) and got.axis == d and got.local(0) == local[d]:
                fits.append((shape, got))
        if not fits:
            raise self.refuse(op, "no expansion of the cut gives the chips' shapes")
        # The chips' shapes may leave it open (a leading dim of 1 before the cut one): the
        # walk tries the outermost, then the innermost (`export_shard`).
        self.ambiguous |= len(fits) > 1
        shape, got = fits[0] if self.outermost else fits[-1]
        made = self.emit(op, [_whole(op.result, shape)], static_output_shape=dense_i64(shape))
        self.split[made.results[0]] = got

    def collapse(self, op: tensor.CollapseShapeOp) -> None:
        cut = self.cut_of(op.src)
        if cut is None:
            raise self.refuse(op, "a chip's collapse_shape of a value that is not cut")
        groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
        out_axis = next(i for i, g in enumerate(groups) if cut.axis in g)
        src = self.widened(op.src, cut)
        group = groups[out_axis]
        got = collapse(cut, [src[i] for i in group], group.index(cut.axis), out_axis)
        if isinstance(got, str):
            raise self.refuse(op, got)
        made = self.emit(op, [_whole(op.result, self.widened(op.result, got))])
        self.split[made.results[0]] = got

    # -- the result --------------------------------------------------------------------------

    def finish(self) -> None:
        """The return over the unsharded values; each view made whole is named as tp-split
        names a view (``<reader>_<name>_c0``) without its reader and chip."""
        ret = self.fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.block.add_op(func.ReturnOp(*[self.mapped(v, ret) for v in ret.operands]))
        order = {op: i for i, op in enumerate(self.block.ops)}
        for view in self.views.values():
            if view.made is None or not view.made.uses:
                continue
            reader = min((use.operation for use in view.made.uses), key=order.__getitem__)
            prefix = (reader.results[0].name_hint or "") + "_" if reader.results else "_"
            made = [view.made]
            if isinstance(view.made.owner, linalg.FillOp):
                made.append(view.made.owner.outputs[0])  # the fill's buffer, named alike
            for value in made:
                name = chip_base(value.name_hint or "", 0).removeprefix(prefix)
                value.name_hint = value_hint(name) if name else None


def _elementwise(op: Operation) -> bool:
    """A copy by tp-split's elementwise rule (`split_walk.elementwise`: the chip's copy has
    one shape throughout, as the op had), a fill of a cut buffer, an insert or a concat
    (`Splitter.insert`, `concat`)."""
    return isinstance(op, tensor.InsertSliceOp | tensor.ConcatOp | linalg.FillOp) or elementwise(op)
