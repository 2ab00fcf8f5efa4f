"""tp-phase: statements reordered phase by phase, a ``tp.barrier`` closing each phase.

Invariant: each statement (section or transfer) is in a later phase than every statement it
depends on (read-after-write, write-after-read, write-after-write on each tensor's storage;
in-place carried state such as KV caches included, wherever the storage came from — a
``tp.shard`` or a function argument); two statements of one phase never share a chip and
never touch what the other writes. A transfer copies without writing its tensor's storage: it
follows the writer of what it copies, precedes any later in-place writer of it and the
readers on its destination chip, and waits for no reader elsewhere
(`tp_dialect.analysis.schedule.phases`). Constants move to the top of the function (every chip holds
its own), so the reordered program still defines each value before its use.

Where that leaves a choice, ``order`` decides: ``critical-path`` (the default) fills each
phase with the ready statements that have the longest way still to go, timed on ``machine``
(a preset of `tp_dialect.machine` or a JSON file); ``source`` is the seed's rule,
each statement in source order into the earliest phase its dependencies and chips allow.

An outlined program (``@decode`` calling ``@layer``): the callee's statements are phased
once, in the callee, its own barriers numbered from 0; a lowered call
(`tp_dialect.analysis.calls.outlined`) stays a bare statement of its caller, on every chip the
caller's statements use, so it stands alone in a phase of its caller and carries that
phase's ``tp.phase``: the callee's phases run in it, in order. As a statement of its caller
it reads its operands where its callee reads them, writes what it returns and every caller
storage its callee updates in place (a KV cache handed in), and takes the time of its
callee's phases. Callees are phased first. `renumber` gives an inlined phased program
(tp-inline, tp-link-points) one numbering: each phase of a call becomes the callee's
phases, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block
from xdsl.passes import ModulePass

from tp_dialect.analysis.calls.summary import CallSummary, call_touch, summarize
from tp_dialect.analysis.schedule.phases import ORDERS, arrange, phase_of, span, statement_time
from tp_dialect.analysis.touch import SectionTouch, is_constant, statements, touch
from tp_dialect.analysis.values import callee
from tp_dialect.attrs import i64_attr
from tp_dialect.certificate import kept
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import stated_chips
from tp_dialect.machine import Machine, MachineError, machine_from
from tp_dialect.ops import BarrierOp, SectionOp, TransferOp
from tp_dialect.passes.preconditions import lowered_of, placed
from tp_dialect.reject import TpReject

PHASE_ATTR = "tp.phase"


class Phased(NamedTuple):
    """A function's phases: how many, and how long they take on the machine (each as long
    as its longest statement, plus a barrier)."""

    count: int
    span: float


Callees = Mapping[FuncOp, tuple[CallSummary, Phased]]
"""The phased callees of a function's lowered calls: what a call touches, how long it runs."""


