"""Dataflow mode against schedules worked out by hand, and against the seed's modes.

The hand-written programs run on a machine with round numbers (1 GB/s of HBM, so a section
moving 4000 bytes takes 4 us; links of 1 us latency and 1 GB/s, so a 1000-byte tensor crosses
in 2 us; compute so fast it never binds), so every start and end below is worked out on paper
from the documented rules: a section's time is the bytes its ops read (every tensor operand,
the init of a named op's ``outs`` included) and write over the HBM bandwidth; an all-reduce
of N partials reads N of them and writes one (N + 1 tensors); a chip runs its sections in
order as soon as what they read has arrived; a transfer takes latency + bytes / bandwidth on
its own link.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import program, tiny
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from tp_dialect.analysis.timing.wires import route
from tp_dialect.machine import MACHINES, Machine, machine_from
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.model import ModelError, model
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

US = 1e-6
T = "tensor<1x250xf32>"  # 1000 bytes


def chip_t(c: int) -> str:
    return f"tensor<1x250xf32, #tp.chip<{c}>>"


def shard(c: int) -> str:
    return (
        f'%w{c} = tp.section "w{c}" on [{c}] {{\n'
        f"  %s = tp.shard %w_ at #tp.slice<axis = 0, ranges = [({c}, 1)], full = [3, 250]> "
        f": tensor<3x250xf32> -> {chip_t(c)}\n"
        f"  tp.yield %s : {chip_t(c)}\n"
        f"}} : {chip_t(c)}\n"
    )


def mul(name: str, c: int, a: str, a_t: str, b: str) -> str:
    """A section of one linalg.mul: 4000 bytes (a, b and the init read; the result written)."""
    return (
        f'%{name} = tp.section "{name}" on [{c}] {{\n'
        f"  %m = linalg.mul ins({a}, {b} : {a_t}, {chip_t(c)}) outs(%e : {chip_t(c)})"
        f" -> {chip_t(c)}\n  tp.yield %m : {chip_t(c)}\n}} : {chip_t(c)}\n"
    )


def allreduce(name: str, c: int, parts: str, algorithm: str) -> str:
    types = ", ".join(chip_t(i) for i in range(3))
    return (
        f'%{name} = tp.section "{name}" on [{c}] {{\n'
        f'  %r = tp.allreduce {parts} algorithm "{algorithm}" : {types} -> {T}\n'
        f"  tp.yield %r : {T}\n}} : {T}\n"
    )


def add_y(c: int) -> str:
    return (
        f'%y = tp.section "y" on [{c}] {{\n  %a = arith.addf %s1, %s2 : {T}\n'
        f"  tp.yield %a : {T}\n}} : {T}\n"
    )


def link_p(c: int) -> str:
    """Chip c's link 1: it sends its partial and receives the other two."""
    others = [o for o in range(3) if o != c]
    names = ", ".join(f'"p{o}"' for o in others)
    return (
        f"{', '.join(f'%p{o}' for o in others)} = tp.link 1 sends(%p{c}) as "
        f'["p{c}"] receives [{names}] : ({chip_t(c)}) -> '
        f"({', '.join(chip_t(o) for o in others)})\n"
    )


def chip_program(c: int, body: str, finish: str, results: str) -> str:
    return (
        f"{'%out = ' if results else ''}tp.chip_program on {c} (%w, %x) {{\n"
        f"^bb0(%w_: tensor<3x250xf32>, %x_: {T}):\n"
        f"%e = tensor.empty() : {chip_t(c)}\n{body}{finish}\n"
        f"}} : (tensor<3x250xf32>, {T}) -> ({results})\n"
    )


