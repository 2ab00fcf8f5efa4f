"""SectionTouch: what each statement of a sectioned program reads and writes, where.

A *statement* is a top-level ``tp.section`` or ``tp.transfer``. A tensor is keyed by its
*storage* — a cache updated in place (``tensor.insert_slice``) is the same storage before and
after, which is how carried state orders the sections that read and write it — and by the
chip holding it. Host values (function arguments) and constants are held by every chip that
reads them and cross nothing (`reads_where` leaves them out unless asked), but their reads are
touched all the same: a cache passed in as a function argument is storage too, and its
in-place writer must wait for every earlier reader (docs/design.md §3, carried state).

A transfer reads its tensor's storage on the source chip and *copies* it onto the destination
chip: it writes no storage (the tensor is unchanged), so it orders only against the writer of
what it copies, later in-place writers of that storage, and what happens to the copy on the
destination chip (`SectionTouch.copies`).

Where a section reads and writes: an ordinary section on chips S reads every operand and
writes every result on each chip of S. A ``tp.allreduce`` section reads partial c where the
algorithm adds it — on chip 0 for the seed's ``fold`` (so partials cross to chip 0), on chip c
for ``ring`` (its exchange is inside the collective), on every chip for ``oneshot`` (and for a
``twoshot`` not yet expanded into its reduce-scatter and all-gather by tp-transfers) — and
writes the sum on chip 0 (``fold``: other chips get it by transfer) or on every chip. A
``tp.maxloc`` section reads pair c likewise: on chip 0 (``fold``) or on every chip
(``oneshot``). A ``tp.unshard`` section (the host's storing map) reads part c on chip c.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import arith, tensor
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.traits import SymbolTable

from tp_dialect.analysis.values import defined_within
from tp_dialect.attrs import chip_of
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    Collective,
    SectionOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)

Key = tuple[SSAValue, int]  # (storage, chip)


def is_constant(op: Operation) -> bool:
    """Ops that bind data from nothing (constants, empty tensors): not statements."""
    return isinstance(op, arith.ConstantOp | tensor.EmptyOp)


def is_statement(op: Operation) -> bool:
    """Whether a top-level op of a function body is a statement that a pass places."""
    return not (is_constant(op) or isinstance(op, ReturnOp | BarrierOp))


def is_host_value(value: SSAValue) -> bool:
    """Function arguments and constants: every chip that reads them holds its own copy."""
    if isinstance(value, BlockArgument):
        return isinstance(value.owner.parent_op(), FuncOp)
    return is_constant(value.owner)  # type: ignore[arg-type]


def captured(section: SectionOp) -> list[SSAValue]:
    """The values a section's body uses that are defined outside it, in first-use order."""
    seen: dict[SSAValue, None] = {}
    inside: set[SSAValue] = set()
    for op in section.body.walk():
        for operand in op.operands:
            if operand not in inside and operand not in seen:
                if not defined_within(operand, section):
                    seen[operand] = None
        inside.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                inside.update(block.args)
    return list(seen)


def storage(value: SSAValue, _active: frozenset[FuncOp] = frozenset()) -> SSAValue:
    """The buffer ``value`` lives in: an in-place update's result is its destination's, a
    section's result what it yields, a call's result the caller's operand when the callee
    hands back (the storage of) an argument, else the call's result itself (the callee's
    own buffer, a fresh one at every call: two calls of one callee write two buffers)."""
    seen: set[SSAValue] = set()  # malformed IR (a section yielding its own result) goes round
    while value not in seen:
        seen.add(value)
        owner = value.owner
        if isinstance(owner, SectionOp):
            value = owner.yield_op.values[value.index]  # type: ignore[union-attr]
        elif isinstance(owner, tensor.InsertSliceOp) and value is owner.result:
            value = owner.dest
        elif isinstance(owner, CallOp) and (ret := _returned(owner)) is not None:
            f, ret_op = ret
            if f in _active:
                return value  # recursion: refused where it matters
            inner = storage(ret_op.operands[value.index], _active | {f})  # type: ignore[attr-defined]
            if not (isinstance(inner, BlockArgument) and inner.owner is f.body.block):
                return value
            value = owner.arguments[inner.index]
        else:
            return value
    return value


def _returned(call: CallOp) -> tuple[FuncOp, ReturnOp] | None:
    callee = SymbolTable.lookup_symbol(call, call.callee)
    if not isinstance(callee, FuncOp) or len(callee.body.blocks) != 1:
        return None
    ret = callee.body.block.last_op
    return (callee, ret) if isinstance(ret, ReturnOp) else None


def written_in_place(op: Operation) -> Iterator[SSAValue]:
    """The storage of every buffer ``op`` updates in place (a ``tensor.insert_slice`` at any
    depth inside it, or inside a function it calls into an argument), whether or not the
    updated value leaves it: a fused section may keep the cache write inside."""
    yield from _written(op, [], set())


