"""relay_schedule / RelayStep: the host's relay over the chips' halts.

Each chip stands at a halt (at first its start). Round by round, every chip whose current
halt's receives have all been sent (by earlier rounds) is run to its next halt — the host
first copies those receives to it — so chips whose next work needs nothing of each other run
in the same round; a chip's sends are available once it reaches the halt that lists them.
When no chip can move before all have finished, the relay is refused, naming where each chip
stands and what it waits for. One pass over the halts: each round moves at least one chip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Halt:
    """A place a chip stops: what it has sent on arriving, what it needs to leave."""

    index: int
    sends: frozenset[str]
    receives: frozenset[str]


@dataclass(frozen=True)
class RunTo:
    """RelayStep: run ``chip`` to its halt ``halt``."""

    round: int
    chip: int
    halt: int


@dataclass(frozen=True)
class Copy:
    """RelayStep: copy buffer ``tensor`` from chip ``src`` (which sent it) to chip ``dst``."""

    round: int
    tensor: str
    src: int
    dst: int


RelayStep = RunTo | Copy


class Deadlock(Exception):
    """No chip can move: ``where[c]`` says where chip c stands and what it waits for."""

    def __init__(self, where: Mapping[int, str]) -> None:
        self.where = dict(where)
        super().__init__(
            "relay deadlock: no chip can move before all have finished; "
            + "; ".join(f"chip {c} {w}" for c, w in sorted(self.where.items()))
        )


def relay_schedule(halts: Mapping[int, Sequence[Halt]]) -> list[RelayStep]:
    """The relay's steps for chips with these halts (each chip's list starts with its start
    halt and ends with its end halt); raises Deadlock when the relay cannot finish."""
    sender: dict[str, int] = {}
    for chip, hs in halts.items():
        for h in hs:
            for name in h.sends:
                sender.setdefault(name, chip)
    pos = {chip: 0 for chip in halts}
    sent: set[str] = set()
    steps: list[RelayStep] = []
    rnd = 0
    while any(pos[c] < len(hs) - 1 for c, hs in halts.items()):
        movers = [
            c
            for c, hs in sorted(halts.items())
            if pos[c] < len(hs) - 1 and hs[pos[c]].receives <= sent
        ]
        if not movers:
            raise Deadlock({c: _standing(halts[c], pos[c], sent, sender) for c in halts})
        arrived: set[str] = set()
        for c in movers:
            for name in sorted(halts[c][pos[c]].receives):
                steps.append(Copy(rnd, name, sender[name], c))
            pos[c] += 1
            steps.append(RunTo(rnd, c, halts[c][pos[c]].index))
            arrived |= halts[c][pos[c]].sends
        sent |= arrived  # sends are copied from the next round on
        rnd += 1
    return steps


def _standing(hs: Sequence[Halt], p: int, sent: set[str], sender: Mapping[str, int]) -> str:
    if p == len(hs) - 1:
        return "has finished"
    missing = sorted(hs[p].receives - sent)
    where = "at its start" if p == 0 else f"at halt {hs[p].index}"
    waits = ", ".join(
        f"{name} (from chip {sender[name]})" if name in sender else f"{name} (no chip sends it)"
        for name in missing
    )
    return f"stands {where} waiting for {waits}"


def rounds(steps: Sequence[RelayStep]) -> int:
    """How many rounds a schedule takes."""
    return max((s.round for s in steps), default=-1) + 1
