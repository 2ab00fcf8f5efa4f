"""tp-relay: the host's relay schedule over the chips' programs, as IR.

Invariant: a ``tp.relay`` op holds the steps the host runs — round by round, every chip that
can is run to its next halt once the tensors its current halt receives have been sent, the
host copying them first — so chips whose next work needs nothing of each other run in the
same round. When no chip can move before all have finished the pass refuses, naming for every
chip the halt it stands at and what it waits for (a deadlock), and never loops.

Before scheduling, the programs must fit together (`check_programs`): one program per chip,
each buffer name sent once, received only by other chips and as the type it was sent as, and
never received unsent — else a located refusal (duplicate-program, duplicate-send, self-copy,
link-type, deadlock).

Programs calling per-chip functions (an outlined program, one call per layer) have a relay
that repeats one layer's rounds: the schedule — the same as the flat program's, step for step
— is written with its longest repeated block of rounds as one ``tp.relay_repeat`` (the rounds
before and after it, where the first or last layer differs, as they are), so its text does
not grow with the layers. A ``tp.relay`` already in the function is replaced, not checked: the
pass rebuilds it from the programs, so re-running it after editing them is how to refresh it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from tp_dialect.analysis.calls.chip_runs import chip_function, step_op, tag_of
from tp_dialect.analysis.rounds import RelayStep, find_repeat
from tp_dialect.analysis.schedule.programs import check_programs, programs, schedule
from tp_dialect.certificate import kept
from tp_dialect.passes.preconditions import chips_to_lower, entry_of
from tp_dialect.program_ops import CopyOp, RelayOp, RelayRepeatOp, RunToOp


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
            relay = RelayOp(relay_ops(steps, _call_tags(func), chips_to_lower(op, self.name)))
            last = programs(func)[-1]
            func.body.block.insert_op_after(relay, last)


def _call_tags(func: FuncOp) -> list[str]:
    """The tags of the programs' per-chip calls, in the order the programs make them."""
    tags: dict[str, None] = {}
    for program in programs(func):
        for op in program.body.block.ops:
            if chip_function(op) is not None and (tag := tag_of(op)):
                tags.setdefault(tag, None)
    return list(tags)


def relay_ops(
    steps: Sequence[RelayStep], tags: list[str], n_chips: int
) -> list[RunToOp | CopyOp | RelayRepeatOp]:
    """The relay's ops for ``steps``: its longest repeated block of rounds as one repeat."""
    found = find_repeat(steps, tags, n_chips) if len(tags) > 1 else None
    if found is None:
        return [step_op(s) for s in steps]
    end = found.first + found.rounds
    stop = found.first + found.count * found.rounds
    body = [step_op(s) for s in steps if found.first <= s.round < end]
    repeat = RelayRepeatOp(found.count, found.rounds, found.strides, tags, body)
    return [
        *(step_op(s) for s in steps if s.round < found.first),
        repeat,
        *(step_op(s) for s in steps if s.round >= stop),
    ]
