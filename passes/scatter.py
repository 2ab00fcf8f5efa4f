"""A reduce-scatter spelled as per-chip statements: the form tp-transfers gives a two-shot or
ring all-reduce's first half, and tp-relocate a ``tp.reduce_scatter``.

Over a tensor cut into blocks along one axis: on each chip c, for each chip s, block s of its
partial (``tensor.extract_slice``, a section on c); then each block's sum, a left fold of adds
— a valid fold, which the certificate sees as an all-reduce of the blocks (rule 3), ending
on chip s. ``direct`` (a two-shot's): on chip s, block s of every partial in chip order, one
section (bitwise block s of the seed's fold). ``ring``: block s starts on chip s+1 as its own
block; at step t = 1..N-1, chip s+1+t (mod N) adds its block s to the sum so far, which the chip
before it sends it — one section per add, N sections a step (one a chip), so the sum travels
neighbour to neighbour and block s is added in the cyclic rotation s+1, s+2, ..., s of chip
order (a ring fold: the same sum, rounded in that order). The transfers between are
tp-transfers' to insert.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import tensor
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.attrs import chip_of, on_chip
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import SectionOp, YieldOp
from tp_dialect.scatter_ops import ReduceScatterOp


def cut_pieces(
    label: str, partials: Sequence[SSAValue], axis: int, ranges: Sequence[tuple[int, int]]
) -> tuple[list[Operation], list[list[SSAValue]]]:
    """Each chip's blocks of its partial, one section each (in chip order, then block order),
    and ``pieces[s][c]``: block s of chip c's partial."""
    out: list[Operation] = []
    pieces: list[list[SSAValue]] = [[] for _ in ranges]
    for c, partial in enumerate(partials):
        t = partial.type
        assert isinstance(t, TensorType)
        shape = list(t.get_shape())
        for s, (start, length) in enumerate(ranges):
            sizes = shape.copy()
            sizes[axis] = length
            offsets = [0] * len(shape)
            offsets[axis] = start
            piece = _section(f"{label}.p{c}s{s}", [c], [_extract(partial, offsets, sizes)])
            piece.outs[0].name_hint = value_hint(f"{label}_p{c}s{s}")
            out.append(piece)
            pieces[s].append(piece.outs[0])
    return out, pieces


def fold_blocks(
    label: str,
    pieces: list[list[SSAValue]],
    into: Sequence[SSAValue],
    blocks: Sequence[TensorType] | None,
    ring: bool,
) -> tuple[list[SectionOp], list[SSAValue]]:
    """The folds of ``pieces`` (`cut_pieces`), block s's adds writing into the spine tensor
    ``into[s]`` and its last add on chip s; their sections in order and the reduced blocks.
    With ``blocks``, block s is then retyped as chip s's (``tensor.cast`` to ``blocks[s]``,
    in the last add's section): a reduce-scatter's result, where a two-shot all-reduce keeps
    the spine sum its all-gather concatenates."""
    n = len(pieces)
    out: list[SectionOp] = []
    if not ring:
        for s, (first, *rest) in enumerate(pieces):
            cast = blocks[s] if blocks else None
            out.append(_adds(f"{label}.rs{s}", f"{label}_rs{s}", s, first, rest, into[s], cast))
        return out, [f.outs[0] for f in out]
    sums = [pieces[s][(s + 1) % n] for s in range(n)]
    for t in range(1, n):
        for s in range(n):
            chip = (s + 1 + t) % n
            final = t == n - 1  # the reduced block, named as the direct one's
            step, name = (f"rs{s}", f"rs{s}") if final else (f"rs{s}.t{t}", f"rs{s}t{t}")
            cast = blocks[s] if blocks and final else None
            add = _adds(
                f"{label}.{step}",
                f"{label}_{name}",
                chip,
                sums[s],
                [pieces[s][chip]],
                into[s],
                cast,
            )
            out.append(add)
            sums[s] = add.outs[0]
    return out, sums


