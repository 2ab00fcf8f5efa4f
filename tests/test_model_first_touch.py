"""First touch of new memory: where updates copy (the reference interpreter's value
semantics), each copy is a new buffer whose pages the OS maps in as it is first written; the
model charges that at the machine's ``first_touch_bandwidth``, once, where an op's cost is
timed. Off on every preset (0), so their figures do not move."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import program, tiny
from xdsl.passes import PassPipeline

from tp_dialect.analysis.timing.cost import first_touch_time, op_cost
from tp_dialect.machine import MACHINES, MachineError, machine_from
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.model import model
from tp_dialect.universe import tp_context


def test_every_preset_has_no_first_touch() -> None:
    for machine in MACHINES.values():
        assert machine.first_touch_bandwidth == 0.0


def _updates():
    module = program(tiny(chips=1, layers=1))
    return module, [op for op in module.walk() if op.name == "tensor.insert_slice"]


def test_an_update_copy_pays_its_new_buffer_once() -> None:
    """The two cache updates of a layer: each copy's new buffer (half its copied bytes: the
    copy reads the cache and writes it once) over the first-touch rate, on top of the
    roofline and the per-op overhead; nothing where updates are in place or the rate is 0."""
    _, updates = _updates()
    assert len(updates) == 2
    base = dataclasses.replace(MACHINES["sn40l"], copies_updates=True, op_overhead=1e-6)
    touching = dataclasses.replace(base, first_touch_bandwidth=1e9)
    for op in updates:
        cost = op_cost(op)
        new_buffer = cost.copied / 2
        assert new_buffer == 16 * 8 * 8 * 4  # the whole [1, 8, 16, 8] f32 cache
        assert first_touch_time(cost, touching) == pytest.approx(new_buffer / 1e9)
        assert cost.time(touching) == pytest.approx(cost.time(base) + new_buffer / 1e9)
        in_place = dataclasses.replace(touching, copies_updates=False)
        assert first_touch_time(cost, in_place) == 0.0
        assert first_touch_time(cost, base) == 0.0


def test_the_dataflow_step_grows_by_the_copies_first_touch() -> None:
    """One chip runs every section in turn: its modelled step grows by exactly the first
    touch of its two cache copies; the sn40l step is the same with the field given as 0."""
    module = program(tiny(chips=1, layers=1)).clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-link-points").apply(
        tp_context(), module
    )
    # Weights read as each section runs: the copies' first touch is on the chip's one path.
    sn40l = dataclasses.replace(MACHINES["sn40l"], prefetch_weights=False)
    copying = dataclasses.replace(sn40l, copies_updates=True)
    touching = dataclasses.replace(copying, first_touch_bandwidth=2e9)
    before = model(module, copying, "dataflow")[0].step_time
    after = model(module, touching, "dataflow")[0].step_time
    assert after - before == pytest.approx(2 * 16 * 8 * 8 * 4 / 2e9)
    zero = dataclasses.replace(sn40l, first_touch_bandwidth=0.0)
    as_given, as_preset = (model(module, m, "dataflow")[0].step_time for m in (zero, sn40l))
    assert as_given == as_preset


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1.0, "first_touch_bandwidth must be a finite number at least 0"),
        ("fast", "first_touch_bandwidth must be a number"),
    ],
)
def test_a_bad_first_touch_bandwidth_is_one_line(
    tmp_path: Path, value: object, message: str
) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"first_touch_bandwidth": value}))
    with pytest.raises(MachineError, match=message) as err:
        machine_from(str(path))
    assert "\n" not in str(err.value)
    path.write_text(json.dumps({"first_touch_bandwidth": 5e9, "copies_updates": True}))
    assert machine_from(str(path)).first_touch_bandwidth == 5e9
