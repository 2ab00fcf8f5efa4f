"""Rewriter steps tp's patterns share, each one notifying the `PatternRewriter`.

xDSL 0.75's rewriter has no ``move_op`` (MLIR's ``moveOpBefore``) and no property setter:
these are the two, spelled so the walker hears of every change (an insertion, a
modification) and the rewriter records that it acted — no pattern sets ``has_done_action``.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from tp_dialect.ops import Collective


def move_op(rewriter: PatternRewriter, op: Operation, point: InsertPoint) -> None:
    """Move ``op`` (with its regions, uses untouched) to ``point``: it leaves its block and
    is inserted again through ``rewriter``, so the move is an insertion the walker sees."""
    op.detach()
    rewriter.insert(op, point)


def set_algorithm(rewriter: PatternRewriter, collective: Collective, algorithm: str) -> None:
    """Write ``algorithm`` on ``collective`` and tell ``rewriter`` the op was modified."""
    collective.set_algorithm(algorithm)
    rewriter.notify_op_modified(collective)
