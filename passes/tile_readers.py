"""The gather side of tiles (tp-sequence-parallel's, with ``tiles`` > 1): what reads the
gathered tiles row by row reads them tile by tile.

Invariant: a ``linalg.generic`` reading a *tile join* (the ``tensor.concat`` of a value's
all-gathered tiles along its rows, or one this rewrite made) by a parallel loop alone — no
reduction over the rows, no body reading that loop's index, every other operand reading the
loop by one axis or not at all — becomes one generic per tile on that tile's rows (the join's
own tiles, the tile's window of any other operand, a fresh init), its results joined again;
a window of a join that is exactly one of its tiles is that tile. Each element is computed by
the same body from the same values, so the numbers are bitwise the source's; what reads the
rows otherwise (attention, a return) still reads the whole join. So a projection of the
gathered norm starts on a tile as soon as that tile has crossed the links, and the rest of
the MLP follows tile by tile into the tiles of its reduce-scatter (collective matmul on both
sides), where the joined value was gathered whole before.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from xdsl.dialects import tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.analysis.touch import written_in_place
from tp_dialect.attrs import chip_of, on_chip
from tp_dialect.linalg_kinds import index_loops, loop_view
from tp_dialect.names import value_hint, value_name
from tp_dialect.passes.row_ops import fresh_init, loop_axes, same_op, window
from tp_dialect.scatter_ops import AllGatherOp

Runs = tuple[tuple[int, int], ...]  # a join's tiles: (first row, rows) each
_REMAKE = (tensor.ConcatOp, tensor.ExtractSliceOp, linalg.FillOp, tensor.EmptyOp)
"""What a tile reader makes afresh per tile, so that the whole one may be left unread."""


def runs(join: tensor.ConcatOp) -> Runs:
    """Where each of ``join``'s inputs lies along its axis."""
    axis = join.dim.value.data
    out, start = [], 0
    for v in join.inputs:
        rows = v.type.get_shape()[axis]  # type: ignore[attr-defined]
        out.append((start, rows))
        start += rows
    return tuple(out)


@dataclass
class ReadTilesByTile(RewritePattern):
    """A generic reading a tile join row by row: once per tile (module docstring)."""

    joins: set[Operation] = field(default_factory=set[Operation])
    """The tile joins: the all-gathers' and those this pattern made."""
    tile_of: dict[Operation, int] = field(default_factory=dict[Operation, int])
    """Each generic made, by the tile it computes."""
    read: set[Operation] = field(default_factory=set[Operation])
    """The joins some generic now reads tile by tile."""
    replaced: set[Operation] = field(default_factory=set[Operation])
    """What the replaced generics read (their inits, windows), erased if left unread."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        found = self._match(op)
        if found is None:
            return
        d, axes, tiles = found
        n_in = len(op.inputs)
        made: list[Operation] = []
        for k, (start, rows) in enumerate(tiles):
            operands: list[SSAValue] = []
            for j, (v, a) in enumerate(zip(op.operands, axes, strict=True)):
                if a is None:
                    operands.append(v)
                elif (join := self._join(v, a, tiles)) is not None:
                    operands.append(join.inputs[k])
                elif j >= n_in and (fresh := fresh_init(v, a, rows, chip_of(v.type))):
                    rewriter.insert(fresh, InsertPoint.before(op))
                    operands.append(fresh[-1].results[0])
                else:
                    cut = window(v, a, start, rows, chip_of(v.type))
                    cut.results[0].name_hint = value_hint(f"{value_name(v)}_r{start}")
                    rewriter.insert(cut, InsertPoint.before(op))
                    operands.append(cut.results[0])
            types = []
            for r, a in zip(op.results, axes[n_in:], strict=True):
                assert a is not None and isinstance(r.type, TensorType)
                shape = list(r.type.get_shape())
                shape[a] = rows
                types.append(on_chip(TensorType(r.type.element_type, shape), chip_of(r.type)))
            tile = same_op(op, operands, types)
            for r, old in zip(tile.results, op.results, strict=True):
                r.name_hint = value_hint(f"{value_name(old)}_t{k}")
            rewriter.insert(tile, InsertPoint.before(op))
            self.tile_of[tile] = k
            made.append(tile)
        joined: list[SSAValue] = []
        for j, r in enumerate(op.results):
            a = axes[n_in + j]
            assert a is not None
            join = tensor.ConcatOp([m.results[j] for m in made], a, r.type)  # type: ignore[arg-type]
            join.result.name_hint = r.name_hint
            rewriter.insert(join, InsertPoint.before(op))
            self.joins.add(join)
            joined.append(join.result)
        self.replaced.update(v.owner for v in op.operands if isinstance(v.owner, Operation))
        rewriter.replace(op, [], joined)

    def _join(self, v: SSAValue, axis: int, tiles: Runs) -> tensor.ConcatOp | None:
        """``v``'s tile join, if it is one along ``axis`` in ``tiles``."""
        join = v.owner
        if isinstance(join, tensor.ConcatOp) and join in self.joins:
            if join.dim.value.data == axis and runs(join) == tiles:
                return join
        return None

    def _match(self, op: linalg.GenericOp) -> tuple[int, list[int | None], Runs] | None:
        """The row loop, each operand's axis of it, and the tiles, when ``op`` reads a tile
        join by a parallel loop alone and makes each result along it."""
        view = loop_view(op)
        if view is None:
            return None
        for v, m in zip(op.inputs, op.indexing_maps, strict=False):
            join = v.owner
            if not (isinstance(join, tensor.ConcatOp) and join in self.joins):
                continue
            e = m.data.results[join.dim.value.data]
            if not isinstance(e, AffineDimExpr):
                continue
            d = e.position
            if str(op.iterator_types.data[d].data) != "parallel" or d in index_loops(view):
                continue  # a reduction over the rows, or a body counting them from 0
            axes = loop_axes(op, d)
            if axes is None or any(a is None for a in axes[len(op.inputs) :]):
                continue
            self.read.add(join)
            return d, axes, runs(join)
        return None


