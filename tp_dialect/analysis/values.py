"""Seeing through the structure lowering adds: which value a value stands for.

The lowering passes wrap the source program's values without changing them: a section
yields what its statement computed (``%x = tp.section … { tp.yield %y }``), a chip program
binds the function arguments it is handed to its block arguments and hands its outputs out
through ``tp.finish``, and the relay copies a buffer one program sends (``tp.link … sends``)
into the program that receives it under the same name. `origin` undoes that wrapping;
`visible` goes the other way (a value as the statements after its section see it); and
`uses_through_programs` lists what finally reads a value handed into chip programs.
Analyses that must give the same answer at every stage (the manifest, the host loader) go
through these three, so a new wrapper needs teaching here only.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue, Use

from tp_dialect.ops import SectionOp, ShardOp, YieldOp
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp


def origin(value: SSAValue, sends: Mapping[str, SSAValue] | None = None) -> SSAValue:
    """The value ``value`` stands for, holding the same data at run time.

    Repeatedly: a section's result becomes the value its ``tp.yield`` yields, a chip
    program's result the value its ``tp.finish`` hands out, a chip program's block argument
    the program operand it binds; with ``sends`` (from `sent_values`), a value a
    ``tp.link`` receives becomes the value the sending program sent under that name (once
    each, so links that go round in a malformed function end). The result is none of these
    (or a value met twice, in malformed IR that goes round): in a source program (no
    sections, no programs) it is ``value`` itself, and a function argument stays that
    argument at every stage.
    """
    followed: set[SSAValue] = set()  # every value passed: malformed IR may go round
    while value not in followed:
        followed.add(value)
        if isinstance(value, OpResult):
            owner = value.op
            if isinstance(owner, SectionOp):
                value = owner.yield_op.values[value.index]
                continue
            if isinstance(owner, ChipProgramOp):
                finish = owner.body.block.last_op
                assert isinstance(finish, FinishOp)  # the program's verifier says so
                value = finish.values[value.index]
                continue
            if sends is not None and isinstance(owner, LinkOp):
                sent = sends.get(owner.receives[value.index])
                if sent is not None:
                    value = sent
                    continue
        elif isinstance(value, BlockArgument):
            program = value.owner.parent_op()
            if isinstance(program, ChipProgramOp):
                value = program.inputs[value.index]
                continue
        return value
    return value  # round a cycle (a section yielding its own result): no further


def sent_values(func: FuncOp) -> dict[str, SSAValue]:
    """Every buffer some ``tp.link`` in ``func`` sends, by name, with the value sent.

    A name sent more than once (which the per-chip checks refuse) is left out, so `origin`
    never follows a receive to a guess.
    """
    sent: dict[str, SSAValue] = {}
    repeated: set[str] = set()
    for op in func.walk():
        if isinstance(op, LinkOp):
            for name, value in zip(op.sends, op.sent, strict=True):
                if name in sent:
                    repeated.add(name)
                sent[name] = value
    return {n: v for n, v in sent.items() if n not in repeated}


def visible(value: SSAValue) -> SSAValue:
    """``value`` as the statements after it see it: the result of the section that yields
    it (repeatedly, for nested sections), else ``value`` itself."""
    while True:
        for use in value.uses:
            section = use.operation.parent_op()
            if isinstance(use.operation, YieldOp) and isinstance(section, SectionOp):
                value = section.outs[use.index]
                break
        else:
            return value


def uses_through_programs(value: SSAValue) -> list[Use]:
    """Every use of ``value``, where a use as a chip program's operand is replaced by the
    uses of the block argument it binds (repeatedly): what finally reads the value, in
    whichever program. A block argument no op reads contributes nothing."""
    found: list[Use] = []
    pending = [value]
    while pending:
        for use in pending.pop().uses:
            if isinstance(use.operation, ChipProgramOp):
                pending.append(use.operation.body.block.args[use.index])
            else:
                found.append(use)
    return found


def shard_of(value: SSAValue, sends: Mapping[str, SSAValue] | None = None) -> ShardOp | None:
    """The ``tp.shard`` that ``value`` stands for (see `origin`), if it is one."""
    owner = origin(value, sends).owner
    return owner if isinstance(owner, ShardOp) else None


def defined_within(value: SSAValue, op: Operation) -> bool:
    """Whether ``value`` is defined inside ``op``'s regions (by an op nested in it, or as a
    block argument of one of its blocks), rather than captured from above."""
    owner = value.owner
    current = owner.parent_op() if isinstance(owner, Block) else owner
    while current is not None:
        if current is op:
            return True
        current = current.parent_op()
    return False
