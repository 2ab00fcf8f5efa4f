"""Weights streamed ahead (`tp_dialect.runtime.model.prefetch`): each chip's HBM stream loads
the next sections' weight slices while the chip computes or waits on links.

The hand program is test_model_dataflow's (three chips, 1000-byte slices, 1 GB/s of HBM: a
slice loads in 1 us); with the stream, a section that reads a weight slice runs its other
3000 bytes in 3 us once the slice is in SRAM. Checked against the rules written out by hand,
and on generated programs against invariants any schedule of the stream must keep: SRAM never
holds more loaded weights than ``sram_bytes``, the HBM never moves more than its bandwidth
allows, and the step is never below the physical bound.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import program, tiny
from test_model_dataflow import ROUND, US, hand
from xdsl.passes import PassPipeline

from tp_dialect.machine import MACHINES, Machine, machine_from
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.model import model
from tp_dialect.runtime.model.timeline import Slice, Timeline
from tp_dialect.universe import tp_context


def machine(**fields: object) -> Machine:
    """test_model_dataflow's round machine, streaming weights ahead unless told otherwise."""
    base = {k: v for k, v in ROUND.items() if k != "base"}
    return dataclasses.replace(MACHINES["generic"], **{**base, "prefetch_weights": True, **fields})


def spans(timeline: Timeline) -> dict[tuple[str, str], tuple[float, float]]:
    return {(s.lane, s.name): (s.start / US, (s.start + s.duration) / US) for s in timeline.slices}


def test_the_hand_schedule_with_weights_streamed_ahead() -> None:
    """By hand (us): every chip loads its first slice on [0, 1]; p0, p1, r2 run their other
    3000 bytes on [1, 4]; chip 2 loads p2's slice at once after r2's ([1, 2] would be free
    HBM, but r2's own traffic holds it until 4: [4, 5]) and runs p2 on [5, 8]. Chips 0 and 1
    load q's slice in the gap after p ([4, 5]) while they wait for p2 (arrives at 10): s1
    [10, 14], q0/q1 [14, 17] (3 us, not 4). Chip 2's q2 slice waits for HBM that p2 and s1
    hold until 12: [12, 13], q2 [13, 16]. q2 reaches chip 0 at 18, q1 at 19: s2 [19, 23],
    y on chip 0 [23, 26], the sum reaches chips 1 and 2 at 25: y [25, 28]. The step: 28 us
    (29 when each section streams its slice as it runs)."""
    report, timeline = model(hand(), machine(), "dataflow")
    assert report.step_time == pytest.approx(28 * US)
    got = spans(timeline)
    want = {
        ("hbm 0", "prefetch p0"): (0, 1),
        ("chip 0", "p0"): (1, 4),
        ("chip 2", "r2"): (1, 4),
        ("hbm 2", "prefetch p2"): (1, 5),
        ("chip 2", "p2"): (5, 8),
        ("chip 0", "s1"): (10, 14),
        ("chip 0", "q0"): (14, 17),
        ("hbm 2", "prefetch q2"): (5, 13),  # begun after p2's load, done in the gap at 12
        ("chip 2", "q2"): (13, 16),
        ("chip 0", "s2"): (19, 23),
        ("chip 0", "y"): (23, 26),
        ("chip 1", "y"): (25, 28),
    }
    for key, (start, end) in want.items():
        assert got[key] == (pytest.approx(start), pytest.approx(end)), key
    path = report.critical_path
    assert path is not None
    # The path: r2's slice [0, 1], p2's [1, 5] (behind r2's traffic), p2 (3), its crossing
    # (2), s1 (4), q1 (3), q1's crossing (2), s2 (4), the sum's crossing (2), y (3).
    assert path["prefetch_s"] == pytest.approx(5 * US)
    assert path["compute_s"] == pytest.approx(9 * US)
    assert path["collective_s"] == pytest.approx(8 * US)
    assert path["link_s"] == pytest.approx(6 * US)
    # The bound overlaps: HBM 3 us, two all-reduces' least link time 2 x (1 + 2/3) us.
    assert report.physical.overlapped
    assert report.physical_bound == pytest.approx(max(3, 2 * (1 + 2 / 3)) * US)


