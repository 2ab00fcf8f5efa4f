"""The placement analyses on hand-made inputs: phases, touches, storage of in-place updates."""

from __future__ import annotations

import pytest
from helpers import program, tiny
from ir_helpers import parse
from ir_helpers import touch_of as _t
from xdsl.dialects import tensor
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.passes import PassPipeline

from tp_dialect.analysis.schedule.crossings import transfers
from tp_dialect.analysis.schedule.phases import ORDERS, phase_of, phase_order
from tp_dialect.analysis.touch import statements, storage, touch
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.passes import TP_PASSES
from tp_dialect.signature import entry_function
from tp_dialect.universe import tp_context

# The dependency rules hold in either order (the first two tests check both; unit times, so
# the critical path counts statements); where a test pins exact phases that are the seed's
# placement, it asks for order="source".


@pytest.mark.parametrize("order", ORDERS)
def test_write_after_read_waits_for_the_read_even_on_other_chips(order: str) -> None:
    # A (chip 1) reads key k; B (chip 0) overwrites k: B may not run before or with A.
    a = _t("A", {1}, reads=[("k", 0)])
    b = _t("B", {0}, writes=[("k", 0)])
    assert phase_of([a, b], order=order) == [0, 1]
    # Without the dependency they share a phase (disjoint chips).
    assert phase_of([a, _t("B", {0}, writes=[("other", 0)])], order=order) == [0, 0]


@pytest.mark.parametrize("order", ORDERS)
def test_read_after_write_and_write_after_write(order: str) -> None:
    w = _t("W", {0}, writes=[("k", 0)])
    r = _t("R", {1}, reads=[("k", 0)])
    w2 = _t("W2", {1}, writes=[("k", 0)])
    assert phase_of([w, r], order=order) == [0, 1]
    assert phase_of([w, w2], order=order) == [0, 1]


def test_earliest_free_phase_backfills_independent_work() -> None:
    # The seed's rule: a chain on chip 0, then independent chip-1 work: it goes into
    # phase 0, not after.
    chain = [_t(f"c{i}", {0}, reads=[(f"v{i}", 0)], writes=[(f"v{i + 1}", 0)]) for i in range(3)]
    late = _t("late", {1}, writes=[("u", 1)])
    assert phase_of([*chain, late], order="source") == [0, 1, 2, 0]
    order, barrier_after = phase_order([*chain, late], order="source")
    assert order == [0, 3, 1, 2]
    assert barrier_after == [False, True, True, True]


def test_the_critical_path_runs_the_longest_chain_first() -> None:
    # Chip 0 has a short chain (a then b, 1 each) and a long one (x then y, 5 each) whose
    # end chip 1 waits for (z reads y, 1). Source order runs a, b first and z last, alone:
    # 1 + 1 + 5 + 5 + 1 = 13. The critical path runs x, y first and z beside a: 12.
    a = _t("a", {0}, writes=[("a", 0)])
    b = _t("b", {0}, reads=[("a", 0)], writes=[("b", 0)])
    x = _t("x", {0}, writes=[("x", 0)])
    y = _t("y", {0}, reads=[("x", 0)], writes=[("y", 0)])
    z = _t("z", {1}, reads=[("y", 1)], writes=[("z", 1)])
    times = [1.0, 1.0, 5.0, 5.0, 1.0]
    assert phase_of([a, b, x, y, z], times, order="source") == [0, 1, 2, 3, 4]
    assert phase_of([a, b, x, y, z], times) == [2, 3, 0, 1, 2]


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


def test_a_transfer_waits_for_the_writer_of_what_it_copies_not_for_readers_elsewhere() -> None:
    # W stores s on chip 0; T1 copies it to chip 1, where R1 reads it; T2 copies it to chip 2,
    # where R2 reads it. T2 writes nothing R1 reads: it shares R1's phase (it used to wait).
    w = _t("W", {0}, writes=[("s", 0)])
    t1 = _t("T1", {0, 1}, reads=[("s", 0)], copies=[("s", 1)])
    r1 = _t("R1", {1}, reads=[("s", 1)])
    t2 = _t("T2", {0, 2}, reads=[("s", 0)], copies=[("s", 2)])
    r2 = _t("R2", {2}, reads=[("s", 2)])
    assert phase_of([w, t1, r1, t2, r2], order="source") == [0, 1, 2, 2, 3]
    # A reader on chip 0 does not wait for the copy to chip 1 either (only chip 0 is busy).
    r0 = _t("R0", {0}, reads=[("s", 0)])
    assert phase_of([w, t1, _t("X", {3}), r0], order="source") == [0, 1, 0, 2]
    assert phase_of(
        [w, _t("T", {1, 2}, reads=[("s", 1)], copies=[("s", 2)]), r0], order="source"
    ) == [0, 1, 1]


