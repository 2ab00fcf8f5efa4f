"""Property tests of the relay's repeats (``tp.relay_repeat``, `tp_dialect.passes.relay`).

Random per-chip programs of one repeated layer (each chip a few halts per layer, sending and
receiving per-layer buffers, some sent across the layer seam, a prologue and an epilogue
halt) give a schedule (`relay_schedule`, the schedule tp-relay computes from any programs).
Written as tp-relay writes it — its longest repeated block of rounds as one repeat — and
unrolled as every reader of the relay unrolls it (`relay_steps_of`), it must be the same
schedule step for step; and when the layers are identical the repeat must cover all but a
bounded number of rounds (the text does not grow with the layers).
"""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tp_dialect.analysis.calls.chip_runs import relay_steps_of
from tp_dialect.analysis.rounds import Deadlock, Halt, RelayStep, relay_schedule, rounds
from tp_dialect.passes.relay import relay_ops
from tp_dialect.program_ops import RelayOp, RelayRepeatOp


@st.composite
def layered_halts(draw: st.DrawFn) -> tuple[dict[int, list[Halt]], list[str], int]:
    """Halts of N chips running L layers of one pattern: chip c stops K_c times a layer;
    each stop sends some of the layer's buffers and receives some another chip sends (in the
    same layer, or the previous one: across the seam)."""
    n = draw(st.integers(1, 4))
    layers = draw(st.integers(2, 7))
    per_chip = [draw(st.integers(1, 3)) for _ in range(n)]
    sends = {
        (c, k): [f"b{c}_{k}"] if draw(st.booleans()) else []
        for c in range(n)
        for k in range(per_chip[c])
    }
    names = [name for names in sends.values() for name in names]
    receives: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for c in range(n):
        for k in range(per_chip[c]):
            got = []
            for name in names:
                sender = int(name[1 : name.index("_")])
                if sender != c and draw(st.integers(0, 3)) == 0:
                    got.append((name, draw(st.sampled_from([0, 0, 1]))))  # lag 1: the seam
            receives[(c, k)] = got
    tags = [f"l{i}_" for i in range(layers)]
    halts: dict[int, list[Halt]] = {}
    for c in range(n):
        hs = [Halt(0, frozenset(), frozenset())]
        for i, tag in enumerate(tags):
            for k in range(per_chip[c]):
                sent = frozenset(f"{tag}{name}" for name in sends[(c, k)])
                got = frozenset(
                    f"{tags[i - lag]}{name}" for name, lag in receives[(c, k)] if i - lag >= 0
                )
                hs.append(Halt(len(hs), sent, got))
        hs.append(Halt(len(hs), frozenset(), frozenset()))  # the end
        halts[c] = hs
    return halts, tags, n


def _unrolled(ops: list) -> list[RelayStep]:
    return [step for step, _ in relay_steps_of(RelayOp(ops))]


@settings(max_examples=150, deadline=None)
@given(layered_halts())
def test_folding_keeps_the_schedule(case: tuple[dict[int, list[Halt]], list[str], int]) -> None:
    halts, tags, n = case
    try:
        steps = relay_schedule(halts)
    except Deadlock:
        assume(False)
        return
    ops = relay_ops(steps, tags, n)
    assert _unrolled(ops) == steps
    repeats = [op for op in ops if isinstance(op, RelayRepeatOp)]
    assert len(repeats) <= 1
    if repeats:  # the text is one layer's rounds plus what stays outside
        (repeat,) = repeats
        assert repeat.count.value.data >= 2
        outside = [op for op in ops if not isinstance(op, RelayRepeatOp)]
        assert len(outside) + len(list(repeat.body.block.ops)) < len(steps)


