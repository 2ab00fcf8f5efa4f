"""tp-fuse-epilogue: an all-reduce carries the spine work that follows it on every chip.

Invariant: an all-reduce section whose sum lands on every chip (``oneshot``, ``ring``,
``twoshot``) takes into itself the spine sections that immediately follow it and read what it
computes (a residual add, an RMSNorm), as long as the TP-wrapped shim says the grown section
fits; what only the fused work reads stays on chip (the sum is not stored and re-read), and
the fused section yields every value read after it. The numbers are the same: the same ops, in the
same order, on the same chips. The seed's ``fold`` sums on chip 0 alone: it keeps no epilogue.
It runs on a sectioned program (after tp-relocate; ``tp-relocate{epilogue=true}`` runs it last).
Fusing changes what a certificate vouched for: a certified program is checked again and stamped
anew (as tp-relocate does); any other certificate is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.touch import captured, collective, storage, written_in_place
from tp_dialect.certificate import drop, status
from tp_dialect.ops import AllReduceOp, Collective, SectionOp, YieldOp
from tp_dialect.passes.options import ShimName, base_shim
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.shims import TensorParallelShim, members


@dataclass
class FuseEpilogue(RewritePattern):
    """At an all-reduce section: absorb the following spine sections that read it."""

    shim: TensorParallelShim

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, SectionOp) or not isinstance(op.parent_op(), FuncOp):
            return
        reduce = collective(op)
        if not isinstance(reduce, AllReduceOp) or not reduce.sums_on_every_chip:
            return
        absorbed: list[SectionOp] = []
        fused = members(op)
        produced = set(op.outs)
        skipped: list[SectionOp] = []  # sections the epilogue moves ahead of
        nxt = op.next_op
        # Up to the next collective: the spine work between two is what reads this sum.
        while isinstance(nxt, SectionOp) and not isinstance(collective(nxt), Collective):
            reads = captured(nxt)
            if not produced & set(reads):
                skipped.append(nxt)
                nxt = nxt.next_op
                continue
            grown = [*fused, *members(nxt)]
            if not _movable(nxt, reads, op, skipped) or self.shim.fits_epilogue(grown):
                break
            absorbed.append(nxt)
            fused = grown
            produced |= set(nxt.outs)
            nxt = nxt.next_op
        if absorbed:
            _merge(op, absorbed, rewriter)


def fuse_epilogues(module: ModuleOp, shim: TensorParallelShim) -> None:
    """Grow every all-reduce section of ``module`` by the epilogue ``shim`` lets it carry."""
    PatternRewriteWalker(FuseEpilogue(shim), apply_recursively=False).rewrite_module(module)


@dataclass(frozen=True)
class TpFuseEpilogue(ModulePass):
    """Let each all-reduce section that sums on every chip carry the spine sections after it
    that read its sum, as far as the ``shim`` says the grown section fits."""

    name = "tp-fuse-epilogue"

    shim: ShimName = "reference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        base = base_shim(self.name, self.shim)
        certified = status(op) == "valid"
        fuse_epilogues(op, TensorParallelShim(base, Provenance(op)))
        drop(op)
        if certified:
            certify_if_sound(op)


def _movable(
    section: SectionOp, reads: list[SSAValue], head: SectionOp, skipped: list[SectionOp]
) -> bool:
    """Whether ``section`` may run right after ``head``, ahead of ``skipped``: on the same
    chips, reading nothing they compute, writing nothing in place, and reading no buffer they
    update in place (under storage semantics the order of those would change)."""
    if section.chip_list != head.chip_list or any(written_in_place(section)):
        return False
    later = {r for s in skipped for r in s.outs}
    if later & set(reads):
        return False
    updated = {w for s in skipped for w in written_in_place(s)}
    return not updated & {storage(r) for r in reads}


def _merge(head: SectionOp, tail: list[SectionOp], rewriter: PatternRewriter) -> None:
    """One section on ``head``'s chips holding the ops of ``head`` then ``tail`` in place of
    them all, yielding what is read after it (the rest stays on chip)."""
    sections = [head, *tail]
    pairs = [(v, r) for s in sections for v, r in zip(s.yield_op.values, s.outs, strict=True)]
    inside = {o for s in sections for o in members(s)}
    # Inside the fused section the ops read each other's values, not the old sections' outs.
    for value, out in pairs:
        rewriter.replace_uses_with_if(out, value, lambda use: _within(use.operation, inside))
    # A tail section may yield a value it only captured: an earlier section's out, which
    # the fused section computes inside itself (yielding the out would yield its own result).
    inner = {out: value for value, out in pairs}
    kept = [(inner.get(v, v), r) for v, r in pairs if r.uses]
    yielded = [v for v, _ in kept]
    terminator = YieldOp(*yielded)
    fused = SectionOp(
        head.chip_list,
        Region(Block([terminator])),
        [v.type for v in yielded],
        head.label.data if head.label else None,
    )
    rewriter.insert(fused, InsertPoint.before(head))
    # Each section's body, less its yield, moves into the fused one, in order.
    for s in sections:
        rewriter.erase(s.yield_op)
        rewriter.inline_block(s.body.block, InsertPoint.before(terminator))
    for new, (_, old) in zip(fused.outs, kept, strict=True):
        new.name_hint = old.name_hint
        rewriter.replace_all_uses_with(old, new)
    for s in reversed(sections):
        rewriter.erase(s)


def _within(op: Operation | None, ops: set[Operation]) -> bool:
    """Whether ``op`` is one of ``ops`` or nested in one."""
    while op is not None and op not in ops:
        op = op.parent_op()
    return op is not None
