"""tp-fold-allreduce: each ``tp.allreduce`` spelled as the seed's left fold of adds.

Invariant: a statement-level ``tp.allreduce`` over N > 1 partials, with no algorithm or
``fold``, is replaced by ``s1 = p0 + p1; s2 = s1 + p2; ...`` (``linalg.add`` into one fresh
spine buffer, the partials in chip order), the last sum binding the all-reduce's result: the
seed's spelling, bitwise the same sum (an all-reduce adds in chip order), and what
tp-raise-allreduce raises back. Anything else — an all-reduce of one partial, one with
another algorithm, one inside a section (after tp-relocate) — stays as written. The pass
moves no work between chips: a valid certificate stays valid.

An outlined program (``@decode`` calling ``@layer``): every function's all-reduces are
spelled, so a callee's once for every call.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.certificate import kept
from tp_dialect.collectives import SEED
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp


@dataclass(frozen=True)
class TpFoldAllreduce(ModulePass):
    """Spell each statement-level fold all-reduce over several chips as its left fold of
    adds in chip order (the inverse of tp-raise-allreduce)."""

    name = "tp-fold-allreduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reduces = [
            r
            for r in op.walk()
            if isinstance(r, AllReduceOp)
            and isinstance(r.parent_op(), FuncOp)
            and r.algorithm_name == SEED
            and len(r.partials) > 1
        ]
        if not reduces:
            return
        rewriter = Rewriter()
        with kept(op):  # the same sum over the same chips: the obligation still holds
            for reduce in reduces:
                _spell(rewriter, reduce)


def _spell(rewriter: Rewriter, reduce: AllReduceOp) -> None:
    """``reduce`` replaced by its left fold, each add before the all-reduce's place."""
    t = reduce.result.type
    assert isinstance(t, TensorType)
    name = value_name(reduce.result)
    at = InsertPoint.before(reduce)
    init = tensor.EmptyOp([], t)
    init.results[0].name_hint = value_hint(f"{name}_init")
    rewriter.insert_op(init, at)
    acc = reduce.partials[0]
    last = len(reduce.partials) - 1
    for c, partial in enumerate(reduce.partials[1:], start=1):
        add = linalg.AddOp((acc, partial), (init.results[0],), (t,))
        add.results[0].name_hint = value_hint(name if c == last else f"{name}_fold{c}")
        rewriter.insert_op(add, at)
        acc = add.results[0]
    reduce.result.replace_all_uses_with(acc)
    rewriter.erase_op(reduce)
