"""tp-transfers: explicit ``tp.transfer`` ops for every tensor that crosses between chips.

Invariant: before each section, every value it reads on a chip that does not yet hold it is
transferred there from the chip that wrote it — once per (tensor, reader chip), before that
chip's first read; host values (weights, inputs, constants) cross nothing. With the seed's
all-reduce this shows the partials going to chip 0 and the sum coming back; with ``oneshot``
every partial going to every chip. Existing transfers are honoured, so the pass is idempotent.

A ``twoshot`` or ``ring`` all-reduce is first spelled as ordinary statements (a
reduce-scatter, then an all-gather) over a tensor cut into N slices along its longest axis
(`cost.split_axis`):

- on each chip c, for each chip s, slice s of its partial (``tensor.extract_slice``, chip c's);
- the reduce-scatter, each slice's sum a left fold of adds — a valid fold, so a spine value:
  the reduced slice s, which ends on chip s. ``twoshot``: on chip s, slice s of every partial
  in chip order, one section (bitwise slice s of the seed's fold). ``ring``: slice s starts on
  chip s+1 as its own slice; at step t = 1..N-1, chip s+1+t (mod N) adds its own slice s to
  the sum so far, which the chip before it sends it — one section per add, N sections a step
  (one a chip), so the sum travels neighbour to neighbour and slice s is added in the cyclic
  rotation s+1, s+2, ..., s of chip order (a ring fold: the same sum, rounded in that order);
- on every chip, the reduced slices concatenated in order: the sum (the all-reduce's fused
  epilogue, if any, after it in the same section).

Transfers then move what each section reads to its chip: a twoshot's slice s of partial c
from chip c to chip s, a ring's sum so far to the next chip, and each reduced slice s from
chip s to every chip — the ring's all-gather too goes straight from chip s rather than hop by
hop: a chip's program cannot pass on a copy it received without a section of its own between
the two halts (tp-link-points sends what a section of the sender stored). Per-chip programs
and the relay hold these like any other exchange. A ring whose tensor has no axis of N
elements stays one collective (tp-link-points refuses it); a twoshot one is refused here.

An outlined program (``@decode`` calling ``@layer``): the callee's transfers are placed once,
in the callee, which takes its arguments for host values (every chip reading one holds it);
a lowered call (`tp_dialect.analysis.calls.outlined`) stays a bare statement of its caller, and
before it the caller transfers each operand to the chips the callee reads it on. Callees
are done first: where a callee leaves its results (its `CallSummary`) is where the caller
finds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.calls.summary import CallSummary, summarize
from tp_dialect.analysis.schedule.crossings import ChipTransfer, transfers
from tp_dialect.analysis.timing.cost import split_axis
from tp_dialect.analysis.touch import collective
from tp_dialect.attrs import on_chip
from tp_dialect.certificate import kept
from tp_dialect.collectives import SEED
from tp_dialect.grid import stated_chips
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp, SectionOp, TransferOp, YieldOp
from tp_dialect.passes.preconditions import lowered_of, placed
from tp_dialect.passes.rewrites import move_op, set_algorithm
from tp_dialect.passes.scatter import cut_pieces, fold_blocks
from tp_dialect.reject import TpReject


def split_statements(section: SectionOp, reduce: AllReduceOp) -> list[Operation]:
    """The statements replacing ``section`` (which holds the two-shot or ring ``reduce``), in
    order, built but not inserted, the last one yielding the sum and all ``section`` yields;
    raises NOT_LINKABLE when the tensor has no axis of N elements to cut. Empty tensors the
    folds write into come first (constants: every chip holds its own)."""
    result_t = reduce.result.type
    assert isinstance(result_t, TensorType)
    n = len(reduce.partials)
    algorithm = reduce.algorithm_name
    cut = split_axis(result_t, n)
    if cut is None:
        raise TpReject.NOT_LINKABLE.at(
            reduce,
            f"a {algorithm} all-reduce of {result_t} over {n} chips needs an axis of at "
            f"least {n} elements to give every chip a slice: choose another algorithm",
        )
    label = section.label.data if section.label else value_name(reduce.result)
    axis, shape = cut.axis_index, list(result_t.get_shape())
    pieces_out, pieces = cut_pieces(label, list(reduce.partials), axis, cut.ranges)
    empties: list[Operation] = []
    for s, (_, length) in enumerate(cut.ranges):
        sizes = shape.copy()
        sizes[axis] = length
        empty = tensor.EmptyOp([], on_chip(TensorType(result_t.element_type, sizes), None))
        empty.results[0].name_hint = value_hint(f"{label}_z{s}")
        empties.append(empty)
    into = [e.results[0] for e in empties]
    folds, reduced = fold_blocks(label, pieces, into, None, reduce.entry.steps)
    # The all-gather's section yields the sum in place of the all-reduce, and everything else
    # ``section`` yielded: the all-reduce's fused epilogue, which `ExpandSplit` moves in.
    gather = tensor.ConcatOp(reduced, axis, result_t)
    yielded = [gather.result if v is reduce.result else v for v in section.yield_op.values]
    body = Block([gather, YieldOp(*yielded)])
    last = SectionOp(section.chip_list, Region(body), [v.type for v in yielded], label)
    return [*empties, *pieces_out, *folds, last]


@dataclass
class ExpandSplit(RewritePattern):
    """A section holding a two-shot or ring all-reduce: its reduce-scatter and all-gather
    instead (a ring whose tensor no axis cuts into N slices stays as it is)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, SectionOp) or not isinstance(op.parent_op(), FuncOp):
            return
        reduce = collective(op)
        if not isinstance(reduce, AllReduceOp) or not reduce.entry.split:
            return
        if len(reduce.partials) == 1:
            set_algorithm(rewriter, reduce, SEED)  # one chip: the partial is the sum
            return
        result_t = reduce.result.type
        assert isinstance(result_t, TensorType)
        inside = reduce.entry.inside_time is not None
        if inside and split_axis(result_t, len(reduce.partials)) is None:
            return  # the collective's own exchange: per-chip programs refuse it
        statements = split_statements(op, reduce)
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
    """Insert a tp.transfer for each (tensor, reader chip) that crosses, before its read,
    once a two-shot or ring all-reduce is spelled as its reduce-scatter and all-gather; a
    statement outside a section is refused (``not-sectioned``). A lowered call stays bare:
    its callee gets its own transfers (once), the caller those of the call's operands."""

    name = "tp-transfers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs, work = lowered_of(op, self.name)
        for func in funcs:
            placed(func, work, "placing transfers")
        n = stated_chips(op) or 1
        # Copies, and a two-shot or ring sum spelled as its valid folds: the obligation
        # still holds.
        with kept(op):
            PatternRewriteWalker(ExpandSplit(), apply_recursively=False).rewrite_module(op)
            calls: dict[FuncOp, CallSummary] = {}
            for func in funcs:  # callees first: a caller finds their results where they are
                plan: dict[Operation, list[ChipTransfer]] = {}
                for t in transfers(func, n, calls):
                    plan.setdefault(t.reader, []).append(t)
                if plan:
                    walker = PatternRewriteWalker(InsertTransfers(plan), apply_recursively=False)
                    walker.rewrite_module(op)
                calls[func] = summarize(func, n, calls)