def test_a_slice_sram_cannot_hold_is_streamed_as_its_section_runs() -> None:
    """SRAM smaller than one 1000-byte slice: nothing is prefetched, and every chip's
    sections run exactly as on a machine that does not stream ahead (29 us)."""
    streamed, _ = model(hand(), machine(prefetch_weights=False), "dataflow")
    tight, timeline = model(hand(), machine(sram_bytes=999.0), "dataflow")
    assert tight.step_time == pytest.approx(streamed.step_time) == pytest.approx(29 * US)
    assert not [s for s in timeline.slices if s.kind == "prefetch"]


def test_sram_holds_one_slice_so_each_load_waits_for_the_last_section() -> None:
    """SRAM of exactly one slice: a load starts only when the section holding the last slice
    ends (its eviction). Chip 0's q0 slice loads after p0 ends at 4, in the same gap as
    before: the step is 28 us; chip 2's p2 slice waits for r2's end (4)."""
    report, timeline = model(hand(), machine(sram_bytes=1000.0), "dataflow")
    got = spans(timeline)
    assert got[("hbm 2", "prefetch p2")] == (pytest.approx(4), pytest.approx(5))
    assert got[("hbm 0", "prefetch q0")][0] == pytest.approx(4)
    assert report.step_time == pytest.approx(28 * US)


def _lowered(chips: int, layers: int):
    module = program(tiny(chips=chips, layers=layers)).clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-link-points").apply(
        tp_context(), module
    )
    return module


def _loads_held(timeline: Timeline) -> dict[str, list[tuple[float, float, float]]]:
    """Per chip, each load's (start, end of the section it was for, bytes)."""
    sections = {(s.lane, s.name): s for s in timeline.slices if s.lane.startswith("chip ")}
    held: dict[str, list[tuple[float, float, float]]] = {}
    for s in timeline.slices:
        if s.kind != "prefetch":
            continue
        chip = "chip " + s.lane.split()[1]
        section: Slice = sections[(chip, s.name.removeprefix("prefetch "))]
        assert section.start >= s.start + s.duration - 1e-15, "a section ran before its weights"
        held.setdefault(chip, []).append(
            (s.start, section.start + section.duration, float(s.args["bytes"]))
        )
    return held


@pytest.mark.parametrize("chips", [1, 2, 4])
@pytest.mark.parametrize("sram", [4e3, 3e4, 2e5, 520e6])
def test_generated_steps_keep_the_streams_invariants(chips: int, sram: float) -> None:
    """On the tiny Qwen3 (two layers) and SRAM from a few slices to sn40l's: no section starts
    before its weights are loaded; the loaded weights held at any load's start fit in SRAM;
    each chip's loads follow one another and each gets its bytes' time out of what its
    sections' own traffic leaves free (the HBM never moves more than its bandwidth); the step
    is at least the physical bound."""
    sn40l = dataclasses.replace(MACHINES["sn40l"], sram_bytes=sram)
    report, timeline = model(_lowered(chips, 2), sn40l, "dataflow")
    held = _loads_held(timeline)
    if sram >= 2e5:  # room for every slice: every chip loads ahead
        assert len(held) == chips and all(held.values())
    for loads in held.values():
        for start, _, _ in loads:
            assert sum(b for s, e, b in loads if s <= start < e) <= sram
    bw = sn40l.hbm_bandwidth
    for c in range(chips):
        # A section's own bytes hold the HBM from its start; the loads, one after another,
        # get only the time those leave free.
        busy = [
            (s.start, s.start + float(s.args.get("streamed", 0.0)) / bw)
            for s in timeline.slices
            if s.lane == f"chip {c}"
        ]
        loads = sorted(
            (s.start, s.start + s.duration, float(s.args["bytes"]))
            for s in timeline.slices
            if s.lane == f"hbm {c}"
        )
        for (_, end, _), (start, _, _) in zip(loads, loads[1:], strict=False):
            assert start >= end - 1e-15
        for start, end, nbytes in loads:
            taken = sum(max(0.0, min(b, end) - max(a, start)) for a, b in busy)
            assert (end - start) - taken >= nbytes / bw * (1 - 1e-9) - 1e-15
    assert report.step_time >= report.physical_bound * (1 - 1e-12)