@dataclass
class WindowOfJoin(RewritePattern):
    """A window of a tile join that is exactly one of its tiles is that tile."""

    joins: set[Operation]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.ExtractSliceOp, rewriter: PatternRewriter) -> None:
        join = op.source.owner
        if not (isinstance(join, tensor.ConcatOp) and join in self.joins) or op.offsets:
            return
        axis = join.dim.value.data
        offsets = list(op.static_offsets.get_values())
        sizes = list(op.static_sizes.get_values())
        strides = list(op.static_strides.get_values())
        shape = list(join.result.type.get_shape())  # type: ignore[attr-defined]
        others = [
            (o, z, full)
            for i, (o, z, full) in enumerate(zip(offsets, sizes, shape, strict=True))
            if i != axis
        ]
        if any(s != 1 for s in strides) or any((o, z) != (0, full) for o, z, full in others):
            return
        for tile, run in zip(join.inputs, runs(join), strict=True):
            if run == (offsets[axis], sizes[axis]) and tile.type == op.result.type:
                rewriter.replace(op, [], [tile])
                return


def read_tiles(func: FuncOp, joins: set[Operation], tile_of: dict[Operation, int]) -> None:
    """Rewrite ``func`` so that what reads the tile joins ``joins`` row by row reads them
    tile by tile (module docstring), erasing what is left unread, then order the statements
    from the first reader made on tile by tile (`tile_major`; ``tile_of``: the statements
    already made per tile, each tile's partials: those after the readers, which read them,
    follow their tile; those before keep their order, each tile's exchange under the next
    tile's contraction)."""
    readers = ReadTilesByTile(joins)
    PatternRewriteWalker(readers, apply_recursively=True).rewrite_region(func.body)
    PatternRewriteWalker(WindowOfJoin(joins)).rewrite_region(func.body)
    block = func.body.block
    dead = joins | readers.replaced
    for op in reversed(list(block.ops)):  # joins, windows and inits left unread
        if op in dead and isinstance(op, _REMAKE) and not any(r.uses for r in op.results):
            dead.update(v.owner for v in op.operands if isinstance(v.owner, Operation))
            Rewriter.erase_op(op)
    made = {op: k for op, k in readers.tile_of.items() if op.parent is block}
    for join in readers.read & joins:  # each tile gathered just before its readers
        for k, v in enumerate(join.operands):
            if isinstance(v.owner, AllGatherOp) and v.owner.parent is block:
                made[v.owner] = k
    if made:  # from the first reader on: the partials before them keep their order
        first = min(block.get_operation_index(op) for op in made)
        later = {
            op: k
            for op, k in tile_of.items()
            if op.parent is block and block.get_operation_index(op) > first
        }
        tile_major(block, {**later, **made})


def tile_major(block: Block, tile_of: dict[Operation, int]) -> None:
    """Order the statements of ``block`` from the first in ``tile_of`` to the last so that
    tile k's come before tile k+1's: a chip runs its statements in order, so tile 0's
    projections would otherwise wait behind tile 1's, whose rows are still crossing the
    links. A topological order (each statement after what it reads), taking the statements
    ready by tile then place; a statement of no tile (a weight's shard, an init) goes with
    its first reader, one no tile reads (a tile's reduce-scatter, what follows it) after
    every tile, so its exchange crosses the links under the later tiles' work. Nothing
    moves where a statement between updates memory in place."""
    ops = list(block.ops)
    at = [i for i, op in enumerate(ops) if op in tile_of]
    if not at:
        return
    segment = ops[at[0] : at[-1] + 1]
    if any(next(written_in_place(op), None) is not None for op in segment):
        return
    place = {op: i for i, op in enumerate(segment)}
    last = max(tile_of.values()) + 1  # what no tile reads (a tile's exchange) after them all
    key: dict[Operation, tuple[int, int]] = {}
    for op in reversed(segment):  # a reader's key is known before what it reads
        readers = [u.operation for r in op.results for u in r.uses]
        mine = [key[_statement(u, place)] for u in readers if _statement(u, place) in key]
        key[op] = (
            (tile_of[op], place[op]) if op in tile_of else min(mine, default=(last, place[op]))
        )
    waits = {op: {d for d in _reads(op, place) if d is not op} for op in segment}
    ready = [(key[op], place[op], op) for op in segment if not waits[op]]
    heapq.heapify(ready)
    order: list[Operation] = []
    readers_of: dict[Operation, list[Operation]] = {op: [] for op in segment}
    for op, deps in waits.items():
        for d in deps:
            readers_of[d].append(op)
    while ready:
        _, _, op = heapq.heappop(ready)
        order.append(op)
        for r in readers_of[op]:
            waits[r].discard(op)
            if not waits[r]:
                heapq.heappush(ready, (key[r], place[r], r))
    assert len(order) == len(segment)
    anchor = segment[-1].next_op
    for op in order:
        op.detach()
        if anchor is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, anchor)


def _statement(op: Operation, place: dict[Operation, int]) -> Operation | None:
    """The statement of the segment ``op`` is (or is nested in), if any."""
    while op is not None and op not in place:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def _reads(op: Operation, place: dict[Operation, int]) -> set[Operation]:
    """The statements of the segment whose results ``op`` (or an op nested in it) reads."""
    out: set[Operation] = set()
    for inner in op.walk():
        for v in inner.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner in place:
                out.add(owner)
    return out