def order_phases(
    func: FuncOp,
    n_chips: int,
    machine: Machine | None = None,
    order: str = "critical-path",
    calls: Callees | None = None,
) -> Phased:
    """Reorder ``func``'s statements into phases with barriers (each statement after what it
    depends on, no chip twice in a phase), placed by ``order`` with times on ``machine``
    (default sn40l); a lowered call (its callee phased in ``calls``) is a statement on
    every chip the function's statements use, as long as its callee's phases. The number of
    phases and (``critical-path`` only, else 0) their time."""
    block = func.body.block
    for old in [op for op in block.ops if isinstance(op, BarrierOp)]:
        old.detach()
        old.erase()
    stmts = statements(func)
    machine = machine or machine_from("sn40l")
    touches: list[SectionTouch | None] = []
    times: list[float] = []
    used: set[int] = set()  # every chip a statement uses: a call takes them all
    timed = order == "critical-path"  # only the critical path weighs statements by time
    for op in stmts:
        if isinstance(op, SectionOp | TransferOp):
            touches.append(t := touch(op, n_chips))
            used |= t.chips
            times.append(statement_time(op, machine, n_chips) if timed else 0.0)
            continue
        f = callee(op) if isinstance(op, CallOp) else None
        if f is None or calls is None or f not in calls:
            raise TpReject.NOT_SECTIONED.at(
                op, f"'{op.name}' is not in a tp.section: run tp-relocate before tp-phase"
            )
        touches.append(None)  # once every chip used is known
        used |= calls[f][0].chips
        times.append(calls[f][1].span)
    everywhere = frozenset(used or {0})
    for i, op in enumerate(stmts):
        if touches[i] is None:
            summary = calls[callee(op)][0]  # type: ignore[index, arg-type]
            touches[i] = call_touch(op, summary, everywhere)  # type: ignore[arg-type]
    placed = [t for t in touches if t is not None]
    phases = phase_of(placed, times if timed else None, order, machine.barrier_latency)
    first = block.first_op
    for op in [op for op in block.ops if is_constant(op)]:
        if op is not first:
            op.detach()
            block.insert_op_before(op, first)  # type: ignore[arg-type]
    terminator = block.last_op
    assert terminator is not None
    sequence, closes = arrange(phases)
    for i, last in zip(sequence, closes, strict=True):
        op = stmts[i]
        op.detach()
        op.attributes[PHASE_ATTR] = i64_attr(phases[i])
        block.insert_op_before(op, terminator)
        if last:
            block.insert_op_before(BarrierOp(phases[i]), terminator)
    return Phased(max(phases, default=-1) + 1, span(phases, times, machine.barrier_latency))


def renumber(block: Block) -> int:
    """Number the phases of ``block`` (a function once phased, with calls inlined into it)
    in program order: a barrier closes each phase, each statement's ``tp.phase`` and each
    barrier's number is its phase's position, and a barrier that closes no statement (an
    inlined call's own, after its callee's last) is dropped. Constants move to the top, as
    tp-phase leaves them. The number of phases; nothing changes in a block with no barrier."""
    if not any(isinstance(op, BarrierOp) for op in block.ops):
        return 0
    first = block.first_op
    for op in [op for op in block.ops if is_constant(op)]:
        if op is not first:
            op.detach()
            block.insert_op_before(op, first)  # type: ignore[arg-type]
    phase, open_ = 0, False
    for op in list(block.ops):
        if isinstance(op, BarrierOp):
            if not open_:
                op.detach()
                op.erase()
                continue
            op.phase = i64_attr(phase)  # type: ignore[misc]
            phase, open_ = phase + 1, False
        elif PHASE_ATTR in op.attributes:
            op.attributes[PHASE_ATTR] = i64_attr(phase)
            open_ = True
    return phase


@dataclass(frozen=True)
class TpPhase(ModulePass):
    """Order sections into phases of chips that run at once, a barrier after each
    (order=critical-path|source, machine=preset or JSON file for the critical path)."""

    name = "tp-phase"

    order: Literal["critical-path", "source"] = "critical-path"
    machine: str = "sn40l"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.order not in ORDERS:
            raise TpDiagnostic(
                None, f"tp-phase: order={self.order} is not one of {', '.join(ORDERS)}"
            )
        try:
            machine = machine_from(self.machine)
        except MachineError as err:
            raise TpDiagnostic(None, f"tp-phase: {err}") from None
        funcs, work = lowered_of(op, self.name)
        for func in funcs:
            placed(func, work, "tp-phase")
        n = stated_chips(op) or 1
        with kept(op):  # reordering only: nothing moves between chips
            calls: dict[FuncOp, tuple[CallSummary, Phased]] = {}
            for func in funcs:  # callees first: a call takes its callee's phases
                phased = order_phases(func, n, machine, self.order, calls)
                calls[func] = (summarize(func, n, {f: s for f, (s, _) in calls.items()}), phased)