def test_a_transfer_still_orders_against_in_place_writes_and_older_copies() -> None:
    # A later in-place write of the storage waits for the transfer that reads it...
    w = _t("W", {0}, writes=[("s", 0)])
    t = _t("T", {0, 1}, reads=[("s", 0)], copies=[("s", 1)])
    assert phase_of([w, t, _t("W2", {2}, writes=[("s", 2)])], order="source") == [0, 1, 2]
    # ...and a copy onto chip 1 waits until chip 1's readers of the copy already there are
    # done (R reads late: it also waits for U, three phases into chip 2's work).
    chain = [_t(f"u{i}", {2}, reads=[(f"u{i}", 2)], writes=[(f"u{i + 1}", 2)]) for i in range(3)]
    r = _t("R", {1}, reads=[("s", 1), ("u3", 1)])
    again = _t("T'", {0, 1}, reads=[("s", 0)], copies=[("s", 1)])
    assert phase_of([w, t, *chain, r, again], order="source") == [0, 1, 0, 1, 2, 3, 4]
    # The reader on the copy's chip waits for the copy (read-after-write on the copy).
    assert phase_of([w, t, _t("R1", {1}, reads=[("s", 1)])], order="source") == [0, 1, 2]


_ARG_CACHE = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%k: tensor<2x4xf32, #tp.chip<0>>, %row: tensor<1x4xf32, #tp.chip<0>>,
               %w: tensor<2x4xf32, #tp.chip<1>>) -> () {
    %a = arith.mulf %w, %w : tensor<2x4xf32, #tp.chip<1>>
    %b = arith.mulf %a, %a : tensor<2x4xf32, #tp.chip<1>>
    %old = tp.allreduce %k, %b
      : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    %new = tensor.insert_slice %row into %k[1, 0] [1, 4] [1, 1]
      : tensor<1x4xf32, #tp.chip<0>> into tensor<2x4xf32, #tp.chip<0>>
    func.return
  }
}
"""


def _phases(module: ModuleOp) -> dict[str, int]:
    """Each statement's tp.phase, by its result's name (a transfer: ``T(name->dst)``)."""
    out = {}
    for op in statements(entry_function(module)):
        attr = op.attributes["tp.phase"]
        assert isinstance(attr, IntegerAttr)
        if isinstance(op, TransferOp):
            out[f"T({op.input.name_hint}->{op.dst})"] = attr.value.data
        else:
            out[str(op.results[0].name_hint)] = attr.value.data
    return out


def test_a_cache_in_a_function_argument_is_written_after_its_old_value_is_read() -> None:
    """The all-reduce reads the cache argument %k (partial 0) in phase 3, after chip 1's work;
    the in-place write of %k, free to run in phase 0 as far as its operands go, comes after."""
    module = parse(_ARG_CACHE)
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers").apply(tp_context(), module)
    func = entry_function(module)
    k = func.body.block.args[0]
    old, new = [op for op in statements(func) if isinstance(op, SectionOp)][2:4]
    assert (k, 0) in touch(old, 2).reads  # a host value's read is touched...
    assert (k, 0) in touch(new, 2).writes
    assert all(t.value is not k for t in transfers(func, 2))  # ...but it crosses nothing
    PassPipeline.parse_spec(TP_PASSES, "tp-phase").apply(tp_context(), module)
    assert _phases(module) == {"a": 0, "b": 1, "T(b->0)": 2, "old": 3, "new": 4}


_FANOUT = """builtin.module attributes {tp.chips = 3 : i64} {
  func.func @f(%w: tensor<2x12xf32>) -> () {
    %e1 = tensor.empty() : tensor<2x4xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<2x4xf32, #tp.chip<2>>
    %p0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 12]>
      : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<0>>
    %p1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(4, 4)], full = [2, 12]>
      : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<1>>
    %p2 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 4)], full = [2, 12]>
      : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<2>>
    %s = tp.allreduce %p0, %p1, %p2 : tensor<2x4xf32, #tp.chip<0>>,
      tensor<2x4xf32, #tp.chip<1>>, tensor<2x4xf32, #tp.chip<2>> -> tensor<2x4xf32>
    %a = linalg.add ins(%s, %s : tensor<2x4xf32>, tensor<2x4xf32>)
      outs(%e1 : tensor<2x4xf32, #tp.chip<1>>) -> tensor<2x4xf32, #tp.chip<1>>
    %b = linalg.add ins(%s, %s : tensor<2x4xf32>, tensor<2x4xf32>)
      outs(%e2 : tensor<2x4xf32, #tp.chip<2>>) -> tensor<2x4xf32, #tp.chip<2>>
    func.return
  }
}
"""


def test_a_transfer_no_longer_serialises_an_unrelated_reader() -> None:
    """The seed's all-reduce leaves %s on chip 0; chip 1 reads it (%a), then chip 2 (%b). The
    transfer of %s to chip 2 runs beside %a (7 phases; when a transfer counted as a write of
    %s's storage it waited for %a, and the program took 8)."""
    module = parse(_FANOUT)
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-phase").apply(
        tp_context(), module
    )
    phases = _phases(module)
    assert phases == {
        "p0": 0,
        "p1": 0,
        "p2": 0,
        "T(p1->0)": 1,
        "T(p2->0)": 2,
        "s": 3,
        "T(s->1)": 4,
        "a": 5,
        "T(s->2)": 5,
        "b": 6,
    }
    assert max(phases.values()) + 1 == 7
