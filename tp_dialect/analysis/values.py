"""Seeing through the structure lowering adds: which value a value stands for.

The lowering passes wrap the source program's values without changing them: a section
yields what its statement computed (``%x = tp.section … { tp.yield %y }``), a chip program
binds the function arguments it is handed to its block arguments and hands its outputs out
through ``tp.finish``, and the relay copies a buffer one program sends (``tp.link … sends``)
into the program that receives it under the same name. `origin` undoes that wrapping;
`visible` goes the other way (a value as the statements after its section see it); and
`tp_dialect.program_ops.uses_through_programs` lists what finally reads a value handed into
chip programs. Analyses that must give the same answer at every stage (the manifest, the host
loader) go through these three, so a new wrapper needs teaching here only.

An outlined program adds calls (``@decode`` calls ``@layer`` once a layer): `walk_calls`
visits what one run executes, each callee once per call (`count_run` counts it, each
callee counted once), and `origin_through` follows a value out of the callees into the
outermost caller's terms.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import SymbolTable

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


# -- calls (an outlined program: @decode calls @layer once a layer) -----------------------

Calls = tuple[CallOp, ...]  # the calls that lead into a callee, outermost first


def callee(call: CallOp) -> FuncOp | None:
    """The function of the module ``call`` names, when it has a one-block body that ends in
    ``func.return`` (one the analyses can follow), else None."""
    found = SymbolTable.lookup_symbol(call, call.callee)
    if not isinstance(found, FuncOp) or len(found.body.blocks) != 1:
        return None
    return found if isinstance(found.body.block.last_op, ReturnOp) else None


def walk_calls(func: FuncOp) -> Iterator[tuple[Operation, Calls]]:
    """Every op of ``func`` with no calls, and after each ``func.call`` to a function
    `callee` can follow, every op of that callee (likewise, once per call) with the calls
    that lead to it: what one run of ``func`` executes, in order. A recursive call is not
    followed."""
    yield from _walk_calls(func, (), (func,))


def _walk_calls(
    func: FuncOp, calls: Calls, active: tuple[FuncOp, ...]
) -> Iterator[tuple[Operation, Calls]]:
    for op in func.walk():
        yield op, calls
        if isinstance(op, CallOp) and (f := callee(op)) is not None and f not in active:
            yield from _walk_calls(f, (*calls, op), (*active, f))


def count_run(op: Operation, kind: type[Operation]) -> int:
    """How many ``kind`` ops one run of ``op`` executes: those inside it (``op`` included),
    and for each ``func.call`` to a function `callee` can follow, that function's count,
    once per call — `walk_calls`' ops counted, each callee's count taken once. A recursive
    call is not followed."""
    counted: dict[FuncOp, int] = {}

    def count(root: Operation, active: tuple[Operation, ...]) -> int:
        n = 0
        for inner in root.walk():
            n += isinstance(inner, kind)
            if isinstance(inner, CallOp) and (f := callee(inner)) is not None and f not in active:
                if f not in counted:
                    counted[f] = count(f, (*active, f))
                n += counted[f]
        return n

    return count(op, (op,))


def origin_through(value: SSAValue, calls: Calls) -> SSAValue:
    """`origin` of a value seen inside the callees ``calls`` lead to, in the outermost
    caller's terms: an argument of the innermost callee is its call's operand (repeatedly),
    a call's result what its callee returns. A value defined inside a callee stays itself."""
    stack = list(calls)
    value = origin(value)
    for _ in range(10_000):  # malformed IR may go round; a real call chain is short
        if isinstance(value, BlockArgument) and stack:
            f = callee(stack[-1])
            if f is None or value.owner is not f.body.block:
                return value
            value = origin(stack.pop().arguments[value.index])
        elif isinstance(value, OpResult) and isinstance(value.op, CallOp):
            f = callee(value.op)
            if f is None or value.op in stack:
                return value
            stack.append(value.op)
            value = origin(f.body.block.last_op.operands[value.index])  # type: ignore[union-attr]
        else:
            return value
    return value
