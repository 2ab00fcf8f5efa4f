"""tp-transfers: explicit ``tp.transfer`` ops for every tensor that crosses between chips.

Invariant: before each section, every value it reads on a chip that does not yet hold it is
transferred there from the chip that wrote it — once per (tensor, reader chip), before that
chip's first read; host values (weights, inputs, constants) cross nothing. With the seed's
all-reduce this shows the partials going to chip 0 and the sum coming back. Existing
transfers are honoured, so the pass is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.transfers import ChipTransfer, transfers
from tp_dialect.certificate import kept
from tp_dialect.grid import stated_chips
from tp_dialect.ops import TransferOp
from tp_dialect.signature import entry_function


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
    """Insert a tp.transfer for each (tensor, reader chip) that crosses, before its read."""

    name = "tp-transfers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = entry_function(op)
        plan: dict[Operation, list[ChipTransfer]] = {}
        for t in transfers(func, stated_chips(op) or 1):
            plan.setdefault(t.reader, []).append(t)
        if not plan:
            return
        with kept(op):  # copies only: no work moves between chips
            PatternRewriteWalker(InsertTransfers(plan), apply_recursively=False).rewrite_module(op)
