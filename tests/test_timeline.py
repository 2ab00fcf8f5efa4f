"""The timeline writers: a Chrome trace Perfetto can open, atomic writes, a Gantt PNG."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from tp_dialect.runtime.model import timeline as tl
from tp_dialect.runtime.model.timeline import (
    Flow,
    Slice,
    Timeline,
    chrome_trace,
    write_chrome_trace,
    write_timeline_png,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def two_chips() -> Timeline:
    """Host loads, two chips compute, chip 1 sends its partial to chip 0, chip 0 reduces."""
    return Timeline(
        lanes=["host", "chip 0", "chip 1"],
        slices=[
            Slice("host", "load hidden", 0.0, 0.0005, "copy", "prologue", {"bytes": 4096}),
            Slice("chip 0", "l0_c0_q", 0.0005, 0.001, "compute", "layer 0", {"flops": 2.5e9}),
            Slice("chip 1", "l0_c1_q", 0.0005, 0.0015, "compute", "layer 0", {"flops": 3e9}),
            Slice("chip 1", "transfer l0_c1_o 1->0", 0.002, 0.00025, "transfer", "layer 0"),
            Slice("chip 0", "l0_sum", 0.00225, 0.0005, "collective", "layer 0", {"op": "sum"}),
            Slice("chip 0", "barrier", 0.00275, 0.0, "barrier"),
        ],
        flows=[
            Flow("hidden", "host", 0.0005, "chip 0", 0.0005),
            Flow("hidden", "host", 0.0005, "chip 1", 0.0005),
            Flow("l0_c1_o", "chip 1", 0.00225, "chip 0", 0.00225),
        ],
    )


def _events(trace: dict, ph: str) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


def test_trace_events_match_the_timeline() -> None:
    timeline = two_chips()
    trace = json.loads(json.dumps(chrome_trace(timeline), allow_nan=False))
    assert trace["displayTimeUnit"] == "ns"

    names = {e["tid"]: e["args"]["name"] for e in _events(trace, "M") if e["name"] == "thread_name"}
    assert sorted(names.values()) == sorted(timeline.lanes)
    tid = {lane: t for t, lane in names.items()}
    assert len(set(tid.values())) == len(timeline.lanes)
    assert all(t > 0 for t in tid.values())  # Perfetto maps tid 0 onto the pid
    order = {
        e["tid"]: e["args"]["sort_index"]
        for e in _events(trace, "M")
        if e["name"] == "thread_sort_index"
    }
    assert sorted(timeline.lanes, key=lambda lane: order[tid[lane]]) == timeline.lanes
    assert {e["pid"] for e in trace["traceEvents"]} == {1}
    process = [e for e in _events(trace, "M") if e["name"] == "process_name"]
    assert [p["args"]["name"] for p in process] == ["tp step"]

    xs = _events(trace, "X")
    assert len(xs) == len(timeline.slices)
    by_name = {e["name"]: e for e in xs}
    for s in timeline.slices:
        event = by_name[s.name]
        assert event["tid"] == tid[s.lane]
        assert event["cat"] == s.kind
        assert event["ts"] == pytest.approx(s.start * 1e6)
        assert event["dur"] == pytest.approx(s.duration * 1e6)
        assert isinstance(event["ts"], float) and isinstance(event["dur"], float)
        assert event["args"].get("layer") == s.layer
        assert {k: v for k, v in event["args"].items() if k != "layer"} == dict(s.args)
    assert by_name["l0_c1_q"]["ts"] == 500.0 and by_name["l0_c1_q"]["dur"] == 1500.0

    starts, finishes = _events(trace, "s"), _events(trace, "f")
    assert len(starts) == len(finishes) == len(timeline.flows)
    assert len({s["id"] for s in starts}) == len(timeline.flows)
    finish_by_id = {f["id"]: f for f in finishes}
    for start, flow in zip(starts, timeline.flows, strict=True):
        finish = finish_by_id[start["id"]]
        assert start["name"] == finish["name"] == flow.name
        assert start["cat"] == finish["cat"] == "transfer"
        assert finish["bp"] == "e"
        assert (start["tid"], finish["tid"]) == (tid[flow.src_lane], tid[flow.dst_lane])
        assert start["ts"] == pytest.approx(flow.src_time * 1e6)
        assert finish["ts"] == pytest.approx(flow.dst_time * 1e6)


def test_flows_bind_to_the_slices_they_leave_and_enter() -> None:
    """At equal times a flow start precedes the next slice, a flow end follows its slice."""
    trace = chrome_trace(two_chips())
    events = trace["traceEvents"]
    timed = [e for e in events if e["ph"] != "M"]
    assert [e["ts"] for e in timed] == sorted(e["ts"] for e in timed)
    for i, event in enumerate(events):
        if event["ph"] not in "sf":
            continue
        same = [
            j
            for j, other in enumerate(events)
            if other["ph"] == "X"
            and other["tid"] == event.get("tid")
            and other["ts"] == event["ts"]
        ]
        if event["ph"] == "s":
            assert all(i < j for j in same)
            sender = [x for x in timed if x["ph"] == "X" and x["tid"] == event["tid"]]
            assert any(x["ts"] + x["dur"] == event["ts"] for x in sender)  # exact, in whole ns
        if event["ph"] == "f":
            assert same and all(i > j for j in same)


def test_end_and_busy() -> None:
    timeline = two_chips()
    assert timeline.end() == pytest.approx(0.00275)
    assert timeline.busy("host") == pytest.approx(0.0005)
    assert timeline.busy("chip 0") == pytest.approx(0.001 + 0.0005)
    assert timeline.busy("chip 1") == pytest.approx(0.0015 + 0.00025)
    assert Timeline(["chip 0"], [], []).end() == 0.0
    assert Timeline(["chip 0"], [], []).busy("chip 0") == 0.0
    with pytest.raises(ValueError, match="chip 7"):
        timeline.busy("chip 7")


def test_combine_puts_timelines_side_by_side() -> None:
    """Two modes' timelines in one: lanes prefixed by mode, in order; slices and flows moved
    with their lanes, times unchanged; one timeline comes back as it is."""
    a, b = two_chips(), Timeline(["chip 0"], [Slice("chip 0", "x", 0.1, 0.2, "compute")], [])
    both = tl.combine({"phase": a, "dataflow": b})
    assert both.lanes == [f"phase: {lane}" for lane in a.lanes] + ["dataflow: chip 0"]
    assert len(both.slices) == len(a.slices) + 1 and len(both.flows) == len(a.flows)
    assert both.slices[-1] == Slice("dataflow: chip 0", "x", 0.1, 0.2, "compute")
    assert both.flows[-1] == Flow("l0_c1_o", "phase: chip 1", 0.00225, "phase: chip 0", 0.00225)
    assert chrome_trace(both)["traceEvents"]  # every lane and flow still valid
    assert tl.combine({"relay": a}) is a


def test_negative_duration_is_named() -> None:
    timeline = two_chips()
    timeline.slices.append(Slice("chip 1", "l1_c1_mlp", 0.003, -1e-6, "compute"))
    with pytest.raises(ValueError, match="l1_c1_mlp"):
        chrome_trace(timeline)


@pytest.mark.parametrize("where", ["slice", "flow source", "flow destination"])
def test_unknown_lane_is_named(where: str) -> None:
    timeline = two_chips()
    if where == "slice":
        timeline.slices.append(Slice("chip 2", "l0_c2_q", 0.0, 0.001, "compute"))
    elif where == "flow source":
        timeline.flows.append(Flow("x", "chip 2", 0.001, "chip 0", 0.001))
    else:
        timeline.flows.append(Flow("x", "chip 0", 0.001, "chip 2", 0.001))
    with pytest.raises(ValueError, match="'chip 2'"):
        chrome_trace(timeline)


def test_trace_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "step.json"
    write_chrome_trace(two_chips(), str(path))
    assert json.loads(path.read_text()) == chrome_trace(two_chips())
    assert os.listdir(tmp_path) == ["step.json"]


def test_write_into_a_missing_directory_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot write .*No such file"):
        write_chrome_trace(two_chips(), str(tmp_path / "missing" / "step.json"))
    assert os.listdir(tmp_path) == []


def test_failed_write_leaves_no_temp_file_and_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "step.json"
    path.write_text("old")

    def refuse(src: str, dst: str) -> None:
        assert Path(src).parent == tmp_path and Path(src).read_bytes()  # staged beside it
        raise OSError("disk full")

    monkeypatch.setattr(tl.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_chrome_trace(two_chips(), str(path))
    with pytest.raises(OSError, match="disk full"):
        write_timeline_png(two_chips(), str(tmp_path / "step.png"))
    assert os.listdir(tmp_path) == ["step.json"]
    assert path.read_text() == "old"


def test_invalid_timeline_writes_nothing(tmp_path: Path) -> None:
    timeline = two_chips()
    timeline.slices.append(Slice("chip 0", "bad", 0.0, -1.0, "compute"))
    with pytest.raises(ValueError, match="bad"):
        write_chrome_trace(timeline, str(tmp_path / "step.json"))
    with pytest.raises(ValueError, match="bad"):
        write_timeline_png(timeline, str(tmp_path / "step.png"))
    assert os.listdir(tmp_path) == []


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    length, chunk = struct.unpack(">I4s", data[8:16])
    assert (length, chunk) == (13, b"IHDR")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _chips(n: int, per_lane: int) -> Timeline:
    lanes = ["host"] + [f"chip {c}" for c in range(n)]
    slices = [Slice("host", "load", 0.0, 1e-4, "copy")]
    flows = []
    for c in range(n):
        t = 1e-4
        for k in range(per_lane):
            kind = ("compute", "transfer", "collective")[k % 3]
            slices.append(Slice(f"chip {c}", f"l{k}_c{c}", t, 2e-5, kind, f"layer {k}"))
            t += 2.5e-5
        flows.append(Flow(f"t{c}", f"chip {c}", t, f"chip {(c + 1) % n}", t + 1e-5))
    return Timeline(lanes, slices, flows)


def test_png_is_a_png_that_grows_with_the_lanes(tmp_path: Path) -> None:
    sizes = []
    for n in (1, 2, 8):
        path = tmp_path / f"chips{n}.png"
        write_timeline_png(_chips(n, 40 if n < 8 else 400), str(path), title=f"{n} chips")
        assert path.stat().st_size > 10_000
        sizes.append(_png_size(path))
    widths, heights = zip(*sizes, strict=True)
    assert heights[0] < heights[1] < heights[2]
    assert min(widths) > 500
    assert sorted(os.listdir(tmp_path)) == ["chips1.png", "chips2.png", "chips8.png"]


def test_png_of_an_empty_timeline(tmp_path: Path) -> None:
    path = tmp_path / "empty.png"
    write_timeline_png(Timeline(["host", "chip 0"], [], []), str(path))
    assert _png_size(path)[1] > 0
