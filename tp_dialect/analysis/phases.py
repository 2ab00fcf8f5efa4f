"""phases / phase_order: which statements run at once.

Two statements may share a phase when they are on disjoint chips and neither touches what
the other writes — a tensor by its name (its storage), wherever its copies live, as the seed
says. Each statement, in source order, goes into the earliest phase after every statement it
depends on — read-after-write, write-after-read, write-after-write, carried state (in-place
caches) included — where all its chips are free. One pass over the statements with per-tensor
and per-chip bookkeeping: near-linear, no all-pairs scan.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from tp_dialect.analysis.touch import SectionTouch


def phase_of(touches: Sequence[SectionTouch]) -> list[int]:
    """The phase of each statement (same order as ``touches``)."""
    last_write: dict[SSAValue, int] = {}
    last_read: dict[SSAValue, int] = {}
    busy: dict[int, set[int]] = {}
    phases = []
    for t in touches:
        reads = {s for s, _ in t.reads}
        writes = {s for s, _ in t.writes}
        after = max(
            [last_write.get(s, -1) for s in reads]
            + [max(last_write.get(s, -1), last_read.get(s, -1)) for s in writes]
            + [-1]
        )
        p = after + 1
        while any(p in busy.get(c, ()) for c in t.chips):
            p += 1
        for c in t.chips:
            busy.setdefault(c, set()).add(p)
        for s in reads:
            last_read[s] = max(last_read.get(s, -1), p)
        for s in writes:
            last_write[s] = p
        phases.append(p)
    return phases


def phase_order(touches: Sequence[SectionTouch]) -> tuple[list[int], list[bool]]:
    """The statements' order phase by phase (indices into ``touches``, source order within a
    phase), and ``barrier_after[k]``: whether position k closes its phase."""
    phases = phase_of(touches)
    order = sorted(range(len(touches)), key=lambda i: (phases[i], i))
    barrier_after = [
        k == len(order) - 1 or phases[order[k + 1]] != phases[order[k]] for k in range(len(order))
    ]
    return order, barrier_after
