"""tp-transfers: explicit ``tp.transfer`` ops for every tensor that crosses between chips.

Invariant: before each section, every value it reads on a chip that does not yet hold it is
transferred there from the chip that wrote it — once per (tensor, reader chip), before that
chip's first read; host values (weights, inputs, constants) cross nothing. With the seed's
all-reduce this shows the partials going to chip 0 and the sum coming back; with ``oneshot``
every partial going to every chip. Existing transfers are honoured, so the pass is idempotent.

A ``twoshot`` all-reduce is first spelled as ordinary statements (a reduce-scatter, then an
all-gather) over a tensor cut into N slices along its longest axis (`cost.split_axis`):

- on each chip c, for each chip s, slice s of its partial (``tensor.extract_slice``, chip c's);
- on each chip s, the left fold of adds of slice s of every partial, in chip order — a valid
  fold, so a spine value: the reduced slice s (bitwise slice s of the seed's fold);
- on every chip, the reduced slices concatenated in order: the sum.

Transfers then move slice s of partial c from chip c to chip s and reduced slice s from chip s
to every chip, so per-chip programs and the relay hold it like any other exchange.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.cost import split_axis
from tp_dialect.analysis.touch import collective, statements
from tp_dialect.analysis.transfers import ChipTransfer, transfers
from tp_dialect.attrs import chip_of, on_chip
from tp_dialect.certificate import kept
from tp_dialect.grid import stated_chips
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, SectionOp, TransferOp, YieldOp
from tp_dialect.passes.rewrites import move_op, set_algorithm
from tp_dialect.reject import TpReject
from tp_dialect.signature import entry_function


def twoshot_statements(section: SectionOp, reduce: AllReduceOp) -> list[Operation]:
    """The statements replacing ``section`` (which holds the two-shot ``reduce``), in order,
    built but not inserted, the last one yielding the sum and all ``section`` yields; raises
    NOT_LINKABLE when the tensor has no axis of N elements to cut. Empty tensors the folds
    write into come first (constants: every chip holds its own)."""
    result_t = reduce.result.type
    assert isinstance(result_t, TensorType)
    n = len(reduce.partials)
    cut = split_axis(result_t, n)
    if cut is None:
        raise TpReject.NOT_LINKABLE.at(
            reduce,
            f"a twoshot all-reduce of {result_t} over {n} chips needs an axis of at least "
            f"{n} elements to give every chip a slice: choose another algorithm",
        )
    label = section.label.data if section.label else value_name(reduce.result)
    axis, shape = cut.axis_index, list(result_t.get_shape())
    out: list[Operation] = []
    pieces: list[list[SSAValue]] = [[] for _ in range(n)]  # pieces[s][c]: slice s of p_c
    for c, partial in enumerate(reduce.partials):
        for s, (start, length) in enumerate(cut.ranges):
            sizes = shape.copy()
            sizes[axis] = length
            offsets = [0] * len(shape)
            offsets[axis] = start
            cut_op = _extract(partial, offsets, sizes, c)
            piece = _section(f"{label}.p{c}s{s}", [c], [cut_op])
            piece.outs[0].name_hint = f"{label}_p{c}s{s}"
            out.append(piece)
            pieces[s].append(piece.outs[0])
    reduced: list[SSAValue] = []
    for s, (_, length) in enumerate(cut.ranges):
        sizes = shape.copy()
        sizes[axis] = length
        slice_t = on_chip(TensorType(result_t.element_type, sizes), None)
        empty = tensor.EmptyOp([], slice_t)
        empty.results[0].name_hint = f"{label}_z{s}"
        out.insert(s, empty)
        adds: list[Operation] = []
        acc = pieces[s][0]
        for piece in pieces[s][1:]:
            add = linalg.AddOp((acc, piece), (empty.results[0],), (slice_t,))
            adds.append(add)
            acc = add.results[0]
        fold = _section(f"{label}.rs{s}", [s], adds)
        fold.outs[0].name_hint = f"{label}_rs{s}"
        out.append(fold)
        reduced.append(fold.outs[0])
    # The all-gather's section yields the sum in place of the all-reduce, and everything else
    # ``section`` yielded: the all-reduce's fused epilogue, which `ExpandTwoshot` moves in.
    gather = tensor.ConcatOp(reduced, axis, result_t)
    yielded = [gather.result if v is reduce.result else v for v in section.yield_op.values]
    body = Block([gather, YieldOp(*yielded)])
    out.append(SectionOp(section.chip_list, Region(body), [v.type for v in yielded], label))
    return out


def _extract(
    source: SSAValue, offsets: Sequence[int], sizes: Sequence[int], chip: int
) -> tensor.ExtractSliceOp:
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
class ExpandTwoshot(RewritePattern):
    """A section holding a two-shot all-reduce: its reduce-scatter and all-gather instead."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, SectionOp) or not isinstance(op.parent_op(), FuncOp):
            return
        reduce = collective(op)
        if not isinstance(reduce, AllReduceOp) or reduce.algorithm_name != "twoshot":
            return
        if len(reduce.partials) == 1:
            set_algorithm(rewriter, reduce, "fold")  # one chip: the partial is the sum
            return
        statements = twoshot_statements(op, reduce)
        rewriter.insert(statements, InsertPoint.before(op))
        gathered = statements[-1]
        assert isinstance(gathered, SectionOp)
        # The fused epilogue, if any (the section's other ops), moves after the gather and
        # reads the gathered sum.
        gather = gathered.body.block.first_op
        assert gather is not None
        epilogue = [o for o in op.body.block.ops if o is not reduce and not isinstance(o, YieldOp)]
        rewriter.replace_uses_with_if(
            reduce.result, gather.results[0], lambda use: use.operation is not op.yield_op
        )
        for o in epilogue:
            move_op(rewriter, o, InsertPoint.before(gathered.yield_op))
        outs = gathered.results
        for new, old in zip(outs, op.outs, strict=True):
            new.name_hint = old.name_hint
        rewriter.replace(op, [], list(outs))


@dataclass
class InsertTransfers(RewritePattern):
    """Before a reading section: the transfers it needs, in the order the analysis found."""

    before: dict[Operation, list[ChipTransfer]]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        needed = self.before.pop(op, None)
        if needed:
            rewriter.insert(
                [TransferOp(t.value, t.src, t.dst) for t in needed], InsertPoint.before(op)
            )


@dataclass(frozen=True)
class TpTransfers(ModulePass):
    """Insert a tp.transfer for each (tensor, reader chip) that crosses, before its read; a
    statement outside a section is refused (``not-sectioned``)."""

    name = "tp-transfers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = entry_function(op)
        for stmt in statements(func):
            if not isinstance(stmt, SectionOp | TransferOp):
                raise TpReject.NOT_SECTIONED.at(
                    stmt,
                    f"'{stmt.name}' is not in a tp.section: run tp-relocate before placing "
                    "transfers",
                )
        # Copies, and a two-shot sum spelled as its valid folds: the obligation still holds.
        with kept(op):
            PatternRewriteWalker(ExpandTwoshot(), apply_recursively=False).rewrite_module(op)
            plan: dict[Operation, list[ChipTransfer]] = {}
            for t in transfers(func, stated_chips(op) or 1):
                plan.setdefault(t.reader, []).append(t)
            if plan:
                walker = PatternRewriteWalker(InsertTransfers(plan), apply_recursively=False)
                walker.rewrite_module(op)