# Three chips, two all-reduces: s1 = p0 + p1 + p2 one-shot (each chip sends its partial to
# the other two and adds all three itself), s2 = q0 + q1 + q2 folded on chip 0 (chips 1 and 2
# send q to chip 0, chip 0 sends the sum back); y = s1 + s2 on every chip. Chip 2's partial
# takes two sections (r2, then p2: 8 us), so everything waits for it.
P = "%p0, %p1, %p2"
Q = "%q0, %q1, %q2"
HAND = (
    "builtin.module attributes {tp.chips = 3 : i64} {\n"
    f'func.func @step(%w: tensor<3x250xf32> {{tp.name = "w"}}, %x: {T} '
    f'{{tp.name = "hidden_states"}}) -> ({T} {{tp.name = "y"}}) {{\n'
    + chip_program(
        0,
        shard(0)
        + mul("p0", 0, "%x_", T, "%w0")
        + f'%p1, %p2 = tp.link 1 sends(%p0) as ["p0"] receives ["p1", "p2"] : ({chip_t(0)}) '
        f"-> ({chip_t(1)}, {chip_t(2)})\n"
        + allreduce("s1", 0, P, "oneshot")
        + mul("q0", 0, "%s1", T, "%w0")
        + f'%q1, %q2 = tp.link 2 sends() as [] receives ["q1", "q2"] : () -> ({chip_t(1)}, '
        f"{chip_t(2)})\n"
        + allreduce("s2", 0, Q, "fold")
        + f'tp.link 3 sends(%s2) as ["s2"] receives [] : ({T}) -> ()\n'
        + add_y(0),
        f"tp.finish %y : {T}",
        T,
    )
    + "".join(
        chip_program(
            c,
            shard(c)
            + (
                mul("r2", 2, "%x_", T, "%w2") + mul("p2", 2, "%r2", chip_t(2), "%w2")
                if c == 2
                else mul(f"p{c}", c, "%x_", T, f"%w{c}")
            )
            + link_p(c)
            + allreduce("s1", c, P, "oneshot")
            + mul(f"q{c}", c, "%s1", T, f"%w{c}")
            + f'%s2 = tp.link 2 sends(%q{c}) as ["q{c}"] receives ["s2"] : ({chip_t(c)}) -> {T}\n'
            + add_y(c),
            "tp.finish",
            "",
        )
        for c in (1, 2)
    )
    + f"func.return %out : {T}\n}}\n}}\n"
)

ROUND = {
    "base": "generic",
    "max_chips": 8,
    "peak_flops": 1e18,
    "hbm_bandwidth": 1e9,
    "link_bandwidth": 1e9,
    "link_latency": 1e-6,
    "topology": "all-to-all",
    "host_copy_overhead": 1e-6,
    "barrier_latency": 1e-6,
    "prefetch_weights": False,  # weights read as sections run (the streamed schedule: below)
}


@pytest.fixture(scope="module")
def round_machine(tmp_path_factory) -> Machine:
    path = tmp_path_factory.mktemp("machine") / "round.json"
    path.write_text(json.dumps(ROUND))
    return machine_from(str(path))


def hand() -> ModuleOp:
    module, _ = parse_module(tp_context(), HAND, "<hand>")
    module.verify()
    return module


def test_dataflow_follows_the_hand_schedule(round_machine: Machine) -> None:
    """By hand (us): p0, p1, r2 on [0, 4], p2 on [4, 8]; p0 and p1 arrive at 6, p2 at 10; s1
    on chip 2 (its own p2 is there at 8) [8, 12], on chips 0 and 1 [10, 14]; q2 [12, 16], q0
    and q1 [14, 18]; q2 reaches chip 0 at 18, q1 at 20; s2 on chip 0 [20, 24]; s2 reaches
    chips 1 and 2 at 26; y [24, 27] on chip 0, [26, 29] on chips 1 and 2: 29 us."""
    report, timeline = model(hand(), round_machine, "dataflow")
    assert report.step_time == pytest.approx(29 * US)
    spans = {(s.lane, s.name): (s.start / US, (s.start + s.duration) / US) for s in timeline.slices}
    want = {
        ("chip 0", "p0"): (0, 4),
        ("chip 2", "r2"): (0, 4),
        ("chip 2", "p2"): (4, 8),
        ("chip 1", "s1"): (10, 14),
        ("chip 2", "s1"): (8, 12),
        ("chip 2", "q2"): (12, 16),
        ("chip 0", "q0"): (14, 18),
        ("chip 0", "s2"): (20, 24),
        ("chip 0", "y"): (24, 27),
        ("chip 1", "y"): (26, 29),
        ("link 2->0", "p2 2->0"): (8, 10),
        ("link 1->0", "q1 1->0"): (18, 20),
        ("link 2->0", "q2 2->0"): (16, 18),
        ("link 0->2", "s2 0->2"): (24, 26),
    }
    for key, (start, end) in want.items():
        assert spans[key] == (pytest.approx(start), pytest.approx(end)), key
    # Nine transfers of 1000 bytes: six partials of s1, two of s2, the sum back twice.
    assert report.bytes_moved == 10 * 1000
    # Some chip computes on [0, 8], [12, 18] and [24, 29]; only all-reduces and transfers
    # run on [8, 12] and [18, 24].
    assert report.compute_time == pytest.approx(19 * US)
    assert report.communication_time == pytest.approx(10 * US)
    assert report.idle_time == pytest.approx(0, abs=1e-15)
    path = report.critical_path
    assert path is not None
    # r2, p2 (8) + q1 (4) + y (3) compute, s1 + s2 (4 + 4) all-reduce adds, three crossings (2 each)
    assert path["compute_s"] == pytest.approx(15 * US)
    assert path["collective_s"] == pytest.approx(8 * US)
    assert path["link_s"] == pytest.approx(6 * US)