@pytest.mark.parametrize("chips", [2, 4])
def test_a_decode_step_hides_its_weights_under_its_all_reduces(chips: int) -> None:
    """The tiny Qwen3 decode step on sn40l: streaming weights ahead makes the step shorter
    than streaming them as sections run; the bound is the larger of HBM and the all-reduce
    chain (the sum on a machine that does not prefetch), and the step is not below it. (Its
    tiny weights leave it latency-bound: how close a real-dims step comes to the bound is
    benchmarks.model_qwen3's figure, not a test's.)"""
    module = _lowered(chips, 2)
    ahead, _ = model(module, MACHINES["sn40l"], "dataflow")
    serial = dataclasses.replace(MACHINES["sn40l"], prefetch_weights=False)
    behind, _ = model(module, serial, "dataflow")
    assert ahead.step_time < behind.step_time
    hbm, chain = ahead.physical.hbm_s, ahead.physical.link_s
    assert ahead.physical_bound == pytest.approx(max(hbm, chain))
    assert behind.physical_bound == pytest.approx(hbm + chain)
    assert ahead.step_time >= ahead.physical_bound
    assert ahead.physical.to_json()["combined"] == "max"


def test_a_machine_file_that_copies_updates_does_not_stream_ahead_unless_it_says_so(
    tmp_path: Path,
) -> None:
    """A file with ``copies_updates`` (a calibrated local machine, also one written before
    ``prefetch_weights`` existed) reads weights as ops run; stating the field overrides."""
    old = tmp_path / "local.json"
    old.write_text(json.dumps({"base": "sn40l", "copies_updates": True}))
    assert not machine_from(str(old)).prefetch_weights
    stated = tmp_path / "stated.json"
    stated.write_text(json.dumps({"copies_updates": True, "prefetch_weights": True}))
    assert machine_from(str(stated)).prefetch_weights
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"link_bandwidth": 2e11}))
    assert machine_from(str(plain)).prefetch_weights  # sn40l's


def test_an_outlined_program_loads_what_its_flat_program_loads() -> None:
    """Per-chip programs calling per-chip functions (tiny Qwen3, two layers, N = 2): each
    call's frame loads its own layer's slices — the same loads, bytes and times as the flat
    program's — and streaming ahead changes the outlined step by what it changes the flat
    one's."""

    def lowered(outline: bool) -> object:
        module = program(tiny(chips=2, layers=2), outline=outline).clone()
        PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-link-points").apply(
            tp_context(), module
        )
        return module

    serial = dataclasses.replace(MACHINES["sn40l"], prefetch_weights=False)
    steps, loads = {}, {}
    for outline in (False, True):
        module = lowered(outline)
        ahead, timeline = model(module, MACHINES["sn40l"], "dataflow")  # type: ignore[arg-type]
        behind, _ = model(module, serial, "dataflow")  # type: ignore[arg-type]
        steps[outline] = (ahead.step_time, behind.step_time)
        loads[outline] = sorted(
            (s.lane, s.name, s.start, s.duration, s.args["bytes"])
            for s in timeline.slices
            if s.kind == "prefetch"
        )
    assert loads[True] == loads[False] and loads[False]
    gain = {o: behind - ahead for o, (ahead, behind) in steps.items()}
    assert gain[True] == pytest.approx(gain[False], rel=1e-9)
