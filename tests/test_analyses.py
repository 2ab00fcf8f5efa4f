"""The placement analyses on hand-made inputs: phases, touches, storage of in-place updates."""

from __future__ import annotations

from programs import program, tiny
from xdsl.dialects import tensor
from xdsl.passes import PassPipeline

from tp_dialect.analysis.phases import phase_of, phase_order
from tp_dialect.analysis.touch import SectionTouch, storage
from tp_dialect.passes import TP_PASSES
from tp_dialect.universe import tp_context


def _t(name: str, chips: set[int], reads=(), writes=()) -> SectionTouch:
    return SectionTouch(name, frozenset(chips), frozenset(reads), frozenset(writes))  # type: ignore[arg-type]


def test_write_after_read_waits_for_the_read_even_on_other_chips() -> None:
    # A (chip 1) reads key k; B (chip 0) overwrites k: B may not run before or with A.
    a = _t("A", {1}, reads=[("k", 0)])
    b = _t("B", {0}, writes=[("k", 0)])
    assert phase_of([a, b]) == [0, 1]
    # Without the dependency they share a phase (disjoint chips).
    assert phase_of([a, _t("B", {0}, writes=[("other", 0)])]) == [0, 0]


def test_read_after_write_and_write_after_write() -> None:
    w = _t("W", {0}, writes=[("k", 0)])
    r = _t("R", {1}, reads=[("k", 0)])
    w2 = _t("W2", {1}, writes=[("k", 0)])
    assert phase_of([w, r]) == [0, 1]
    assert phase_of([w, w2]) == [0, 1]


def test_earliest_free_phase_backfills_independent_work() -> None:
    # A chain on chip 0, then independent chip-1 work: it goes into phase 0, not after.
    chain = [_t(f"c{i}", {0}, reads=[(f"v{i}", 0)], writes=[(f"v{i + 1}", 0)]) for i in range(3)]
    late = _t("late", {1}, writes=[("u", 1)])
    assert phase_of([*chain, late]) == [0, 1, 2, 0]
    order, barrier_after = phase_order([*chain, late])
    assert order == [0, 3, 1, 2]
    assert barrier_after == [False, True, True, True]


def test_in_place_update_keeps_the_storage_of_its_destination() -> None:
    module = program(tiny(chips=2))
    inserts = [op for op in module.walk() if isinstance(op, tensor.InsertSliceOp)]
    assert inserts
    for op in inserts:
        assert storage(op.result) is storage(op.dest)


def test_qwen3_layer_phases_run_the_chips_at_once() -> None:
    """On a generated layer, chip-local sections of different chips share phases."""
    module = program(tiny(chips=4)).clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-phase").apply(
        tp_context(), module
    )
    by_phase: dict[int, list[tuple[int, ...]]] = {}
    for op in module.walk():
        if "tp.phase" in op.attributes and op.name == "tp.section":
            by_phase.setdefault(op.attributes["tp.phase"].value.data, []).append(op.chip_list)
    shared = [chips for chips in by_phase.values() if len(chips) == 4]
    assert shared, "no phase runs all four chips' sections at once"
    for chips in by_phase.values():
        flat = [c for cs in chips for c in cs]
        assert len(flat) == len(set(flat))
