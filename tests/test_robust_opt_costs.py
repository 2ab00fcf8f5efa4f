"""The cost model's exchanges stay exact and cheap at many chips: the all-to-all shortcut
in `exchange_time` times every exchange as the general first-come-first-served simulation
does, so tp-relocate's ``allreduce=auto`` costs no minutes at the most chips it lowers."""

from __future__ import annotations

import dataclasses
import heapq
import random
import time

import pytest
from xdsl.dialects.builtin import TensorType, f32

from tp_dialect.analysis.timing.cost import best_allreduce
from tp_dialect.analysis.timing.wires import exchange_time, hold_time
from tp_dialect.machine import machine_from
from tp_dialect.passes.preconditions import MAX_LOWERED_CHIPS


def simulated(transfers: list[tuple[int, int, float]], machine_name: str) -> float:
    """The general rule, written out here: requests served in time order (ties in list
    order), each direct link held for its transfer's hold time."""
    machine = machine_from(machine_name)
    free: dict[tuple[int, int], float] = {}
    heap = [(0.0, i) for i in range(len(transfers))]
    heapq.heapify(heap)
    last = 0.0
    while heap:
        t, i = heapq.heappop(heap)
        s, d, nbytes = transfers[i]
        start = max(t, free.get((s, d), 0.0))
        free[(s, d)] = start + hold_time(nbytes, machine)
        last = max(last, free[(s, d)])
    return last


@pytest.mark.parametrize("seed", range(20))
def test_all_to_all_exchanges_time_as_the_simulation_does(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 9)
    transfers = [
        (s, d, float(rng.choice([0, 4, 1024, 1 << 20])))
        for _ in range(rng.randint(0, 40))
        for s, d in [rng.sample(range(n), 2)]
    ]
    machine = machine_from("sn40l")
    assert machine.topology == "all-to-all"
    assert exchange_time(transfers, n, machine) == pytest.approx(
        simulated(transfers, "sn40l"), rel=1e-12, abs=0.0
    )


def test_a_ring_still_takes_the_general_route() -> None:
    """On a ring, a transfer crosses several links: no shortcut (2 chips: one link each)."""
    ring = dataclasses.replace(machine_from("sn40l"), topology="ring")
    one_hop = exchange_time([(0, 1, 1024.0)], 4, ring)
    two_hops = exchange_time([(0, 2, 1024.0)], 4, ring)
    assert two_hops == pytest.approx(one_hop + ring.link_latency)


def test_auto_at_the_most_chips_lowered_is_seconds() -> None:
    start = time.perf_counter()
    best, _ = best_allreduce(TensorType(f32, [4, 4096]), MAX_LOWERED_CHIPS, machine_from("sn40l"))
    assert best in ("fold", "oneshot", "twoshot", "ring")
    assert time.perf_counter() - start < 60
