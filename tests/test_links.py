"""How links carry transfers, and what an all-reduce costs on them: by hand, the bound below
every algorithm, and the cost `auto` chooses by against the dataflow mode's own run."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, parse
from xdsl.dialects.builtin import TensorType, f32

from tp_dialect.analysis.timing.cost import (
    allreduce_link_time,
    allreduce_time,
    least_allreduce_link_time,
    lowered_link_time,
)
from tp_dialect.analysis.timing.wires import exchange_time
from tp_dialect.machine import MACHINES, Machine
from tp_dialect.runtime.model import model

US = 1e-6
SN40L = MACHINES["sn40l"]


def links(latency: float, bandwidth: float, topology: str) -> Machine:
    return dataclasses.replace(
        SN40L, link_latency=latency, link_bandwidth=bandwidth, topology=topology
    )


def test_two_transfers_share_a_ring_link_first_come_first_served() -> None:
    """Ring of 4, 1 us latency, 1000 bytes at 1 GB/s (a hold of 2 us). 0->1 holds (0, 1) on
    [0, 2]; 0->2 queues for (0, 1) until 2, holds it on [2, 4], and its head reaches chip 1
    at 3, so it holds (1, 2) on [3, 5]: the last arrival is at 5 us."""
    m = links(1 * US, 1e9, "ring")
    assert exchange_time([(0, 1, 1000), (0, 2, 1000)], 4, m) == pytest.approx(5 * US)
    assert exchange_time([(0, 2, 1000)], 4, m) == pytest.approx(m.transfer_time(1000, 0, 2, 4))
    assert exchange_time([], 4, m) == 0.0


def test_all_reduce_link_times_on_all_to_all_by_hand() -> None:
    """All-to-all, 1 us, 1 GB/s, 8000 bytes over 4 chips: every pair has its own link, so each
    exchange is one hold. fold: into chip 0, then back (2 x 9 us); oneshot: one exchange of the
    whole tensor (9 us); twoshot: two of a quarter (2 x 3 us); ring as one collective: 6 steps
    of a quarter; ring spelled out by tp-transfers: 3 reduce-scatter steps of a quarter to the
    next chip, then the two-shot's all-gather (4 x 3 us)."""
    m = links(1 * US, 1e9, "all-to-all")
    assert allreduce_link_time("fold", 8000, 4, m) == pytest.approx(18 * US)
    assert allreduce_link_time("oneshot", 8000, 4, m) == pytest.approx(9 * US)
    assert allreduce_link_time("twoshot", 8000, 4, m) == pytest.approx(6 * US)
    assert allreduce_link_time("ring", 8000, 4, m) == pytest.approx(18 * US)
    assert lowered_link_time("ring", 8000, 4, m) == pytest.approx(12 * US)
    for other in ("fold", "oneshot", "twoshot"):
        assert lowered_link_time(other, 8000, 4, m) == allreduce_link_time(other, 8000, 4, m)
    # the bound: one latency, and 2(N-1)/N of the tensor over the 3 links into a chip
    assert least_allreduce_link_time(8000, 4, m) == pytest.approx(1 * US + 12000 / 3 * 1e-9)
    with pytest.raises(ValueError, match="no all-reduce algorithm 'tree'"):
        allreduce_link_time("tree", 8000, 4, m)


def test_the_spelled_out_ring_on_a_ring_of_links_by_hand() -> None:
    """Ring of 4, 1 us, 1 GB/s, 8000 bytes (a quarter holds a link 3 us): a reduce-scatter
    step sends a quarter to the next chip (one hop each, no link shared: 3 us), three steps;
    the all-gather sends each quarter to the 3 other chips the shorter way round (clockwise
    on the tie): chip c's quarter to c-1 goes the other way on [0, 3]; its quarter to c+2
    queues behind its quarter to c+1 on link (c, c+1) ([0, 3], then [3, 6]), its head reaches
    chip c+1 at 4 and waits there for link (c+1, c+2), held by chip c+1's own quarters on
    [0, 3] and [3, 6]: it arrives at 9. So 9 + 9 = 18 us — as fast as passing each quarter
    on hop by hop."""
    m = links(1 * US, 1e9, "ring")
    assert lowered_link_time("ring", 8000, 4, m) == pytest.approx(18 * US)


MACHINE = st.builds(
    links,
    st.sampled_from([0.5 * US, 2 * US, 5 * US, 10 * US]),
    st.sampled_from([10e9, 25e9, 64e9, 200e9, 1e12]),
    st.sampled_from(["all-to-all", "ring"]),
)


@settings(max_examples=200, **SETTINGS)
@given(MACHINE, st.integers(2, 8), st.sampled_from([64, 8192, 1 << 20, 1 << 26]))
def test_no_algorithm_beats_the_least_link_time(m: Machine, n: int, size: int) -> None:
    least = least_allreduce_link_time(size, n, m)
    for algorithm in ("fold", "ring", "oneshot", "twoshot"):
        assert allreduce_link_time(algorithm, size, n, m) >= least * (1 - 1e-12), algorithm
        assert lowered_link_time(algorithm, size, n, m) >= least * (1 - 1e-12), algorithm


def _sum_program(n: int) -> str:
    """Each chip squares its input (a partial made on the chip), the partials are summed,
    and every chip reads the sum (a spine add)."""
    args = ", ".join(f"%p{c}: tensor<1x4096xf32, #tp.chip<{c}>>" for c in range(n))
    body = "\n".join(
        f"    %q{c} = arith.mulf %p{c}, %p{c} : tensor<1x4096xf32, #tp.chip<{c}>>" for c in range(n)
    )
    parts = ", ".join(f"%q{c}" for c in range(n))
    types = ", ".join(f"tensor<1x4096xf32, #tp.chip<{c}>>" for c in range(n))
    return f"""builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @s({args}) -> tensor<1x4096xf32> {{
{body}
    %s = tp.allreduce {parts} : {types} -> tensor<1x4096xf32>
    %o = arith.addf %s, %s : tensor<1x4096xf32>
    func.return %o : tensor<1x4096xf32>
  }}
}}"""


@settings(max_examples=32, **SETTINGS)
@given(MACHINE, st.integers(2, 6), st.sampled_from(["fold", "oneshot", "twoshot", "ring"]))
def test_the_cost_auto_chooses_by_is_what_dataflow_runs(m: Machine, n: int, alg: str) -> None:
    """The dataflow step of a lone all-reduce (partials made on chip, the sum read on every
    chip) is the algorithm's modelled time plus its neighbours' sections (a square and an
    add of 16 KiB, 0.02 us each on sn40l HBM; twoshot's and ring's slice and concat sections
    too): for the ring, what tp-transfers spells out, its sum so far sent chip to chip."""
    module = parse(_sum_program(n))
    apply(module, f"tp-relocate{{allreduce={alg}}},tp-transfers,tp-link-points")
    step = model(module, m, "dataflow")[0].step_time
    cost = allreduce_time(alg, TensorType(f32, [1, 4096]), n, m)
    assert cost <= step <= cost + 0.25 * US
