"""relay_schedule / RelayStep: the host's relay over the chips' halts.

Each chip stands at a halt (at first its start). Round by round, every chip whose current
halt's receives have all been sent (by earlier rounds) is run to its next halt — the host
first copies those receives to it — so chips whose next work needs nothing of each other run
in the same round; a chip's sends are available once it reaches the halt that lists them.
When no chip can move before all have finished, the relay is refused, naming where each chip
stands and what it waits for. One pass over the halts: each round moves at least one chip.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tp_dialect.errors import TpError
from tp_dialect.program_ops import tag_index


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


class Deadlock(TpError):
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


def shifted(
    step: RelayStep, i: int, rounds: int, strides: Sequence[int], tags: Sequence[str]
) -> RelayStep:
    """``step`` as time ``i`` of a repeat runs it (`tp_dialect.program_ops.RelayRepeatOp`):
    ``i * rounds`` rounds later, ``i * strides[chip]`` halts on, its buffer's call tag ``i``
    tags on."""
    if isinstance(step, RunTo):
        stride = strides[step.chip] if step.chip < len(strides) else 0
        return RunTo(step.round + i * rounds, step.chip, step.halt + i * stride)
    name = step.tensor
    j = tag_index(name, tags)
    if j is not None and i:
        name = tags[j + i] + name[len(tags[j]) :]
    return Copy(step.round + i * rounds, name, step.src, step.dst)


@dataclass(frozen=True)
class Repeat:
    """Rounds ``first``..``first + rounds - 1`` of a schedule, run ``count`` times over
    (`shifted` each time), with these per-chip halt ``strides``."""

    first: int
    rounds: int
    count: int
    strides: tuple[int, ...]


_LEAD = 8
"""How many rounds before its first copy a repeated block may start."""


def find_repeat(steps: Sequence[RelayStep], tags: Sequence[str], n_chips: int) -> Repeat | None:
    """The longest run of rounds of ``steps`` that is one block of rounds repeated — time i
    the first `shifted` by i — at least twice, trying a count of ``len(tags)`` calls down to
    two fewer (a first or last call may differ: it stays outside); None if there is none.

    Bounded: a block's length is the distance in rounds between the first copies of two
    consecutive call tags, and it starts at most `_LEAD` rounds before the first copy of its
    first tag; each candidate is checked step by step and stops at its first mismatch. So
    the work is a fixed number of candidates, each at most the schedule's size — never a
    search over every start and length of a long schedule."""
    by_round: dict[int, list[RelayStep]] = defaultdict(list)
    first_copy: dict[int, int] = {}  # tag index -> the round of its first copy
    for s in steps:
        by_round[s.round].append(s)
        if isinstance(s, Copy) and (j := tag_index(s.tensor, tags)) is not None:
            first_copy.setdefault(j, s.round)
    total = rounds(steps)
    for count in range(len(tags), max(len(tags) - 3, 1), -1):
        for j in range(len(tags) - count + 1):  # the tag of the block's first time
            if j not in first_copy or j + 1 not in first_copy:
                continue
            length = first_copy[j + 1] - first_copy[j]
            if length < 1 or count * length > total:
                continue
            # The block starts where its first copy is, or a few rounds before (the runs
            # leading up to it): at most _LEAD candidates, so the search stays linear.
            lead = min(length, _LEAD)
            for first in range(max(0, first_copy[j] - lead + 1), first_copy[j] + 1):
                if first + count * length > total:
                    break
                strides = _strides(by_round, first, length, n_chips)
                if strides is not None and _repeats(by_round, first, length, count, strides, tags):
                    return Repeat(first, length, count, strides)
    return None


def _strides(
    by_round: Mapping[int, list[RelayStep]], first: int, length: int, n_chips: int
) -> tuple[int, ...] | None:
    """Each chip's halt stride between time 0 and time 1 of a candidate block (0 for a chip
    the block does not run), None when the two differ in shape."""
    strides = [0] * n_chips
    seen: set[int] = set()
    for r in range(first, first + length):
        a, b = by_round.get(r, []), by_round.get(r + length, [])
        if len(a) != len(b):
            return None
        for x, y in zip(a, b, strict=True):
            if isinstance(x, RunTo) and isinstance(y, RunTo) and x.chip == y.chip:
                if x.chip not in seen and 0 <= x.chip < n_chips:
                    seen.add(x.chip)
                    strides[x.chip] = y.halt - x.halt
    return tuple(strides)


def _repeats(
    by_round: Mapping[int, list[RelayStep]],
    first: int,
    length: int,
    count: int,
    strides: Sequence[int],
    tags: Sequence[str],
) -> bool:
    body = [s for r in range(first, first + length) for s in by_round.get(r, [])]
    if not body:
        return False
    for s in body:  # every time's tags must exist
        if isinstance(s, Copy) and (j := tag_index(s.tensor, tags)) is not None:
            if j + count > len(tags):
                return False
    for i in range(1, count):
        got = [
            s
            for r in range(first + i * length, first + (i + 1) * length)
            for s in by_round.get(r, [])
        ]
        if got != [shifted(s, i, length, strides, tags) for s in body]:
            return False
    return True
