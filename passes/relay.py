"""tp-relay: the host's relay schedule over the chips' programs, as IR.

Invariant: a ``tp.relay`` op holds the steps the host runs — round by round, every chip that
can is run to its next halt once the tensors its current halt receives have been sent, the
host copying them first — so chips whose next work needs nothing of each other run in the
same round. When no chip can move before all have finished the pass refuses, naming for every
chip the halt it stands at and what it waits for (a deadlock), and never loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from tp_dialect.analysis.relay import Copy, Deadlock, Halt, RelayStep, relay_schedule
from tp_dialect.certificate import kept
from tp_dialect.program_ops import ChipProgramOp, CopyOp, LinkOp, RelayOp, RunToOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import entry_function


def program_halts(program: ChipProgramOp) -> list[Halt]:
    """A chip program's halts: its start (link 0 if it has one), its links, its end."""
    links = [op for op in program.body.block.ops if isinstance(op, LinkOp)]
    halts = [] if links and links[0].halt == 0 else [Halt(0, frozenset(), frozenset())]
    halts += [Halt(lk.halt, frozenset(lk.sends), frozenset(lk.receives)) for lk in links]
    halts.append(Halt(halts[-1].index + 1, frozenset(), frozenset()))
    return halts


def programs(func: FuncOp) -> list[ChipProgramOp]:
    return [op for op in func.body.block.ops if isinstance(op, ChipProgramOp)]


def schedule(func: FuncOp) -> list[RelayStep]:
    """The relay schedule of ``func``'s chip programs (raises TpDiagnostic on deadlock)."""
    progs = programs(func)
    if not progs:
        raise TpReject.NOT_SECTIONED.at(
            None, "tp-relay needs per-chip programs: run tp-link-points first"
        )
    try:
        return relay_schedule({p.chip_index: program_halts(p) for p in progs})
    except Deadlock as err:
        raise TpReject.DEADLOCK.at(progs[0], str(err)) from None


@dataclass(frozen=True)
class TpRelay(ModulePass):
    """Build the host's relay schedule over the chips' halts (refuses a deadlock)."""

    name = "tp-relay"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = entry_function(op)
        steps = schedule(func)
        with kept(op):
            for old in [o for o in func.body.block.ops if isinstance(o, RelayOp)]:
                old.detach()
                old.erase()
            relay = RelayOp(
                [
                    CopyOp(s.round, s.tensor, s.src, s.dst)
                    if isinstance(s, Copy)
                    else RunToOp(s.round, s.chip, s.halt)
                    for s in steps
                ]
            )
            last = programs(func)[-1]
            func.body.block.insert_op_after(relay, last)
