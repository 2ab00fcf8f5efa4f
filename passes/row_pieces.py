"""A sequence-parallel region written out per chip (tp-sequence-parallel's rewrite).

The rows of the region's axis are cut into ``tiles`` consecutive tiles, each into one block
per chip (`attrs.even_ranges`): a *piece* is chip c's block of tile k. Each all-reduce becomes
one ``tp.reduce_scatter`` per tile (its partials' rows of the tile), each region statement
one statement per piece, and each value read whole one ``tp.all_gather`` per tile (joined by
a ``tensor.concat`` when there are several). With more than one tile, the contraction making
each chip's partial is cut into the tiles too, so that a tile's reduce-scatter can cross the
links while the chip computes the next tile (communication hidden under compute); tp-relocate
cuts each tile's partial into blocks right after it is made, so the sends start then. On the
gather side, what reads the joined tiles row by row reads them tile by tile (`tile_readers`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation, SSAValue, Use
from xdsl.ir.affine import AffineDimExpr
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.analysis.rows import Rows, row_axes, spine_shape
from tp_dialect.attrs import SliceAttr, chip_of, even_ranges, on_chip
from tp_dialect.linalg_kinds import index_loops, loop_view
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes.row_ops import fresh_init, loop_axes, same_op, window
from tp_dialect.passes.tile_readers import read_tiles
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp

Piece = tuple[int, int, int, int]
"""(tile, chip, first row, rows): chip c's block of tile k, in the whole axis's rows."""


def pieces(extent: int, tiles: int, n: int) -> list[Piece]:
    """The pieces of an axis of ``extent`` rows, tile by tile, chip by chip."""
    out: list[Piece] = []
    for k, (start, length) in enumerate(even_ranges(extent, tiles)):
        for c, (b, rows) in enumerate(even_ranges(length, n)):
            out.append((k, c, start + b, rows))
    return out


def tileable(seed: AllReduceOp, axis: int) -> bool:
    """Whether each partial of ``seed`` is made by a ``linalg.generic`` read by ``seed``
    alone, whose ``axis`` is a parallel loop its inputs read by that loop alone."""
    for p in seed.partials:
        op = p.owner
        if not isinstance(op, linalg.GenericOp) or len(op.results) != 1 or len(list(p.uses)) != 1:
            return False
        if _tile_loop(op, axis) is None:
            return False
    return True


def _tile_loop(op: linalg.GenericOp, axis: int) -> int | None:
    """The parallel loop ``op``'s output holds along ``axis``, if its operands read it by
    that loop alone (one axis each, or none)."""
    maps = [m.data for m in op.indexing_maps]
    e = maps[-1].results[axis]
    if not isinstance(e, AffineDimExpr) or str(op.iterator_types.data[e.position].data) != (
        "parallel"
    ):
        return None
    d = e.position
    view = loop_view(op)
    if view is None or d in index_loops(view):
        return None  # its body reads the row's index: a tile's rows count from 0
    return d if loop_axes(op, d) is not None else None


class RowRewrite:
    """Writes ``rows`` per piece (see the module docstring)."""

    def __init__(self, rows: Rows, n: int, tiles: int = 1) -> None:
        self.rows, self.n, self.tiles = rows, n, tiles
        self.blocks: dict[SSAValue, list[SSAValue]] = {}  # a region value's pieces, in order
        # a value's windows, by rows and chip: each chip reads a spine value as its own
        self.windows: dict[tuple[SSAValue, int, int, int, int | None], SSAValue] = {}
        self.made: dict[SSAValue, int] = {}  # how many windows of a value so far
        self.tiled: list[SSAValue] = []  # partials now made tile by tile
        self.last: dict[SSAValue, Operation] = {}  # what makes a value's last piece
        self.joins: set[Operation] = set()  # the gathered tiles' joins
        self.tile_of: dict[Operation, int] = {}  # each tile's partials' contractions

    def run(self) -> None:
        func = self.rows.seeds[0].parent_op()
        for seed in self.rows.seeds:
            self._scatter(seed)
        for op in self.rows.ops:
            self._per_piece(op)
        for v, uses in self.rows.exits().items():
            self._gather(v, uses)
        made = [p.owner for p in self.tiled]  # the contractions now made tile by tile
        inits = [v.owner for op in (*self.rows.ops, *made) for v in op.operands]  # type: ignore[union-attr]
        for op in reversed([*self.rows.seeds, *self.rows.ops]):
            Rewriter.erase_op(op)
        for op in made:
            Rewriter.erase_op(op)  # type: ignore[arg-type]
        # The spine's inits no region op writes into any more (a norm's zeros), if unread.
        for op in reversed(list(dict.fromkeys(inits))):
            if isinstance(op, tensor.EmptyOp | linalg.FillOp) and not any(
                r.uses for r in op.results
            ):
                owner = op.operands[-1].owner if isinstance(op, linalg.FillOp) else None
                Rewriter.erase_op(op)
                if isinstance(owner, tensor.EmptyOp) and not owner.results[0].uses:
                    Rewriter.erase_op(owner)
        if self.joins:  # the gather side: readers of the joined tiles go tile by tile
            assert isinstance(func, FuncOp)
            read_tiles(func, self.joins, self.tile_of)

    def _pieces(self, v: SSAValue, axis: int) -> list[Piece]:
        shape = spine_shape(v) or tuple(v.type.get_shape())  # type: ignore[attr-defined]
        return pieces(shape[axis], self.tiles, self.n)

    def _tile_slices(self, v: SSAValue, axis: int, tile: int) -> tuple[list[SliceAttr], list[int]]:
        """Tile ``tile`` of ``v`` along ``axis``: its blocks as slices of the tile, its shape."""
        shape = list(spine_shape(v) or v.type.get_shape())  # type: ignore[attr-defined]
        start, length = even_ranges(shape[axis], self.tiles)[tile]
        shape[axis] = length
        mine = [p for p in self._pieces(v, axis) if p[0] == tile]
        return [SliceAttr(axis, [(r0 - start, rows)], shape) for _, _, r0, rows in mine], shape

    def _scatter(self, seed: AllReduceOp) -> None:
        axis = self.rows.axis[seed.result]
        partials: list[list[SSAValue]] = [list(seed.partials)]
        if self.tiles > 1:
            partials = self._tile_partials(seed, axis)
        made: list[SSAValue] = []
        for k, tile in enumerate(partials):
            slices, _ = self._tile_slices(seed.result, axis, k)
            rs = ReduceScatterOp(tile, slices)
            Rewriter.insert_op(rs, InsertPoint.before(seed))
            for c, part in enumerate(rs.parts):
                part.name_hint = value_hint(self._name(seed.result, k, c))
            made += list(rs.parts)
            self.last[seed.result] = rs
        self.blocks[seed.result] = made

    def _name(self, v: SSAValue, tile: int, chip: int) -> str:
        t = f"t{tile}" if self.tiles > 1 else ""
        return f"{value_name(v)}_{t}b{chip}"

    def _tile_partials(self, seed: AllReduceOp, axis: int) -> list[list[SSAValue]]:
        """Each chip's partial made tile by tile (its generic on the tile's rows of what it
        reads by the tile loop); per tile, the chips' partials."""
        out: list[list[SSAValue]] = [[] for _ in range(self.tiles)]
        self.tiled += list(seed.partials)
        for p in seed.partials:
            op = p.owner
            assert isinstance(op, linalg.GenericOp)
            d = _tile_loop(op, axis)
            assert d is not None
            axes = loop_axes(op, d)
            assert axes is not None
            extent = list(p.type.get_shape())[axis]  # type: ignore[attr-defined]
            for k, (start, length) in enumerate(even_ranges(extent, self.tiles)):
                operands: list[SSAValue] = []
                for i, (v, a) in enumerate(zip(op.operands, axes, strict=True)):
                    if a is None:
                        operands.append(v)
                    elif i >= len(op.inputs):
                        operands.append(self._fresh(v, a, start, length, chip_of(p.type), op))
                    else:
                        # a spine input (ids, a shared activation) is cut once for every chip
                        operands.append(self._cut(v, a, start, length, chip_of(v.type), op))
                shape = list(p.type.get_shape())  # type: ignore[attr-defined]
                shape[axis] = length
                t = p.type
                assert isinstance(t, TensorType)
                tile = same_op(
                    op, operands, [on_chip(TensorType(t.element_type, shape), chip_of(t))]
                )
                tile.results[0].name_hint = value_hint(f"{value_name(p)}_t{k}")
                Rewriter.insert_op(tile, InsertPoint.before(op))
                self.tile_of[tile] = k
                out[k].append(tile.results[0])
        return out

    def _cut(
        self, v: SSAValue, axis: int, start: int, rows: int, chip: int | None, before: Operation
    ) -> SSAValue:
        """Rows ``[start, start + rows)`` of ``v`` along ``axis``, as chip ``chip``'s."""
        key = (v, axis, start, rows, chip)
        if key not in self.windows:
            cut = window(v, axis, start, rows, chip)
            self.made[v] = self.made.get(v, -1) + 1
            cut.results[0].name_hint = value_hint(f"{value_name(v)}_w{self.made[v]}")
            Rewriter.insert_op(cut, InsertPoint.before(before))
            self.windows[key] = cut.results[0]
        return self.windows[key]

    def _fresh(
        self, v: SSAValue, axis: int, start: int, rows: int, chip: int | None, before: Operation
    ) -> SSAValue:
        """An init for rows ``[start, start + rows)``: a fresh empty tensor (or fill of one)
        where ``v`` is one, else its window."""
        made = fresh_init(v, axis, rows, chip)
        if made is not None:
            Rewriter.insert_op(made, InsertPoint.before(before))
            return made[-1].results[0]
        return self._cut(v, axis, start, rows, chip, before)

    def _per_piece(self, op: Operation) -> None:
        how = row_axes(op, self.rows)
        assert how is not None
        _, axes, outs = how
        n_in = len(op.inputs) if isinstance(op, linalg.GenericOp) else len(op.operands)
        first = next(v for v in op.operands if v in self.blocks)
        made: list[Operation] = []
        for i, (k, c, start, rows) in enumerate(self._pieces(first, self.rows.axis[first])):
            operands: list[SSAValue] = []
            for j, (v, a) in enumerate(zip(op.operands, axes, strict=True)):
                if v in self.blocks:
                    operands.append(self.blocks[v][i])
                elif a is None:
                    operands.append(v)  # no rows: every chip reads it whole
                elif j >= n_in:
                    operands.append(self._fresh(v, a, start, rows, c, op))
                else:
                    operands.append(self._cut(v, a, start, rows, c, op))
            types: list[Attribute] = []
            for r, a in zip(op.results, outs, strict=True):
                shape = list(spine_shape(r) or ())
                shape[a] = rows
                types.append(on_chip(TensorType(r.type.element_type, shape), c))  # type: ignore[attr-defined]
            new = same_op(op, operands, types)
            for r, old in zip(new.results, op.results, strict=True):
                r.name_hint = value_hint(self._name(old, k, c))
            Rewriter.insert_op(new, InsertPoint.before(op))
            made.append(new)
        for j, r in enumerate(op.results):
            self.blocks[r] = [m.results[j] for m in made]
            self.last[r] = made[-1]

    def _gather(self, v: SSAValue, uses: Sequence[Use]) -> None:
        axis = self.rows.axis[v]
        tiles: list[SSAValue] = []
        at: Operation = self.last[v]
        for k in range(self.tiles):
            slices, _ = self._tile_slices(v, axis, k)
            mine = self.blocks[v][k * self.n : (k + 1) * self.n]
            ag = AllGatherOp(mine, slices)
            ag.result.name_hint = (
                v.name_hint if self.tiles == 1 else value_hint(f"{value_name(v)}_t{k}")
            )
            Rewriter.insert_op(ag, InsertPoint.after(at))
            at = ag
            tiles.append(ag.result)
        whole = tiles[0]
        if self.tiles > 1:
            join = tensor.ConcatOp(tiles, axis, v.type)  # type: ignore[arg-type]
            join.result.name_hint = v.name_hint
            Rewriter.insert_op(join, InsertPoint.after(at))
            self.joins.add(join)
            whole = join.result
        for use in list(uses):
            use.operation.operands[use.index] = whole