def _written(op: Operation, calls: list[CallOp], active: set[FuncOp]) -> Iterator[SSAValue]:
    for inner in op.walk():
        if isinstance(inner, tensor.InsertSliceOp):
            yield from _in_caller(storage(inner.dest), calls)
        elif isinstance(inner, CallOp):
            callee = SymbolTable.lookup_symbol(inner, inner.callee)
            if isinstance(callee, FuncOp) and callee not in active and callee.body.blocks:
                active.add(callee)
                yield from _written(callee, [*calls, inner], active)
                active.discard(callee)


def _in_caller(value: SSAValue, calls: list[CallOp]) -> Iterator[SSAValue]:
    """A callee's storage as the outermost caller sees it (its own if not an argument)."""
    for call in reversed(calls):
        if not isinstance(value, BlockArgument) or not isinstance(value.owner.parent_op(), FuncOp):
            return  # local to the callee: nobody else's storage
        value = storage(call.arguments[value.index])
    yield value


def collective(section: SectionOp) -> Collective | UnshardOp | None:
    """The collective a section starts with (an all-reduce or a maxloc; the spine work after
    it, if any, is its fused epilogue), or the host store it holds alone."""
    ops = [op for op in section.body.block.ops if not isinstance(op, YieldOp)]
    if ops and isinstance(ops[0], Collective):
        return ops[0]
    if len(ops) == 1 and isinstance(ops[0], UnshardOp):
        return ops[0]
    return None


@dataclass(frozen=True)
class SectionTouch:
    """What one statement touches, as far as its phase is concerned: the (storage, chip) keys
    it reads (host values included), writes (a section's results) and copies onto (a
    transfer's destination: a new copy of an unchanged storage, not a write of it)."""

    op: Operation
    chips: frozenset[int]
    reads: frozenset[Key]
    writes: frozenset[Key]
    copies: frozenset[Key] = frozenset()


def reads_where(
    section: SectionOp, n_chips: int, hosts: bool = False
) -> Iterator[tuple[SSAValue, int]]:
    """(value, chip) for every value the section reads and the chip reading it: non-host
    values only (what may have to cross), or host values too with ``hosts`` (for ordering)."""
    chips = section.chip_list
    coll = collective(section)
    if isinstance(coll, Collective):
        # Formed on chip 0 (fold): read there; an exchange inside the collective (a ring not
        # yet spelled out): each chip reads its own; else every chip reads every operand.
        on_chip_0 = not coll.lands_on_every_chip
        inside = isinstance(coll, AllReduceOp) and coll.entry.inside_time is not None
        for c, operands in enumerate(coll.chip_operands()):
            for operand in operands:
                if not hosts and is_host_value(operand):
                    continue
                if on_chip_0:
                    yield operand, 0
                elif inside:
                    yield operand, c
                else:  # every chip combines every chip's operands itself
                    for reader in chips:
                        yield operand, reader
        inputs = set(coll.operands)
        for value in captured(section):  # a fused epilogue's reads, on every chip
            if value not in inputs and (hosts or not is_host_value(value)):
                for c in chips:
                    yield value, c
        return
    if isinstance(coll, UnshardOp):
        for part in coll.parts:
            if hosts or not is_host_value(part):
                yield part, chip_of(part.type) or 0
        return
    for value in captured(section):
        if hosts or not is_host_value(value):
            for c in chips:
                yield value, c


def write_chips(section: SectionOp, n_chips: int) -> tuple[int, ...]:
    """The chips on which a section's results are stored."""
    coll = collective(section)
    if isinstance(coll, Collective) and not coll.lands_on_every_chip:
        return (0,)
    return section.chip_list


def touch(op: SectionOp | TransferOp, n_chips: int) -> SectionTouch:
    """The SectionTouch of one statement: every read (host values included, so a cache in a
    function argument orders its readers before its in-place writer), every write, and a
    transfer's copy (which reads its source and writes no storage)."""
    if isinstance(op, TransferOp):
        key = storage(op.input)
        return SectionTouch(
            op,
            frozenset((op.src, op.dst)),
            frozenset({(key, op.src)}),
            frozenset(),
            frozenset({(key, op.dst)}),
        )
    reads = frozenset((storage(v), c) for v, c in reads_where(op, n_chips, hosts=True))
    wchips = write_chips(op, n_chips)
    written = {storage(r) for r in op.outs} | set(written_in_place(op))
    writes = frozenset((s, c) for s in written for c in wchips)
    return SectionTouch(op, frozenset(op.chip_list), reads, writes)


def statements(func: FuncOp) -> list[Operation]:
    """The function's top-level statements, in program order."""
    return [op for op in func.body.block.ops if is_statement(op)]
