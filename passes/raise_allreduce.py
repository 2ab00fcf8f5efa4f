"""tp-raise-allreduce: the seed's fold of adds becomes ONE ``tp.allreduce``.

Invariant: a left fold of adds over one partial per chip (in chip order, each partial on its
chip, intermediate sums used only by the next add) is replaced by a single ``tp.allreduce``
of those partials binding the fold's result; the fold's statements disappear. A fold that
misses a chip, repeats one, is out of order or mixes in spine data is left as it is (and
tp-verify says why). A ring fold — every chip once, in a cyclic rotation of chip order — is a
valid all-reduce but is left as it is too: a ``tp.allreduce`` adds in chip order, so raising
it would change how the sum rounds.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls.outlined`): folds
are raised in every function, so a callee's folds once for every call; calls are left as they
are.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from tp_dialect.analysis.certify.folds import find_folds
from tp_dialect.certificate import kept
from tp_dialect.grid import stated_chips
from tp_dialect.ops import AllReduceOp


@dataclass
class RaiseFold(RewritePattern):
    """At the last add of a valid fold: replace the whole fold with one all-reduce."""

    n_chips: int
    last_ops: dict[Operation, tuple[Operation, ...]]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        chain = self.last_ops.get(op)
        if chain is None:
            return
        partials = [op_.operands[1] for op_ in chain]
        partials.insert(0, chain[0].operands[0])
        result_type = op.results[0].type
        assert isinstance(result_type, TensorType)
        allreduce = AllReduceOp(partials, result_type)
        allreduce.result.name_hint = op.results[0].name_hint
        rewriter.replace(op, allreduce)
        for earlier in reversed(chain[:-1]):
            rewriter.erase(earlier)


@dataclass(frozen=True)
class TpRaiseAllreduce(ModulePass):
    """Raise each left fold of adds over one partial per chip, in chip order, into one
    tp.allreduce (a rotated fold stays as written: its rounding is its own)."""

    name = "tp-raise-allreduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        n = stated_chips(op) or 1
        # Folds at statement level only: raising inside sections is relocate's business.
        folds = [
            f
            for f in find_folds(op)
            if f.in_chip_order(n) and all(isinstance(o.parent_op(), FuncOp) for o in f.ops)
        ]
        if not folds:
            return
        last = {f.ops[-1]: f.ops for f in folds}
        with kept(op):  # the same sum over the same chips: the obligation still holds
            PatternRewriteWalker(RaiseFold(n, last), apply_recursively=False).rewrite_module(op)