def test_identical_layers_fold_to_one_layer() -> None:
    """Two chips, a fold-style all-reduce each layer: the schedule of 12 layers is a
    prologue round and one repeated block of four rounds, and unrolls to itself."""
    tags = [f"l{i}_" for i in range(12)]
    chip0 = [Halt(0, frozenset(), frozenset())]
    chip1 = [Halt(0, frozenset(), frozenset())]
    for tag in tags:
        chip0 += [
            Halt(len(chip0), frozenset(), frozenset({f"{tag}p1"})),
            Halt(len(chip0) + 1, frozenset({f"{tag}sum"}), frozenset()),
        ]
        chip1 += [Halt(len(chip1), frozenset({f"{tag}p1"}), frozenset({f"{tag}sum"}))]
    chip0.append(Halt(len(chip0), frozenset(), frozenset()))
    chip1.append(Halt(len(chip1), frozenset(), frozenset()))
    steps = relay_schedule({0: chip0, 1: chip1})
    ops = relay_ops(steps, tags, 2)
    repeats = [op for op in ops if isinstance(op, RelayRepeatOp)]
    assert len(repeats) == 1
    repeat = repeats[0]
    assert repeat.count.value.data == 12
    assert repeat.stride_list == [2, 1]
    assert repeat.rounds.value.data * 12 <= rounds(steps)
    assert _unrolled(ops) == steps


def test_a_long_schedule_with_no_repeat_is_searched_in_bounded_work() -> None:
    """Two chips ping-pong 1,500 untagged buffers, then run two tagged layers that differ
    (no repeat exists). The search looks only where the tags' first copies are: one over
    every start and length (tp's first version) grew with the cube of the rounds, 15 s at
    400 rounds, about 13 minutes at these 1,505. The schedule is kept as it is."""
    chip0 = [Halt(0, frozenset(), frozenset())]
    chip1 = [Halt(0, frozenset(), frozenset())]
    for k in range(1500):
        chip0.append(Halt(len(chip0), frozenset({f"a{k}"}), frozenset({f"b{k}"})))
        chip1.append(Halt(len(chip1), frozenset({f"b{k}"}), frozenset({f"a{k}"})))
    chip0 += [
        Halt(len(chip0), frozenset(), frozenset({"l0_p1"})),
        Halt(len(chip0) + 1, frozenset({"l0_sum"}), frozenset()),
        Halt(len(chip0) + 2, frozenset(), frozenset({"l1_p1", "l1_q"})),
        Halt(len(chip0) + 3, frozenset({"l1_sum"}), frozenset()),
        Halt(len(chip0) + 4, frozenset(), frozenset()),
    ]
    chip1 += [
        Halt(len(chip1), frozenset({"l0_p1"}), frozenset({"l0_sum"})),
        Halt(len(chip1) + 1, frozenset({"l1_p1"}), frozenset()),
        Halt(len(chip1) + 2, frozenset({"l1_q"}), frozenset({"l1_sum"})),
        Halt(len(chip1) + 3, frozenset(), frozenset()),
    ]
    steps = relay_schedule({0: chip0, 1: chip1})
    assert rounds(steps) > 1500
    ops = relay_ops(steps, ["l0_", "l1_"], 2)
    assert not any(isinstance(op, RelayRepeatOp) for op in ops)
    assert _unrolled(ops) == steps


def test_a_deadlock_says_where_every_chip_stands_a_finished_one_too() -> None:
    """Chip 0 runs to its end; chips 1 and 2 each wait at their start for what the other
    sends only later, and chip 1 also for a name nobody sends: the refusal names all three."""
    start, end = frozenset[str](), frozenset[str]()
    halts = {
        0: [Halt(0, start, end), Halt(1, frozenset({"a"}), end)],
        1: [Halt(0, start, frozenset({"c", "z"})), Halt(1, frozenset({"b"}), end)],
        2: [Halt(0, start, frozenset({"b"})), Halt(1, frozenset({"c"}), end)],
    }
    try:
        relay_schedule(halts)
    except Deadlock as err:
        assert err.where == {
            0: "has finished",
            1: "stands at its start waiting for c (from chip 2), z (no chip sends it)",
            2: "stands at its start waiting for b (from chip 1)",
        }
    else:
        raise AssertionError("no deadlock found")
