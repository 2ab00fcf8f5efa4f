"""tp-relay: the host's relay schedule over the chips' programs, as IR.

Invariant: a ``tp.relay`` op holds the steps the host runs — round by round, every chip that
can is run to its next halt once the tensors its current halt receives have been sent, the
host copying them first — so chips whose next work needs nothing of each other run in the
same round. When no chip can move before all have finished the pass refuses, naming for every
chip the halt it stands at and what it waits for (a deadlock), and never loops.

Before scheduling, the programs must fit together (`check_programs`): one program per chip,
each buffer name sent once, received only by other chips and as the type it was sent as, and
never received unsent — else a located refusal (duplicate-program, duplicate-send, self-copy,
link-type, deadlock). A ``tp.relay`` already in the function is replaced, not checked: the
pass rebuilds it from the programs, so re-running it after editing them is how to refresh it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tp_dialect.analysis.programs import check_programs, programs, schedule
from tp_dialect.analysis.relay import Copy
from tp_dialect.certificate import kept
from tp_dialect.passes.preconditions import entry_of
from tp_dialect.program_ops import CopyOp, RelayOp, RunToOp


@dataclass(frozen=True)
class TpRelay(ModulePass):
    """Build the host's relay schedule over the chips' halts (refuses programs that do not
    fit together, and a deadlock)."""

    name = "tp-relay"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = entry_of(op, self.name)
        if not programs(func):  # before any check of programs: there are none to check
            schedule(func)  # refuses: run tp-link-points first
        # The old relay (if any) is rebuilt below: only the programs are checked, so it is
        # set aside for the check and put back where it was (also when the pass refuses).
        stale = [(o, o.next_op) for o in func.body.block.ops if isinstance(o, RelayOp)]
        for old, _ in stale:
            old.detach()
        try:
            check_programs(func)
            steps = schedule(func)
        finally:
            for old, after in reversed(stale):
                assert after is not None  # the function's return follows every relay
                func.body.block.insert_op_before(old, after)
        with kept(op):
            for old, _ in stale:
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