def test_the_physical_bound_by_hand(round_machine: Machine) -> None:
    """Each chip holds its 1000-byte slice of w and the 1000-byte hidden state, and stores the
    1000-byte output: 3 us of HBM; each all-reduce needs at least one latency plus 2/3 of
    the tensor over a link: 1 + 2/3 us, twice. The seed's bound: w (3000 bytes) over three
    chips' HBM (1 us) plus a ring's 2(N-1) steps of latency + 1/N of the tensor, twice."""
    report, _ = model(hand(), round_machine, "dataflow")
    assert report.physical.hbm_bytes == [3000, 3000, 3000]
    assert report.physical.allreduce_count == 2
    assert report.physical_bound == pytest.approx((3 + 2 * (1 + 2 / 3)) * US)
    assert report.lower_bound == pytest.approx((1 + 2 * 4 * (1 + 1 / 3)) * US)
    assert report.physical_bound <= report.step_time
    memory = {m["chip"]: m for m in report.memory}
    assert [memory[c]["resident_weights_bytes"] for c in range(3)] == [1000] * 3
    assert [memory[c]["resident_state_bytes"] for c in range(3)] == [1000] * 3


def test_a_busy_link_queues_the_next_transfer(round_machine: Machine) -> None:
    """Chip 0 sends a and b to chip 1 at once: one link, so b crosses after a (arrives at
    4 us + 4 us of the first section); on a ring of four, chip 0 to chip 2 is two hops."""
    t2 = "tensor<1x250xf32, #tp.chip<0>>"
    text = (
        "builtin.module attributes {tp.chips = 2 : i64} {\n"
        f'func.func @f(%x: {T} {{tp.name = "hidden_states"}}) -> ({T} {{tp.name = "y"}}) {{\n'
        f"tp.chip_program on 0 (%x) {{\n^bb0(%x0: {T}):\n%e = tensor.empty() : {t2}\n"
        f'%a = tp.section "a" on [0] {{\n  %m = linalg.add ins(%x0, %x0 : {T}, {T}) outs(%e : {t2})'
        f" -> {t2}\n  tp.yield %m : {t2}\n}} : {t2}\n"
        f'%b = tp.section "b" on [0] {{\n  %m = linalg.add ins(%x0, %x0 : {T}, {T}) outs(%e : {t2})'
        f" -> {t2}\n  tp.yield %m : {t2}\n}} : {t2}\n"
        f'tp.link 1 sends(%a, %b) as ["a", "b"] receives [] : ({t2}, {t2}) -> ()\n'
        f"tp.finish\n}} : ({T}) -> ()\n"
        f"%out = tp.chip_program on 1 (%x) {{\n^bb0(%x1: {T}):\n"
        f'%a, %b = tp.link 1 sends() as [] receives ["a", "b"] : () -> ({t2}, {t2})\n'
        f'%y = tp.section "y" on [1] {{\n  %s = arith.addf %x1, %x1 : {T}\n'
        f"  tp.yield %s : {T}\n}} : {T}\n"
        f'%z = tp.section "z" on [1] {{\n  %m = linalg.add ins(%a, %b : {t2}, {t2}) '
        f"outs(%a : {t2}) -> {t2}\n  tp.yield %m : {t2}\n}} : {t2}\n"
        f"tp.finish %y : {T}\n}} : ({T}) -> ({T})\n"
        f"func.return %out : {T}\n}}\n}}\n"
    )
    module, _ = parse_module(tp_context(), text, "<queue>")
    report, timeline = model(module, round_machine, "dataflow")
    links = sorted((s.start / US, s.name) for s in timeline.slices if s.lane == "link 0->1")
    # a stored at 4, b at 8 (two 4-us sections); a crosses [4, 6], b [8, 10]; z [10, 14].
    assert links == [(pytest.approx(4), "a 0->1"), (pytest.approx(8), "b 0->1")]
    assert report.step_time == pytest.approx(14 * US)
    assert route(0, 2, 4, "ring") == [(0, 1), (1, 2)]
    assert route(0, 3, 4, "ring") == [(0, 3)]
    assert route(1, 3, 4, "all-to-all") == [(1, 3)]


