"""phases / phase_order: which statements run at once.

Invariant: every statement is in a strictly later phase than every statement it depends on,
and no two statements of a phase share a chip — so two statements of one phase are on
disjoint chips and neither touches what the other writes, a tensor by its name (its storage),
wherever its copies live, as the seed says. The dependencies, each on an earlier statement
in source order:

- a section's write of a storage comes after every earlier read of it (write-after-read, on
  any chip, by sections and transfers, of host values too: a cache passed in as a function
  argument is carried state like any other) and every earlier write of it
  (write-after-write); a read comes after the last write of its storage on any chip
  (read-after-write; by storage rather than per chip, so that tp-phase also orders a program
  that has no transfers yet);
- a transfer reads its storage on the source chip (so it comes after that storage's writer,
  and a later in-place writer comes after it) and copies it onto the destination chip: the
  copy is no write of the storage, so the transfer waits for no reader of it elsewhere, and
  readers elsewhere do not wait for it. On the destination chip it is a write of that chip's
  copy: it comes after the earlier reads of that (storage, chip) and earlier copies there,
  and later reads of that (storage, chip) come after it.

`dependencies` builds that graph in one pass with per-storage and per-(storage, chip)
bookkeeping — the last writer, the readers since it, the last copy onto a chip and the reads
of it since — so each statement gets a handful of direct predecessors and the rest follow by
transitivity: near-linear, no all-pairs scan.

Where that leaves a choice, one of two orders places the statements:

- ``source`` (the seed's): each statement, in source order, goes into the earliest phase
  after every statement it depends on where all its chips are free;
- ``critical-path`` (the default), by each statement's time (`statement_time` on a machine)
  and phases as the multi-RDU model's phase mode runs them — each as long as its longest
  statement, plus a barrier. A phase-by-phase list schedule takes ready statements by
  decreasing *bottom level* (own time plus the longest path of times after it), so work with
  a long way to go is not delayed by work with slack. That alone does not keep the chips in
  step: a chip with extra statements of its own (chip 0 under the seed's fold all-reduce,
  which receives the partials and forwards the sum, and loads its next weights after) lags
  the others, which run their long statements ahead, and then runs its own alone — a phase
  as long as a matmul with one chip busy. So each schedule is then *paced*: the same list
  scheduling backwards from its end gives every statement the latest phase it can have
  without lengthening it (resource-aware slack); forwards again, each phase takes the
  statements whose latest phase it is, then only ready statements no longer than the
  longest of those (least slack first, then bottom level) — work with slack waits for the
  phase its chip's peers run theirs in rather than lengthen a short phase. Of the seed's
  placement, the bottom-level schedule and the two paced, the one that runs shortest is
  kept (the seed's unless another is shorter by more than a nanosecond): never longer than
  the seed's placement on the machine, a paced one in no more phases than the schedule it
  paces.

Every schedule is a list schedule over the dependency graph, built statement by statement in
priority order, each into the first phase its dependencies and chips allow (each chip's taken
phases pointing onwards), so the whole stays near-linear in the statements — also for a
one-shot all-reduce over N chips, whose N(N-1) transfers each run on their own pair of chips.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from tp_dialect.analysis.timing.cost import allreduce_link_time, nbytes, op_cost
from tp_dialect.analysis.touch import Key, SectionTouch, collective
from tp_dialect.machine import Machine
from tp_dialect.ops import AllReduceOp, SectionOp, TransferOp

ORDERS = ("critical-path", "source")


def dependencies(touches: Sequence[SectionTouch]) -> list[list[int]]:
    """For each statement, the earlier statements it directly depends on (ascending, no
    repeats): every dependency of the module docstring is one of these or follows from
    them by transitivity."""
    last_write: dict[SSAValue, int] = {}  # storage -> last section that wrote it
    readers: dict[SSAValue, list[int]] = {}  # storage -> statements reading it since then
    last_copy: dict[Key, int] = {}  # (storage, chip) -> last transfer that copied there
    readers_on: dict[Key, list[int]] = {}  # (storage, chip) -> its readers since that copy
    preds: list[list[int]] = []
    for i, t in enumerate(touches):
        reads = {s for s, _ in t.reads}
        writes = {s for s, _ in t.writes}
        before: set[int] = set()
        for s in reads | writes:  # RAW and WAW: the last writer (earlier ones precede it)
            if s in last_write:
                before.add(last_write[s])
        for k in t.reads | t.copies:  # RAW on a copy, and a copy over an earlier copy
            if k in last_copy:
                before.add(last_copy[k])
        for s in writes:
            # WAR: the readers since the last write; earlier readers precede that write.
            before.update(readers.pop(s, ()))
        for k in t.copies:
            # A copy over one still being read there: the reads since the last copy.
            before.update(readers_on.pop(k, ()))
        before.discard(i)
        preds.append(sorted(before))
        for s in reads:
            readers.setdefault(s, []).append(i)
        for k in t.reads:
            readers_on.setdefault(k, []).append(i)
        for s in writes:
            last_write[s] = i
            readers.pop(s, None)  # a read in the writer itself precedes nothing later
        for k in t.copies:
            last_copy[k] = i
    return preds


def statement_time(op: Operation, machine: Machine, n_chips: int) -> float:
    """How long one statement takes on ``machine``, as the multi-RDU model times it: a
    transfer its link time, a section the roofline of its ops, plus a ``ring`` all-reduce's
    exchange (the ring moves its data inside the section; the other algorithms move theirs
    by explicit transfers)."""
    if isinstance(op, TransferOp):
        return machine.transfer_time(nbytes(op.input.type), op.src, op.dst, n_chips)
    if not isinstance(op, SectionOp):
        return 0.0
    time = op_cost(op).time(machine)
    coll = collective(op)
    if isinstance(coll, AllReduceOp) and coll.entry.inside_time is not None:
        time += allreduce_link_time(coll.algorithm_name, nbytes(coll.result.type), n_chips, machine)
    return time


def statement_times(touches: Sequence[SectionTouch], machine: Machine, n_chips: int) -> list[float]:
    """`statement_time` of every statement, in order."""
    return [statement_time(t.op, machine, n_chips) for t in touches]


def bottom_levels(preds: Sequence[Sequence[int]], times: Sequence[float]) -> list[float]:
    """Each statement's time plus the longest path of times from it to the end of the
    program along the dependencies ``preds`` (which point to earlier statements only)."""
    level = list(times)
    tail = [0.0] * len(times)  # longest path after each statement
    for j in reversed(range(len(times))):
        level[j] = times[j] + tail[j]
        for i in preds[j]:
            if level[j] > tail[i]:
                tail[i] = level[j]
    return level


def phase_of(
    touches: Sequence[SectionTouch],
    times: Sequence[float] | None = None,
    order: str = "critical-path",
    barrier: float = 0.0,
) -> list[int]:
    """The phase of each statement (same order as ``touches``, phases numbered from 0 with
    none empty): after every statement it depends on, on chips no other statement of the
    phase uses. ``order`` picks among the allowed phases (module docstring): the critical
    path weighs each statement by ``times`` (unit times when omitted) and each phase by its
    longest statement plus ``barrier``."""
    if order not in ORDERS:
        raise ValueError(f"no phase order '{order}' (one of {', '.join(ORDERS)})")
    chips = [t.chips for t in touches]
    preds = dependencies(touches)
    if order == "source":
        return _source_order(chips, preds)
    if times is None:
        times = [1.0] * len(touches)
    if len(times) != len(touches):
        raise ValueError(f"{len(times)} times for {len(touches)} statements")
    if not all(t >= 0 for t in times):  # NaN too: a bottom level must not undercut a dependant's
        raise ValueError("a statement's time is negative or not a number")
    return _critical_path(chips, preds, times, barrier)


def phase_order(
    touches: Sequence[SectionTouch],
    times: Sequence[float] | None = None,
    order: str = "critical-path",
    barrier: float = 0.0,
) -> tuple[list[int], list[bool]]:
    """The statements' order phase by phase (indices into ``touches``, source order within a
    phase; phases by `phase_of`), and ``barrier_after[k]``: whether position k closes its
    phase."""
    return arrange(phase_of(touches, times, order, barrier))


def arrange(phases: Sequence[int]) -> tuple[list[int], list[bool]]:
    """Statements with ``phases`` in program order phase by phase (source order within a
    phase), and whether each position closes its phase."""
    order = sorted(range(len(phases)), key=lambda i: (phases[i], i))
    barrier_after = [
        k == len(order) - 1 or phases[order[k + 1]] != phases[order[k]] for k in range(len(order))
    ]
    return order, barrier_after


def span(phases: Sequence[int], times: Sequence[float], barrier: float = 0.0) -> float:
    """How long ``phases`` take when each phase lasts as long as its longest statement and a
    barrier closes it (the phase mode of the multi-RDU model)."""
    longest: dict[int, float] = {}
    for p, t in zip(phases, times, strict=True):
        longest[p] = max(longest.get(p, 0.0), t)
    return sum(longest.values()) + barrier * len(longest)


class _Onward:
    """Per chip, the phases taken so far, each pointing onward to a later phase to try,
    path-compressed: the first free phase from ``p`` in near-constant time however long a
    stretch is taken."""

    def __init__(self) -> None:
        self.taken: dict[int, dict[int, int]] = {}

    def free_from(self, chip: int, p: int) -> int:
        taken = self.taken.get(chip)
        if taken is None or p not in taken:
            return p
        path = []
        while p in taken:
            path.append(p)
            p = taken[p]
        for q in path:
            taken[q] = p
        return p

    def take(self, chip: int, p: int) -> None:
        self.taken.setdefault(chip, {})[p] = p + 1


def _source_order(chips: Sequence[frozenset[int]], preds: Sequence[Sequence[int]]) -> list[int]:
    """The seed's placement: in source order, the earliest phase after the statement's
    dependencies where all its chips are free. Each chip's taken phases point onward to a
    later candidate (`_Onward`), so a statement free to start early on a chip that is busy
    for a long stretch skips the stretch instead of probing it phase by phase."""
    free = _Onward()
    phases: list[int] = []
    for cs, before in zip(chips, preds, strict=True):
        p = max((phases[i] for i in before), default=-1) + 1
        while (q := max((free.free_from(c, p) for c in cs), default=p)) != p:
            p = q
        for c in cs:
            free.take(c, p)
        phases.append(p)
    return phases


# Schedules whose modelled times differ by less than this are taken as equally fast (the
# first of them is kept: the seed's placement before the others). Times are seconds on a
# machine, or units; a nanosecond is below anything the model resolves, and stops a
# schedule from replacing the seed's for a saving that is float noise.
_RESOLUTION = 1e-9


def _critical_path(
    chips: Sequence[frozenset[int]],
    preds: Sequence[Sequence[int]],
    times: Sequence[float],
    barrier: float,
) -> list[int]:
    """The shortest by `span` of the `_schedules`, the earliest of them unless a later one
    is shorter by more than `_RESOLUTION`."""
    schedules = _schedules(chips, preds, times)
    best, best_span = schedules[0], span(schedules[0], times, barrier)
    for phases in schedules[1:]:
        if (s := span(phases, times, barrier)) < best_span - _RESOLUTION:
            best, best_span = phases, s
    return best


def _schedules(
    chips: Sequence[frozenset[int]], preds: Sequence[Sequence[int]], times: Sequence[float]
) -> list[list[int]]:
    """The seed's placement, the bottom-level list schedule, and each of those two paced by
    the latest phases it leaves every statement (module docstring)."""
    n = len(chips)
    succs: list[list[int]] = [[] for _ in range(n)]
    for j, before in enumerate(preds):
        for i in before:
            succs[i].append(j)
    level = bottom_levels(preds, times)
    bases = [
        _source_order(chips, preds),
        _list_schedule(chips, preds, [(-level[i], i) for i in range(n)]),
    ]
    schedules = list(bases)
    for base in bases:
        # The latest phase each statement can have in a schedule as long as ``base``: list
        # scheduling run backwards from the end, the latest phases of ``base`` first (each
        # backward phase takes all of that phase of ``base``, on disjoint chips, before
        # anything else, so no statement lands before its phase in ``base``).
        end = max(base, default=-1)
        back = _list_schedule(chips, succs, [(-base[i], -i) for i in range(n)])
        latest = [end - b for b in back]
        schedules.append(
            _list_schedule(
                chips,
                preds,
                [(latest[i], -level[i], i) for i in range(n)],
                (latest, times),
            )
        )
    return schedules


_Priority = tuple[float, ...]


class _Waits:
    """Per chip set, the phases in which a statement on it waits (ready, not yet placed), as
    sorted disjoint stretches: the first phase from ``p`` in none of them in O(log)."""

    def __init__(self) -> None:
        self.stretches: dict[frozenset[int], tuple[list[int], list[int]]] = {}

    def skip(self, key: frozenset[int], p: int) -> int:
        found = self.stretches.get(key)
        if found is None:
            return p
        starts, ends = found
        k = bisect.bisect_right(starts, p) - 1
        return ends[k] if k >= 0 and p < ends[k] else p

    def add(self, key: frozenset[int], start: int, end: int) -> None:
        """Phases ``start`` up to ``end`` (excluded), merged with the stretches they meet."""
        starts, ends = self.stretches.setdefault(key, ([], []))
        lo, hi = bisect.bisect_left(ends, start), bisect.bisect_right(starts, end)
        if lo < hi:
            start, end = min(start, starts[lo]), max(end, ends[hi - 1])
        starts[lo:hi], ends[lo:hi] = [start], [end]


class _Longest:
    """The longest due statement of each phase (0 where none), as a max tree: the first
    phase from ``p`` whose longest is at least ``t`` in O(log phases)."""

    def __init__(self, n: int) -> None:
        self.size = 1 << max(n - 1, 0).bit_length()
        self.tree = [-math.inf] * self.size + [0.0] * n + [-math.inf] * (self.size - n)
        for i in range(self.size - 1, 0, -1):
            self.tree[i] = max(self.tree[2 * i], self.tree[2 * i + 1])

    def raise_to(self, p: int, t: float) -> None:
        i = self.size + p
        while i and self.tree[i] < t:
            self.tree[i] = t
            i >>= 1

    def first_at_least(self, p: int, t: float) -> int:
        """The first phase from ``p`` whose longest is at least ``t`` (the phase count when
        none is)."""
        if p >= self.size:
            return p
        tree, i = self.tree, self.size + p
        if tree[i] >= t:
            return p
        while True:  # up to the first right neighbour holding such a phase
            if not i & 1 and tree[i + 1] >= t:
                i += 1
                break
            i >>= 1
            if i <= 1:
                return self.size
        while i < self.size:  # down to its first such phase
            i = 2 * i if tree[2 * i] >= t else 2 * i + 1
        return i - self.size


def _list_schedule(
    chips: Sequence[frozenset[int]],
    before: Sequence[Sequence[int]],
    priority: Sequence[_Priority],
    paced: tuple[Sequence[int], Sequence[float]] | None = None,
) -> list[int]:
    """Phase by phase, the ready statements (all of ``before`` in earlier phases) by
    ascending ``priority`` while their chips are free. With ``paced = (latest, times)``, a
    phase first takes every statement whose latest phase it is (they are ready and on
    disjoint chips, since ``latest`` is itself a schedule), then only ready statements no
    longer than the longest of those — work with slack waits rather than lengthen a phase,
    and a statement waits behind a better one on the same chips that waits — and phases
    where nothing is placed are dropped.

    ``priority`` puts every statement after everything in ``before`` it (bottom levels,
    reversed phases and latest phases all do), so the phases are built statement by
    statement in priority order rather than phase by phase: a statement's phase depends only
    on better ones, all placed by then; it goes into the first phase from where it is ready
    in which its chips are free (and, paced, the phase's due statements are as long as it
    and no better statement on its chips waits), else its latest. Each chip's taken phases
    point onwards (`_Onward`), so no phase is probed twice: near-linear in the statements,
    whatever the number of distinct chip sets (a one-shot all-reduce over N chips has N(N-1)
    transfers, each on its own pair of chips)."""
    n = len(chips)
    all_chips = frozenset(c for cs in chips for c in cs)
    free = _Onward()  # per chip: its taken phases
    busy = [0] * (n + 1) if not all(chips) else []  # chips taken per phase: no-chip statements
    phases = [-1] * n
    if paced is not None:
        latest, times = paced
        longest = _Longest(max(latest, default=-1) + 1)
        waits = _Waits()  # per chip set: phases where a better statement on it waits
        left: dict[frozenset[int], int] = {}  # per chip set: its statements not placed yet
        for cs in chips:
            left[cs] = left.get(cs, 0) + 1
    for i in sorted(range(n), key=priority.__getitem__):
        ready = 0
        for b in before[i]:
            assert phases[b] >= 0, "a statement is ranked before one it depends on"
            ready = max(ready, phases[b] + 1)
        cs = chips[i]
        cap = latest[i] if paced is not None else n
        p = ready
        while p < cap:
            q = p
            for c in cs:
                q = max(q, free.free_from(c, q))
            if paced is not None:
                q = longest.first_at_least(waits.skip(cs, q), times[i])
            if busy and q < cap:  # a statement on no chip is reached only while a chip is free
                while all_chips and busy[q] >= len(all_chips):
                    q += 1
            if q == p:
                break
            p = q
        if paced is not None:
            if p >= cap:  # its latest phase: it is ready, and its chips are free there
                p = cap
                assert ready <= p and all(free.free_from(c, p) == p for c in cs), (
                    "latest is no schedule"
                )
                longest.raise_to(p, times[i])
            left[cs] -= 1
            if left[cs] and ready < p:  # the worse ones on these chips wait while it waits
                waits.add(cs, ready, p)
        phases[i] = p
        for c in cs:
            free.take(c, p)
        if busy:
            busy[p] += len(cs)
    used = sorted(set(phases))  # phases where nothing is placed are dropped
    number = dict(zip(used, range(len(used)), strict=True))
    return [number[p] for p in phases]
