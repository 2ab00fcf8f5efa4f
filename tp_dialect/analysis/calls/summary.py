"""CallSummary: what a lowered call does, as one statement of its caller.

A call to a function holding chip work (`tp_dialect.analysis.calls.outlined`) is a bare statement of
its caller, and its callee's statements are placed once for every call. To the callee, its
arguments are host values: every chip reading one holds it. The caller makes that true, and
finds the call's results where the callee leaves them, from the callee's summary — computed
once per callee from its placed statements (sections, transfers, lowered calls), so a caller
never looks inside a callee again:

- ``reads[i]``: the chips reading argument i inside the callee (the operand must be there
  before the call: tp-transfers puts it there, tp-verify checks a scalar is computed there);
- ``held[j]``: where result j is held on return — the chips of the section writing it (plus
  those the callee transferred it to), the index of the argument it hands straight back, or
  `EVERY` for what every chip holds its own copy of (a constant);
- ``chips``: every chip the callee's work runs on.

Nothing here is proportional to the chip count a module states: sets list the chips work is
placed on, and `EVERY` stands for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import BlockArgument, SSAValue

from tp_dialect.analysis.calls.outlined import ChipWork
from tp_dialect.analysis.touch import (
    SectionTouch,
    reads_where,
    statements,
    storage,
    write_chips,
    written_in_place,
)
from tp_dialect.analysis.values import callee
from tp_dialect.ops import SectionOp, TransferOp

EVERY = None
"""`Held` of a value every chip holds its own copy of (a constant, a host value)."""

Held = frozenset[int] | int | None
"""Where a result is held on return: chips, an argument index, or `EVERY`."""


@dataclass(frozen=True)
class CallSummary:
    """What every call to ``callee`` does as a statement of its caller (module docstring)."""

    callee: FuncOp
    reads: tuple[frozenset[int], ...]
    held: tuple[Held, ...]
    chips: frozenset[int]


def summarize(func: FuncOp, n_chips: int, known: Mapping[FuncOp, CallSummary]) -> CallSummary:
    """The `CallSummary` of placed ``func``, whose lowered calls' callees ``known``
    summarizes (a statement that is none of these is skipped: passes that need placement
    refuse it before)."""
    block = func.body.block
    reads: list[set[int]] = [set() for _ in block.args]
    chips: set[int] = set()
    copied: dict[SSAValue, set[int]] = {}  # a value transferred to these chips

    def read(v: SSAValue, where: frozenset[int] | set[int]) -> None:
        if isinstance(v, BlockArgument) and v.owner is block:
            reads[v.index].update(where)

    for op in statements(func):
        if isinstance(op, SectionOp):
            chips.update(op.chip_list)
            for v, c in reads_where(op, n_chips, hosts=True):
                read(v, {c})
        elif isinstance(op, TransferOp):
            chips.update((op.src, op.dst))
            copied.setdefault(op.input, set()).add(op.dst)
            read(op.input, {op.src})
        elif (s := known_callee(op, known)) is not None:
            chips.update(s.chips)
            for v, where in zip(op.arguments, s.reads, strict=True):
                read(v, where)
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    held = tuple(_held(v, block, known, copied, n_chips) for v in ret.arguments)
    return CallSummary(func, tuple(map(frozenset, reads)), held, frozenset(chips))


def known_callee(op: object, known: Mapping[FuncOp, CallSummary]) -> CallSummary | None:
    """The summary ``known`` has of ``op``'s callee, when ``op`` is a call."""
    if not isinstance(op, CallOp):
        return None
    f = callee(op)
    return known.get(f) if f is not None else None


def _held(
    v: SSAValue,
    block: object,
    known: Mapping[FuncOp, CallSummary],
    copied: Mapping[SSAValue, set[int]],
    n_chips: int,
) -> Held:
    """Where the returned ``v`` is held on return (`Held`)."""
    extra: set[int] = set()
    for _ in range(len(known) + 1):  # each step goes one call deeper; calls do not cycle
        if isinstance(v, BlockArgument):
            return v.index if v.owner is block else EVERY
        extra |= copied.get(v, set())
        owner = v.owner
        if isinstance(owner, SectionOp):
            return frozenset(write_chips(owner, n_chips)) | extra
        s = known_callee(owner, known)
        if s is None:
            return EVERY  # a constant (not placed work: refused where placement matters)
        inner = s.held[v.index]  # type: ignore[attr-defined]
        if not isinstance(inner, int):
            return inner if inner is EVERY else inner | extra
        v = owner.arguments[inner]  # type: ignore[attr-defined]  # handed straight back
    return EVERY


class Summaries:
    """`CallSummary` of each function of a module, computed once each, its lowered calls'
    callees first (None for a function on a cycle of calls: recursion is refused elsewhere)."""

    def __init__(self, n_chips: int, work: ChipWork) -> None:
        self.n_chips, self.work = n_chips, work
        self._known: dict[FuncOp, CallSummary | None] = {}

    def of(self, func: FuncOp) -> CallSummary | None:
        if func not in self._known:
            self._known[func] = None  # in progress: a cycle back here finds nothing
            known: dict[FuncOp, CallSummary] = {}
            for op in func.body.block.ops:
                if (f := self.work.lowered(op)) is not None:
                    if (s := self.of(f)) is None:
                        return None
                    known[f] = s
            self._known[func] = summarize(func, self.n_chips, known)
        return self._known[func]


def call_touch(op: CallOp, summary: CallSummary, chips: frozenset[int]) -> SectionTouch:
    """A lowered call as one statement of its caller's phases, on ``chips`` (every chip its
    caller's statements use: it stands alone in its phase), reading each operand's storage
    on the chips its callee reads the argument on, writing each result's storage where it
    is held (on ``chips`` for `EVERY` or an argument handed straight back, whose storage is
    its operand's: the call's readers then follow it, as SSA needs) and every caller
    storage its callee updates in place (carried state, such as a KV cache handed in,
    orders the call like any writer of it)."""
    reads = {
        (storage(v), c) for v, where in zip(op.arguments, summary.reads, strict=True) for c in where
    }
    writes: set[tuple[SSAValue, int]] = set()
    for r, held in zip(op.results, summary.held, strict=True):
        writes |= {
            (storage(r), c) for c in (held if isinstance(held, frozenset) and held else chips)
        }
    writes |= {(s, c) for s in written_in_place(op) for c in chips}
    return SectionTouch(op, chips, frozenset(reads), frozenset(writes))
