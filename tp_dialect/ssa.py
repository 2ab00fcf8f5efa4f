"""Uses after definitions: the SSA rule xDSL 0.75 does not verify.

A value may be used only where its definition dominates the use: later in the same block, or
inside a region of a later op of that block (and so on inward), never across an op isolated
from above (a function, a chip's program). xDSL parses a use before its definition, or a
section yielding its own result, without complaint; every analysis of tp assumes the rule, so
`check_dominance` holds the module to it before anything trusts it.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import VerifyException


def check_dominance(root: Operation) -> None:
    """Every operand under ``root`` is defined where it is used (see the module docstring);
    else a VerifyException carrying the op that uses it (as ``err.op``). Linear: one set of
    visible values, grown and shrunk as blocks are entered and left. In a region of several
    blocks a value of any earlier block counts as visible (branches are not followed)."""
    visible: set[SSAValue] = set()

    def enter(op: Operation) -> None:
        for v in op.operands:
            if v not in visible:
                err = VerifyException(
                    f"'{op.name}' uses %{v.name_hint or 'value'} where its definition does not "
                    "dominate the use (before it is defined, or outside its scope)"
                )
                err.op = op  # type: ignore[attr-defined]
                raise err
        for region in op.regions:
            outer = None
            if op.has_trait(IsolatedFromAbove):
                outer = set(visible)
                visible.clear()
            added: list[SSAValue] = []
            for block in region.blocks:
                added += block_scope(block)
            visible.difference_update(added)
            if outer is not None:
                visible.clear()
                visible.update(outer)
        visible.update(op.results)

    def block_scope(block: Block) -> list[SSAValue]:
        added = list(block.args)
        visible.update(added)
        for op in block.ops:
            enter(op)
            added += op.results
        return added

    enter(root)
