"""The multi-RDU model: machine descriptions, op costs against hand counts, per-chip memories
that refuse what is not there, capacity, and modelled time that behaves like the machine.
The model runs programs as given; tp-run's `model_modes` lowers a copy when a mode needs it."""

from __future__ import annotations

import json

import pytest
from helpers import program, tiny
from hypothesis import Phase, given, settings
from random_programs import Program, programs
from xdsl.dialects.linalg import ops as linalg
from xdsl.passes import PassPipeline

from tp_dialect.analysis.timing.cost import op_cost
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.machine import MACHINES, MachineError, machine_from
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.model import ModelError, model
from tp_dialect.tools.run_model import model_modes
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

SN40L = MACHINES["sn40l"]


def lowered(cfg: Qwen3Config, spec: str):
    module = program(cfg).clone()
    PassPipeline.parse_spec(TP_PASSES, spec).apply(tp_context(), module)
    return module


def test_machine_presets_and_overrides(tmp_path) -> None:
    assert SN40L.peak_flops == 638e12 and SN40L.hbm_bytes == 64e9 and SN40L.max_chips == 8
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"base": "sn40l", "link_bandwidth": 200e9, "topology": "ring"}))
    m = machine_from(str(f))
    assert m.link_bandwidth == 200e9 and m.topology == "ring" and m.peak_flops == 638e12
    f.write_text(json.dumps({"link_speed": 1}))
    with pytest.raises(MachineError, match="unknown field.*link_speed"):
        machine_from(str(f))
    with pytest.raises(MachineError, match="no machine 'tpu'"):
        machine_from("tpu")


def test_transfer_time_counts_hops_on_a_ring() -> None:
    ring = machine_from("generic")
    one = ring.transfer_time(0, 0, 1, 8)
    assert ring.transfer_time(0, 0, 4, 8) == pytest.approx(4 * one)
    assert ring.transfer_time(0, 0, 7, 8) == pytest.approx(one)  # the other way round


def test_contraction_cost_is_two_flops_per_multiply_add() -> None:
    cfg = tiny(chips=2, batch=3)
    module = program(cfg)
    q = next(
        op
        for op in module.walk()
        if isinstance(op, linalg.GenericOp) and op.results[0].name_hint == "l0_q_c0"
    )
    cost = op_cost(q)
    rows = cfg.heads // 2 * cfg.head_dim  # chip 0's q rows
    assert cost.flops == 2 * cfg.batch * rows * cfg.hidden
    weight_bytes = rows * cfg.hidden * 4
    assert cost.bytes >= weight_bytes  # the weight slice is read once per step


def test_model_refuses_a_read_of_what_is_not_on_the_chip() -> None:
    module = lowered(tiny(chips=2), "tp-relocate,tp-transfers,tp-phase")
    transfer = next(op for op in module.walk() if isinstance(op, TransferOp))
    name, dst = transfer.input.name_hint, transfer.dst
    transfer.detach()
    transfer.erase()
    with pytest.raises(
        ModelError,
        match=rf"chip {dst} runs .* reads %{name}, but %{name} is "
        rf"not in chip {dst}'s memory",
    ):
        model(module, SN40L, "phase")


def test_capacity_is_checked() -> None:
    module = lowered(tiny(chips=2), "tp-relocate,tp-transfers,tp-phase")
    report, _ = model(module, SN40L, "phase")
    assert all(entry["fits"] for entry in report.memory)
    tiny_hbm = machine_from("sn40l").__class__(**{**SN40L.to_json(), "hbm_bytes": 1000})
    report, _ = model(module, tiny_hbm, "phase")
    assert not any(entry["fits"] for entry in report.memory)
    assert all(entry["resident_weights_bytes"] > 0 for entry in report.memory)


def test_every_mode_models_every_stage_and_chips_run_at_once() -> None:
    """Phase mode overlaps the chips: its step is shorter than running every statement in
    turn; relay mode runs from per-chip programs; the timeline covers the step."""
    cfg = tiny(chips=4, layers=2)
    source = program(cfg)
    with pytest.raises(ModelError, match="phase mode needs a sectioned program .* not a source"):
        model(source, SN40L, "phase")  # the model itself never lowers
    runs = model_modes(source, SN40L, ["sequential", "phase", "relay"])
    (seq, _), (phase, timeline), (relay, relay_timeline) = runs.values()
    assert phase.step_time < seq.step_time
    assert relay.step_time > 0 and relay.bytes_moved == phase.bytes_moved > 0
    assert timeline.end() == pytest.approx(phase.step_time, rel=1e-9, abs=1e-12) or (
        timeline.end() <= phase.step_time
    )
    assert {s.lane for s in relay_timeline.slices} >= {"host", "chip 0", "chip 3"}
    assert [m["chip"] for m in relay.memory] == [0, 1, 2, 3]
    assert all(m["fits"] and m["resident_weights_bytes"] > 0 for m in relay.memory)
    assert set(phase.layers) == {"prologue", "layer 0", "layer 1"}
    assert phase.lower_bound > 0


def test_ring_needs_no_transfers_and_more_chips_cut_weight_time() -> None:
    """On the real dims, per-chip weight bytes fall with N: the compute time shrinks."""
    times = {}
    for n in (1, 2, 4):
        cfg = Qwen3Config.preset("qwen3-8b", chips=n, dtype="bf16", max_positions=256)
        times[n], _ = model_modes(program(cfg), SN40L, ["relay"])["relay"]
    assert times[1].compute_time > times[2].compute_time > times[4].compute_time
    ring, _ = model(lowered(tiny(chips=4), "tp-relocate{allreduce=ring}"), SN40L, "phase")
    assert ring.bytes_moved == 0
    sections = [op for op in program(tiny(chips=4)).walk() if isinstance(op, SectionOp)]
    assert sections == []  # the source program was modelled through lowered copies


@settings(max_examples=25, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(programs())
def test_every_stage_of_random_programs_runs_on_the_modelled_chips(prog: Program) -> None:
    """Each lowered stage keeps every read on a chip that holds the tensor (the model's
    memories accept it) and models a positive, finite step in every mode."""
    module, _ = parse_module(tp_context(), prog.text(), "<model property>")
    modes = ("sequential", "phase", "relay", "dataflow")
    for mode, (report, timeline) in model_modes(module, SN40L, modes).items():
        assert 0 <= report.step_time < 1.0, mode
        assert timeline.end() <= report.step_time + 1e-12, mode
