"""tp-phase: statements reordered phase by phase, a ``tp.barrier`` closing each phase.

Invariant: each statement (section or transfer) is in a later phase than every statement it
depends on (read-after-write, write-after-read, write-after-write on each tensor's storage;
in-place carried state such as KV caches included, wherever the storage came from — a
``tp.shard`` or a function argument); two statements of one phase never share a chip and
never touch what the other writes. A transfer copies without writing its tensor's storage: it
follows the writer of what it copies, precedes any later in-place writer of it and the
readers on its destination chip, and waits for no reader elsewhere
(`tp_dialect.analysis.phases`). Constants move to the top of the function (every chip holds
its own), so the reordered program still defines each value before its use.

Where that leaves a choice, ``order`` decides: ``critical-path`` (the default) fills each
phase with the ready statements that have the longest way still to go, timed on ``machine``
(a preset of `tp_dialect.analysis.machine` or a JSON file); ``source`` is the seed's rule,
each statement in source order into the earliest phase its dependencies and chips allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from tp_dialect.analysis.machine import Machine, MachineError, machine_from
from tp_dialect.analysis.phases import ORDERS, arrange, phase_of, statement_times
from tp_dialect.analysis.touch import is_constant, statements, touch
from tp_dialect.certificate import kept
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import stated_chips
from tp_dialect.ops import BarrierOp, SectionOp, TransferOp
from tp_dialect.passes.preconditions import entry_of, not_programs
from tp_dialect.reject import TpReject

PHASE_ATTR = "tp.phase"


def order_phases(
    func: FuncOp, n_chips: int, machine: Machine | None = None, order: str = "critical-path"
) -> int:
    """Reorder ``func``'s statements into phases with barriers (each statement after what it
    depends on, no chip twice in a phase), placed by ``order`` with times on ``machine``
    (default sn40l); the number of phases."""
    block = func.body.block
    for old in [op for op in block.ops if isinstance(op, BarrierOp)]:
        old.detach()
        old.erase()
    stmts = statements(func)
    for op in stmts:
        if not isinstance(op, SectionOp | TransferOp):
            raise TpReject.NOT_SECTIONED.at(
                op, f"'{op.name}' is not in a tp.section: run tp-relocate before tp-phase"
            )
    touches = [touch(op, n_chips) for op in stmts]  # type: ignore[arg-type]
    machine = machine or machine_from("sn40l")
    # Only the critical path weighs statements by their time on the machine.
    times = statement_times(touches, machine, n_chips) if order == "critical-path" else None
    phases = phase_of(touches, times, order, machine.barrier_latency)
    first = block.first_op
    for op in [op for op in block.ops if is_constant(op)]:
        if op is not first:
            op.detach()
            block.insert_op_before(op, first)  # type: ignore[arg-type]
    terminator = block.last_op
    assert terminator is not None
    sequence, closes = arrange(phases)
    tags: dict[int, IntegerAttr] = {}  # attributes are immutable: one per phase, built once
    for i, last in zip(sequence, closes, strict=True):
        op = stmts[i]
        op.detach()
        tag = tags.get(phases[i])
        if tag is None:
            tag = tags[phases[i]] = IntegerAttr(phases[i], i64)
        op.attributes[PHASE_ATTR] = tag
        block.insert_op_before(op, terminator)
        if last:
            block.insert_op_before(BarrierOp(phases[i]), terminator)
    return max(phases, default=-1) + 1


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
        func = entry_of(op, self.name)
        not_programs(func, self.name)
        with kept(op):  # reordering only: nothing moves between chips
            order_phases(func, stated_chips(op) or 1, machine, self.order)
