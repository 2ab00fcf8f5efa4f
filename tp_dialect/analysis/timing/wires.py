"""How chip-to-chip links carry transfers: routes, link holds, first come first served.

Invariant: one set of rules, used both by the dataflow mode's simulation of whole programs
and by the cost of an all-reduce's exchanges (`exchange_time`), so that what ``auto``
chooses by is what the schedule then runs. A transfer crosses the directed links of its
`route` in order; it holds each for ``latency + bytes / bandwidth`` (`hold_time`), granted
first come, first served; it requests the next hop when its head reaches the next chip, one
latency after the hop started (cut-through). Uncontended, a transfer over h hops takes
``h x latency + bytes / bandwidth``, the machine's ``transfer_time``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from tp_dialect.machine import Machine

Link = tuple[int, int]


def route(src: int, dst: int, n: int, topology: str) -> list[Link]:
    """The directed links a transfer from ``src`` to ``dst`` crosses, in order: the direct
    link on ``all-to-all``; on a ``ring`` the shorter way round (clockwise on a tie)."""
    if topology != "ring" or n <= 2:
        return [(src, dst)]
    forward, back = (dst - src) % n, (src - dst) % n
    step, hops = (1, forward) if forward <= back else (-1, back)
    path, at = [], src
    for _ in range(hops):
        path.append((at, (at + step) % n))
        at = (at + step) % n
    return path


def hold_time(nbytes: float, machine: Machine) -> float:
    """How long one transfer of ``nbytes`` holds each link it crosses."""
    return machine.link_latency + nbytes / machine.link_bandwidth


class Links:
    """The links' state: when each directed link is next free (first come, first served)."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.free: dict[Link, float] = {}

    def grant(self, link: Link, t: float, nbytes: float) -> tuple[float, float]:
        """Grant ``link`` to a hop requested at ``t``: when the hop starts and ends."""
        start = max(t, self.free.get(link, 0.0))
        end = start + hold_time(nbytes, self.machine)
        self.free[link] = end
        return start, end


def exchange_time(transfers: Sequence[tuple[int, int, float]], n: int, machine: Machine) -> float:
    """When the last of ``transfers`` (source, destination, bytes), all requested at time 0,
    has arrived, under the module's rules (requests served in time order, ties in list
    order). 0 for no transfers."""
    links = Links(machine)
    if machine.topology != "ring" or n <= 2:
        # One hop each, all requested at 0: each link serves its transfers one after
        # another in list order, exactly as the general loop below would (no heap needed:
        # an all-to-all exchange of N chips is N*(N-1) transfers).
        last = 0.0
        for s, d, nbytes in transfers:
            last = max(last, links.grant((s, d), 0.0, nbytes)[1])
        return last
    routes = [route(s, d, n, machine.topology) for s, d, _ in transfers]
    heap = [(0.0, i, 0) for i in range(len(transfers))]
    heapq.heapify(heap)
    last = 0.0
    while heap:
        t, i, hop = heapq.heappop(heap)
        start, end = links.grant(routes[i][hop], t, transfers[i][2])
        if hop + 1 < len(routes[i]):
            heapq.heappush(heap, (start + machine.link_latency, i, hop + 1))
        else:
            last = max(last, end)
    return last