def lowered(n: int, spec: str) -> ModuleOp:
    module = program(tiny(chips=n, layers=2)).clone()
    PassPipeline.parse_spec(TP_PASSES, spec).apply(tp_context(), module)
    return module


@pytest.mark.parametrize("n", [2, 4, 8])
def test_dataflow_beats_relay_and_phase_on_tiny_qwen3(n: int) -> None:
    """With no barriers and no host in the path, the same per-chip programs run no slower
    than under the host's relay, and no slower than the phased program they came from."""
    sn40l = MACHINES["sn40l"]
    phased = lowered(n, "tp-relocate,tp-transfers,tp-phase")
    programs = phased.clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-link-points").apply(tp_context(), programs)
    phase, _ = model(phased, sn40l, "phase")
    relay, _ = model(programs, sn40l, "relay")
    dataflow, _ = model(programs, sn40l, "dataflow")
    assert dataflow.step_time <= relay.step_time
    assert dataflow.step_time <= phase.step_time
    assert dataflow.bytes_moved == relay.bytes_moved == phase.bytes_moved
    assert dataflow.physical_bound <= dataflow.step_time


def test_dataflow_refuses_what_it_cannot_run(round_machine: Machine) -> None:
    with pytest.raises(ModelError, match="dataflow mode needs per-chip programs"):
        model(lowered(2, "tp-relocate,tp-transfers"), round_machine, "dataflow")
    # Chip 0 sends p0 only after s2, which needs q1 and q2, which need s1 on chips 1 and 2,
    # which needs p0: chips 1 and 2 wait for p0 at s1 while chip 0 waits for q1, q2 at s2.
    text = HAND.replace(
        f'tp.link 1 sends(%p0) as ["p0"] receives ["p1", "p2"] : ({chip_t(0)})',
        'tp.link 1 sends() as [] receives ["p1", "p2"] : ()',
    ).replace(
        f'tp.link 3 sends(%s2) as ["s2"] receives [] : ({T})',
        f'tp.link 3 sends(%s2, %p0) as ["s2", "p0"] receives [] : ({T}, {chip_t(0)})',
    )
    module, _ = parse_module(tp_context(), text, "<deadlock>")
    with pytest.raises(
        ModelError,
        match=r"dataflow deadlock: chip 0 waits at 's2' for %q1, %q2; "
        r"chip 1 waits at 's1' for %p0; chip 2 waits at 's1' for %p0",
    ):
        model(module, round_machine, "dataflow")


def test_machine_file_for_the_hand_schedule_is_what_the_test_says(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(ROUND))
    m = machine_from(str(path))
    assert m.transfer_time(1000, 0, 1, 3) == pytest.approx(2 * US)
    assert m.name == "generic" and m.topology == "all-to-all"