def _adds(
    label: str,
    name: str,
    chip: int,
    first: SSAValue,
    rest: list[SSAValue],
    into: SSAValue,
    cast: TensorType | None = None,
) -> SectionOp:
    """A section on ``chip`` adding ``rest`` to ``first`` in order (a left fold of adds, each
    writing into the spine tensor ``into``), its sum (retyped to ``cast``) bound as ``name``."""
    ops: list[Operation] = []
    acc = first
    for piece in rest:
        add = linalg.AddOp((acc, piece), (into,), (into.type,))
        ops.append(add)
        acc = add.results[0]
    if cast is not None:
        ops.append(tensor.CastOp(acc, cast))
    section = _section(label, [chip], ops)
    section.outs[0].name_hint = value_hint(name)
    return section


def _extract(source: SSAValue, offsets: Sequence[int], sizes: Sequence[int]) -> Operation:
    t = source.type
    assert isinstance(t, TensorType)
    return tensor.ExtractSliceOp.build(
        operands=[source, [], [], []],
        result_types=[on_chip(TensorType(t.element_type, list(sizes)), chip_of(t))],
        properties={
            "static_offsets": DenseArrayBase.from_list(i64, list(offsets)),
            "static_sizes": DenseArrayBase.from_list(i64, list(sizes)),
            "static_strides": DenseArrayBase.from_list(i64, [1] * len(offsets)),
        },
    )


def _section(label: str, chips: Sequence[int], ops: list[Operation]) -> SectionOp:
    last = ops[-1].results[0]
    return SectionOp(chips, Region(Block([*ops, YieldOp(last)])), [last.type], label)


@dataclass
class SpellReduceScatter(RewritePattern):
    """A section holding a ``tp.reduce_scatter`` (placed on every chip by tp-relocate): its
    blocks cut on their chips and folded, the sum of block s ending on chip s (in a tensor of
    chip s's: the op's result, now a fold's), its algorithm's way (`fold_blocks`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, SectionOp) or not isinstance(op.parent_op(), FuncOp):
            return
        inner = [o for o in op.body.block.ops if not isinstance(o, YieldOp)]
        if len(inner) != 1 or not isinstance(scatter := inner[0], ReduceScatterOp):
            return
        partials = list(scatter.partials)
        if len(partials) == 1:  # one chip: its block is its whole partial, the sum
            rewriter.replace(op, [], partials)
            return
        label = op.label.data if op.label else value_name(scatter.parts[0])
        ranges = [sl.ranges[0] for sl in scatter.slices.data]
        cuts, pieces = cut_pieces(label, partials, scatter.axis, ranges)
        ring = scatter.entry.name == "ring"
        # The sums are spine tensors, as every fold's (constants every chip holds); each
        # reduced block is then retyped as its chip's.
        blocks = [t for t in scatter.parts.types if isinstance(t, TensorType)]
        empties = [tensor.EmptyOp([], on_chip(t, None)) for t in blocks]
        for s, e in enumerate(empties):
            e.results[0].name_hint = value_hint(f"{label}_z{s}")
        into = [e.results[0] for e in empties]
        folds, reduced = fold_blocks(label, pieces, into, blocks, ring)
        rewriter.insert(empties, InsertPoint.before(op))
        # Each chip cuts its partial as soon as it is made, so its blocks can leave then
        # (while the chip computes on: a tiled contraction's next tile).
        n = len(partials)
        for c, partial in enumerate(partials):
            made = partial.owner
            mine = cuts[c * n : (c + 1) * n]
            if isinstance(made, SectionOp) and made.parent_block() is op.parent_block():
                rewriter.insert(mine, InsertPoint.after(made))
            else:
                rewriter.insert(mine, InsertPoint.before(op))
        rewriter.insert(folds, InsertPoint.before(op))
        for new, old in zip(reduced, op.outs, strict=True):
            new.name_hint = old.name_hint
        rewriter.replace(op, [], reduced)
