"""The model's report: its parts add up in every mode, the physical bound is a bound, one
memory model for both program forms, and tp-run's model flags refuse bad input in one line."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import program, tiny, tool
from xdsl.passes import PassPipeline

from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.machine import MACHINES
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.model import MODES, ModelReport, model
from tp_dialect.runtime.model.report import decompose
from tp_dialect.runtime.model.timeline import Slice, Timeline
from tp_dialect.tools.run_model import model_modes
from tp_dialect.universe import tp_context

SN40L = MACHINES["sn40l"]
BIN = Path(sys.executable).parent


def test_decompose_splits_a_hand_timeline() -> None:
    """Chip 0 computes layer 0 on [0, 4]; chip 1 computes layer 0 on [0, 2] then sends on
    [2, 5]; nothing runs on [5, 6]; chip 0 computes layer 1 on [6, 7] while a layer-0 copy
    runs on [6, 8]; the step ends at 10. By hand: compute [0, 4] + [6, 7] = 5 (layer 0: 4,
    layer 1: 1); communication [4, 5] + [7, 8] = 2 (layer 0); idle [5, 6] (waiting for layer
    1's work) and [8, 10] (the tail, after layer 0's copy) = 3."""
    slices = [
        Slice("chip 0", "l0_a", 0, 4, "compute", "layer 0"),
        Slice("chip 1", "l0_b", 0, 2, "compute", "layer 0"),
        Slice("chip 1", "l0_x", 2, 3, "transfer", "layer 0"),
        Slice("chip 0", "l1_a", 6, 1, "compute", "layer 1"),
        Slice("host", "l0_y", 6, 2, "copy", "layer 0"),
        Slice("chip 1", "barrier", 5, 0, "barrier"),
    ]
    report = ModelReport(SN40L, "test", 2, step_time=10.0)
    decompose(report, Timeline(["host", "chip 0", "chip 1"], slices, []))
    assert (report.compute_time, report.communication_time, report.idle_time) == (5, 2, 3)
    l0, l1 = report.layers["layer 0"], report.layers["layer 1"]
    assert (l0.compute, l0.communication, l0.idle, l0.time) == (4, 2, 2, 8)
    assert (l1.compute, l1.communication, l1.idle, l1.time) == (1, 0, 1, 2)
    assert report.chip_busy == [
        {"chip": 0, "compute_s": 5, "busy_s": 5},
        {"chip": 1, "compute_s": 2, "busy_s": 5},
    ]


def lowered(n: int, algorithm: str = "fold") -> dict[str, tuple[ModelReport, Timeline]]:
    return model_modes(program(tiny(chips=n, layers=2)), SN40L, MODES, algorithm)


@pytest.mark.parametrize(("n", "algorithm"), [(1, "fold"), (4, "fold"), (4, "oneshot")])
def test_parts_add_up_in_every_mode(n: int, algorithm: str) -> None:
    """Per step and per layer: time = compute + communication + idle; the layers' times add
    up to the step; every mode computes something (the relay's compute is not 0)."""
    for mode, (report, _) in lowered(n, algorithm).items():
        parts = report.compute_time + report.communication_time + report.idle_time
        assert parts == pytest.approx(report.step_time, rel=1e-9), mode
        assert sum(f.time for f in report.layers.values()) == pytest.approx(
            report.step_time, rel=1e-9
        ), mode
        for figures in report.layers.values():
            split = figures.compute + figures.communication + figures.idle
            assert split == pytest.approx(figures.time, rel=1e-9, abs=1e-15), (mode, figures)
        assert report.compute_time > 0, mode
        assert set(report.layers) == {"prologue", "layer 0", "layer 1"}, mode
        # By hand: only the 4 all-reduces cross, each of a 1x64 f32 sum (256 bytes): fold
        # moves N-1 partials in and the sum out to N-1 chips, oneshot every partial to every
        # other chip.
        crossings = {"fold": 2 * (n - 1), "oneshot": n * (n - 1)}[algorithm]
        assert report.bytes_moved == 4 * crossings * 256, mode
        for layer in ("layer 0", "layer 1"):
            assert report.layers[layer].bytes_moved == 2 * crossings * 256, (mode, layer)
        if n > 1:
            assert report.communication_time > 0, mode
        assert "compute" in report.summary() and "physical bound" in report.summary()


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_physical_bound_is_below_every_mode(n: int) -> None:
    """Whatever the mode and the all-reduce algorithm, no modelled step beats the bound."""
    algorithms = ("fold", "oneshot", "twoshot") if n > 1 else ("fold",)
    for algorithm in algorithms:
        for mode, (report, _) in lowered(n, algorithm).items():
            assert 0 < report.physical_bound <= report.step_time, (algorithm, mode)
            assert report.physical.allreduce_count == 4, (algorithm, mode)  # 2 per layer


def test_physical_bound_counts_each_chips_bytes_by_hand() -> None:
    """tiny, 2 chips, one layer, f32: per chip, the weight slices it reads (q, k, v, o, gate,
    up, down: 1/N of each), the spine weights (two norms of hidden, q/k norms of head_dim),
    its KV-cache slices read whole, the hidden state read, the cache entries written and the
    output stored, over HBM; plus per all-reduce one latency and 2(N-1)/N of the tensor over
    the N-1 links into a chip."""
    cfg = tiny(chips=2, layers=1)
    h, d, i = cfg.hidden, cfg.head_dim, cfg.intermediate
    q, kv, n = cfg.heads * d, cfg.kv_heads * d, cfg.chips
    weights = (2 * q * h + 2 * kv * h + 3 * i * h) // n + 2 * h + 2 * d
    cache = 2 * cfg.batch * (cfg.kv_heads // n) * cfg.max_positions * d
    entries = 2 * cfg.batch * (cfg.kv_heads // n) * d
    per_chip = 4 * (weights + cache + cfg.batch * h + entries + cfg.batch * h)
    report, _ = model_modes(program(cfg), SN40L, ["dataflow"])["dataflow"]
    assert report.physical.hbm_bytes == [per_chip, per_chip]
    into = 2 * (n - 1) / n * 4 * h / ((n - 1) * SN40L.link_bandwidth)
    link = 2 * (SN40L.link_latency + into)
    # sn40l streams weights ahead: the HBM and the chain of all-reduces overlap (the larger
    # binds); a machine that does not, pays both.
    assert report.physical_bound == pytest.approx(max(per_chip / SN40L.hbm_bandwidth, link))
    serial = dataclasses.replace(SN40L, prefetch_weights=False)
    report, _ = model_modes(program(cfg), serial, ["dataflow"])["dataflow"]
    assert report.physical_bound == pytest.approx(per_chip / SN40L.hbm_bandwidth + link)


@pytest.mark.parametrize("n", [2, 4])
def test_one_memory_model_for_both_forms(n: int) -> None:
    """The sectioned program and its per-chip programs hold the same resident weights and
    state on every chip, and both equal a count from the config: each chip's slices of the
    weights and caches, the spine weights, the hidden state."""
    cfg = tiny(chips=n, layers=2)
    sectioned = program(cfg).clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-phase").apply(
        tp_context(), sectioned
    )
    per_chip = sectioned.clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-link-points").apply(tp_context(), per_chip)
    a, _ = model(sectioned, SN40L, "phase")
    b, _ = model(per_chip, SN40L, "dataflow")
    h, d, i = cfg.hidden, cfg.head_dim, cfg.intermediate
    q, kv = cfg.heads * d, cfg.kv_heads * d
    layer = (2 * q * h + 2 * kv * h + 3 * i * h) // n + 2 * h + 2 * d
    state = cfg.layers * 2 * cfg.batch * (cfg.kv_heads // n) * cfg.max_positions * d
    state += cfg.batch * h
    for x, y in zip(a.memory, b.memory, strict=True):
        assert x["resident_weights_bytes"] == y["resident_weights_bytes"] == 4 * layer * cfg.layers
        assert x["resident_state_bytes"] == y["resident_state_bytes"] == 4 * state
        assert x["fits"] and y["fits"]


def test_qwen3_8b_layer_bound_and_speedup_are_sane() -> None:
    """One real-dims layer (bf16 weights): the physical bound's HBM part is about the layer's
    weights over N chips' bandwidth, and dataflow on four chips runs within 1.5x of it."""
    cfg = Qwen3Config.preset("qwen3-8b", chips=4, dtype="bf16", max_positions=256)
    report, _ = model_modes(program(cfg), SN40L, ["dataflow"], "oneshot")["dataflow"]
    h, d, i = cfg.hidden, cfg.head_dim, cfg.intermediate
    weights = 2 * (2 * cfg.heads * d * h + 2 * cfg.kv_heads * d * h + 3 * i * h) / 4
    assert weights / SN40L.hbm_bandwidth < report.physical.hbm_s < 1.1 * weights / 1.6e12
    assert report.physical_bound <= report.step_time < 1.5 * report.physical_bound


def tp_run(*args: object) -> subprocess.CompletedProcess[str]:
    return tool("tp-run", *args)


def errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if not line.startswith("tp-run: warning")]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("model")
    out = d / "tiny.mlir"
    proc = tool(
        "tp-gen",
        "qwen3",
        "--preset",
        "tiny",
        "--chips",
        "2",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_several_modes_side_by_side(small: Path, tmp_path: Path) -> None:
    report, trace, png = tmp_path / "r.json", tmp_path / "t.json", tmp_path / "t.png"
    proc = tp_run(
        small, "--dry-run", "--mode", "all", "--allreduce", "oneshot",
        "--report", report, "--trace", trace, "--timeline", png,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for mode in MODES:
        assert f"modelled step on 2 x sn40l ({mode} mode)" in proc.stdout
    assert "lowering a copy for phase mode: tp-relocate{allreduce=oneshot}" in proc.stderr
    data = json.loads(report.read_text())
    assert list(data["modes"]) == list(MODES)
    for mode, entry in data["modes"].items():
        assert entry["mode"] == mode and entry["physical_bound_s"] <= entry["step_time_s"]
    lanes = {
        e["args"]["name"]
        for e in json.loads(trace.read_text())["traceEvents"]
        if e.get("name") == "thread_name"
    }
    assert {"phase: chip 0", "relay: host", "dataflow: link 0->1"} <= lanes
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "must hold a JSON object"),
        ('{"link_speed": 1}', "unknown field(s) link_speed"),
        ('{"topology": "torus"}', "topology must be all-to-all or ring"),
        ('{"base": "tpu"}', "unknown base preset"),
        ("{not json", "not JSON: Expecting property name"),
        ('{"link_latency": "x"}', 'link_latency must be a number, not "x"'),
        ('{"link_bandwidth": -5}', "link_bandwidth must be a finite number above 0"),
        ('{"hbm_bandwidth": 0}', "hbm_bandwidth must be a finite number above 0"),
        ('{"barrier_latency": -1e-6}', "barrier_latency must be a finite number at least 0"),
        ('{"max_chips": 2.5}', "max_chips must be a whole number, not 2.5"),
        ('{"copies_updates": "yes"}', "copies_updates must be true or false"),
    ],
)
def test_bad_machine_files_are_one_line_errors(
    small: Path, tmp_path: Path, content: str, message: str
) -> None:
    bad = tmp_path / "m.json"
    bad.write_text(content)
    proc = tp_run(small, "--dry-run", "--machine", bad)
    assert proc.returncode == 1
    assert len(errors(proc)) == 1 and message in errors(proc)[0]
    assert errors(proc)[0].startswith("tp-run: error: ") and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "phse"], "unknown mode 'phse' in --mode"),
        (["--mode", "phase,bogus"], "unknown mode 'bogus' in --mode"),
        (["--allreduce", "rng"], "unknown all-reduce algorithm 'rng'"),
    ],
)
def test_bad_model_flags_are_one_line_errors(small: Path, args: list[str], message: str) -> None:
    proc = tp_run(small, "--dry-run", *args)
    assert proc.returncode == 1
    lines = [line for line in errors(proc) if not line.startswith("tp-run: lowering")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
