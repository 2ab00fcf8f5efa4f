"""tp-phase's two orders side by side: ``source`` (the seed's rule) and ``critical-path``.

The references are none of the code under test:

- the seed's placement, copied below as it was (`_seed_phase_of`): ``order=source`` gives
  exactly its phases, on random statements and on generated programs;
- the list schedules built phase by phase, as the rule says (`_phase_by_phase`): the
  schedules critical-path chooses from, built statement by statement, are exactly these;
- the dependency rules written pairwise (`_depends`): every schedule tp-phase may choose puts
  each statement after everything it depends on and keeps chips apart within a phase;
- hand-computed cases;
- the multi-RDU model (its own timing code) for the modelled step and the timeline: on a
  generated Qwen3 with the seed's fold all-reduce the critical path is no longer than the
  seed's order, and chip 0 starts its MLP with the other chips instead of after them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import combinations

import pytest
from helpers import program, tiny
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply
from ir_helpers import touch_of as _t
from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from tp_dialect.analysis.schedule.phases import (
    _schedules,  # every schedule critical-path chooses from, not only the winner
    _source_order,  # the seed's placement (checked against the seed's own code below)
    bottom_levels,
    dependencies,
    phase_of,
    statement_times,
)
from tp_dialect.analysis.touch import SectionTouch, statements, touch
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.machine import MACHINES
from tp_dialect.runtime.model import model
from tp_dialect.runtime.model.timeline import Slice
from tp_dialect.signature import entry_function
from tp_dialect.tools import tp_opt

SN40L = MACHINES["sn40l"]


# -- references ---------------------------------------------------------------------------


def _seed_phase_of(touches: Sequence[SectionTouch]) -> list[int]:
    """The seed's tp-phase placement, as it was before the critical path (tables of the
    latest phase per storage and per (storage, chip); each statement in source order into
    the earliest phase after them where its chips are free)."""

    def latest(table: Mapping, keys) -> int:
        return max((table.get(k, -1) for k in keys), default=-1)

    def record(table: dict, keys, phase: int) -> None:
        for k in keys:
            if table.get(k, -1) < phase:
                table[k] = phase

    written: dict = {}
    read: dict = {}
    copied: dict = {}
    read_on: dict = {}
    busy: dict[int, set[int]] = {}
    phases = []
    for t in touches:
        reads = {s for s, _ in t.reads}
        writes = {s for s, _ in t.writes}
        after = max(
            latest(written, reads),
            latest(copied, t.reads),
            latest(written, writes),
            latest(read, writes),
            latest(copied, t.copies),
            latest(read_on, t.copies),
        )
        p = after + 1
        while any(p in busy.get(c, ()) for c in t.chips):
            p += 1
        for c in t.chips:
            busy.setdefault(c, set()).add(p)
        record(read, reads, p)
        record(read_on, t.reads, p)
        record(written, writes, p)
        record(copied, t.copies, p)
        phases.append(p)
    return phases


def _phase_by_phase(
    chips: Sequence[frozenset[int]],
    before: Sequence[Sequence[int]],
    priority: Sequence[tuple],
    paced: tuple[Sequence[int], Sequence[float]] | None = None,
) -> list[int]:
    """A list schedule as its rule reads, one phase at a time: paced, the phase's due
    statements (its latest) first; then the ready statements (everything in ``before``
    placed in an earlier phase) by ascending priority, each placed while its chips are free
    (paced: and it is no longer than the longest due one), a chip set whose first candidate
    is refused refused whole for the phase; empty phases dropped."""
    n = len(chips)
    phases = [-1] * n
    p = out = 0
    while -1 in phases:
        ready = [i for i in range(n) if phases[i] < 0 and all(phases[b] >= 0 for b in before[i])]
        busy: set[int] = set()
        placed = []
        longest = float("inf")
        if paced is not None:
            longest = 0.0
            for i in ready:
                if paced[0][i] == p:
                    assert not chips[i] & busy
                    placed.append(i)
                    busy |= chips[i]
                    longest = max(longest, paced[1][i])
        refused: set[frozenset[int]] = set()
        for i in sorted(ready, key=lambda i: priority[i]):
            if i in placed or chips[i] in refused:
                continue
            if chips[i] & busy or (paced is not None and paced[1][i] > longest):
                refused.add(chips[i])
                continue
            placed.append(i)
            busy |= chips[i]
        for i in placed:
            phases[i] = out
        out += bool(placed)
        p += 1
    return phases


def _phase_by_phase_schedules(
    chips: Sequence[frozenset[int]], preds: Sequence[Sequence[int]], times: Sequence[float]
) -> list[list[int]]:
    """The seed's placement, the bottom-level list schedule and each paced by the latest
    phases it leaves (the module's composition), each list schedule by `_phase_by_phase`."""
    n = len(chips)
    succs: list[list[int]] = [[] for _ in range(n)]
    for j, before in enumerate(preds):
        for i in before:
            succs[i].append(j)
    level = bottom_levels(preds, times)
    bases = [
        _source_order(chips, preds),
        _phase_by_phase(chips, preds, [(-level[i], i) for i in range(n)]),
    ]
    schedules = list(bases)
    for base in bases:
        end = max(base, default=-1)
        back = _phase_by_phase(chips, succs, [(-base[i], -i) for i in range(n)])
        latest = [end - b for b in back]
        schedules.append(
            _phase_by_phase(
                chips, preds, [(latest[i], -level[i], i) for i in range(n)], (latest, times)
            )
        )
    return schedules


def _depends(a: SectionTouch, b: SectionTouch) -> bool:
    """Whether ``b`` (later in source order) depends on ``a``: storage read-after-write,
    write-after-write and write-after-read on any chip; a copy onto a (storage, chip) that
    ``b`` reads, or copies onto again; ``a`` reading a (storage, chip) ``b`` copies onto."""
    aw, bw = {s for s, _ in a.writes}, {s for s, _ in b.writes}
    ar, br = {s for s, _ in a.reads}, {s for s, _ in b.reads}
    return bool(aw & (br | bw) or ar & bw or a.copies & (b.reads | b.copies) or a.reads & b.copies)


def _assert_valid(touches: Sequence[SectionTouch], phases: Sequence[int]) -> None:
    assert len(phases) == len(touches)
    assert sorted(set(phases)) == list(range(len(set(phases)))), "an empty phase"
    for i, j in combinations(range(len(touches)), 2):
        a, b = touches[i], touches[j]
        if _depends(a, b):
            assert phases[i] < phases[j], f"statement {j} depends on {i} but is not later"
        if phases[i] == phases[j]:
            assert not a.chips & b.chips, f"statements {i} and {j} share a chip in a phase"


def _phase_model(phases: Sequence[int], times: Sequence[float], barrier: float) -> float:
    """Phase mode by hand: each phase as long as its longest statement, plus a barrier."""
    longest: dict[int, float] = {}
    for p, t in zip(phases, times, strict=True):
        longest[p] = max(longest.get(p, 0.0), t)
    return sum(longest.values()) + barrier * len(longest)


# -- random statements --------------------------------------------------------------------

_STORAGES = ("a", "b", "c", "d", "e")


@st.composite
def _statements(draw: st.DrawFn) -> tuple[list[SectionTouch], list[float], float]:
    """Random sections (reads and writes on their chips or, like a fold, on chip 0) and
    transfers (a read on the source chip, a copy onto the destination), with times from a
    few magnitudes (zero-time views included) and a barrier."""
    n_chips = draw(st.integers(1, 4))
    chip = st.integers(0, n_chips - 1)
    touches, times = [], []
    for k in range(draw(st.integers(0, 22))):
        if n_chips > 1 and draw(st.booleans()) and draw(st.booleans()):
            src = draw(chip)
            dst = draw(chip.filter(lambda c, src=src: c != src))
            s = draw(st.sampled_from(_STORAGES))
            touches.append(_t(f"T{k}", {src, dst}, reads=[(s, src)], copies=[(s, dst)]))
        else:
            chips = draw(st.sets(chip, min_size=1))
            keys = st.tuples(st.sampled_from(_STORAGES), st.sampled_from(sorted(chips)))
            reads = draw(st.lists(keys, max_size=3))
            writes = draw(st.lists(keys, max_size=2))
            touches.append(_t(f"S{k}", chips, reads=reads, writes=writes))
        times.append(draw(st.sampled_from([0.0, 0.5, 1.0, 3.0, 10.0])))
    return touches, times, draw(st.sampled_from([0.0, 0.25, 2.0]))


@settings(max_examples=300, **SETTINGS)
@given(_statements())
def test_source_order_is_the_seeds_placement(case) -> None:
    touches, _, _ = case
    assert phase_of(touches, order="source") == _seed_phase_of(touches)


@settings(max_examples=300, **SETTINGS)
@given(_statements())
def test_every_schedule_keeps_dependencies_and_chips_apart(case) -> None:
    """Every candidate critical-path chooses from, and both orders' results, are valid; the
    critical path models no longer than the seed's placement (phase mode by hand)."""
    touches, times, barrier = case
    chips = [t.chips for t in touches]
    for phases in _schedules(chips, dependencies(touches), times):
        _assert_valid(touches, phases)
    source = phase_of(touches, times, "source", barrier)
    critical = phase_of(touches, times, "critical-path", barrier)
    _assert_valid(touches, source)
    _assert_valid(touches, critical)
    assert _phase_model(critical, times, barrier) <= _phase_model(source, times, barrier) + 1e-9


@settings(max_examples=300, **SETTINGS)
@given(_statements())
def test_schedules_are_the_phase_by_phase_ones(case) -> None:
    """Built statement by statement, every schedule critical-path chooses from is the one
    built phase by phase (unit times too)."""
    touches, times, _ = case
    chips = [t.chips for t in touches]
    preds = dependencies(touches)
    for ts in (times, [1.0] * len(times)):
        assert _schedules(chips, preds, ts) == _phase_by_phase_schedules(chips, preds, ts)


@pytest.mark.parametrize("algorithm", ["fold", "oneshot", "twoshot", "ring"])
def test_schedules_of_generated_programs_are_the_phase_by_phase_ones(algorithm: str) -> None:
    module = program(tiny(chips=4, layers=1)).clone()
    apply(module, f"tp-relocate{{allreduce={algorithm}}},tp-transfers")
    touches = [touch(op, 4) for op in statements(entry_function(module))]  # type: ignore[arg-type]
    chips = [t.chips for t in touches]
    preds = dependencies(touches)
    times = statement_times(touches, SN40L, 4)
    assert _schedules(chips, preds, times) == _phase_by_phase_schedules(chips, preds, times)


@pytest.mark.parametrize("chips", [1, 2, 4])
@pytest.mark.parametrize("algorithm", ["fold", "ring"])
def test_source_order_on_generated_programs_is_the_seeds_placement(
    chips: int, algorithm: str
) -> None:
    module = program(tiny(chips=chips, layers=2)).clone()
    apply(module, f"tp-relocate{{allreduce={algorithm}}},tp-transfers")
    touches = [touch(op, chips) for op in statements(entry_function(module))]  # type: ignore[arg-type]
    assert phase_of(touches, order="source") == _seed_phase_of(touches)
    times = statement_times(touches, SN40L, chips)
    _assert_valid(touches, phase_of(touches, times, "critical-path", SN40L.barrier_latency))


# -- hand-computed ------------------------------------------------------------------------


def test_bottom_level_is_own_time_plus_the_longest_path_after() -> None:
    # 0 -> 1 -> 3 and 0 -> 2 -> 3, times 1, 2, 5, 1: via 2 is longer.
    assert bottom_levels([[], [0], [0], [1, 2]], [1, 2, 5, 1]) == [7, 3, 6, 1]


# Chip 0 forwards a tensor to chip 2 (X, read there by R), loads a weight (S0, no time) and
# runs two long statements G0, H0; chip 1 runs G1, H1 of the same length. In source order
# X and S0 take chip 0's first phases while chip 1 runs ahead: G1 beside X, H1 beside S0,
# then G0 and H0 alone — four long phases, 40. With the critical path chip 1 waits and the
# short work fills in: G0 beside G1, H0 beside H1, X and R in short phases or beside a long
# one — 21, the least possible (chip 0 has X, S0, G0 and H0: four phases, two of them 10;
# X before R, and X 1 long).
_X = _t("X", {0, 2}, reads=[("f", 0)], copies=[("f", 2)])
_R = _t("R", {2}, reads=[("f", 2)], writes=[("r", 2)])
_S0 = _t("S0", {0}, writes=[("w0", 0)])
_G0 = _t("G0", {0}, reads=[("w0", 0)], writes=[("g0", 0)])
_G1 = _t("G1", {1}, writes=[("g1", 1)])
_H0 = _t("H0", {0}, reads=[("g0", 0)], writes=[("h0", 0)])
_H1 = _t("H1", {1}, reads=[("g1", 1)], writes=[("h1", 1)])
_FORWARDING = [_X, _R, _S0, _G0, _G1, _H0, _H1]
_TIMES = [1.0, 1.0, 0.0, 10.0, 10.0, 10.0, 10.0]


def test_forwarding_delays_chip_0_in_source_order() -> None:
    phases = phase_of(_FORWARDING, _TIMES, "source")
    assert phases == [0, 1, 1, 2, 0, 3, 1]
    assert _phase_model(phases, _TIMES, 0.0) == 40.0


@pytest.mark.parametrize("barrier", [0.0, 0.5])
def test_critical_path_keeps_chip_0_in_step(barrier: float) -> None:
    x, r, s0, g0, g1, h0, h1 = phase_of(_FORWARDING, _TIMES, "critical-path", barrier)
    assert g0 == g1 and h0 == h1
    assert s0 < g0 < h0 and x < r
    assert _phase_model([x, r, s0, g0, g1, h0, h1], _TIMES, barrier) == 21.0 + 4 * barrier


# -- generated Qwen3 on the multi-RDU model -----------------------------------------------


def _phased(cfg: Qwen3Config, order: str) -> ModuleOp:
    module = program(cfg).clone()
    apply(module, f"tp-relocate,tp-transfers,tp-phase{{order={order}}}")
    return module


def _n_phases(module: ModuleOp) -> int:
    return len(
        {
            op.attributes["tp.phase"].value.data  # type: ignore[union-attr]
            for op in statements(entry_function(module))
            if isinstance(op.attributes.get("tp.phase"), IntegerAttr)
        }
    )


def _gates(module: ModuleOp, chips: int) -> dict[int, Slice]:
    """Each chip's first MLP section (layer 0's gate projection) in the phase-mode
    timeline."""
    _, timeline = model(module, SN40L, mode="phase")
    gates = {}
    for c in range(chips):
        (gates[c],) = [
            s for s in timeline.slices if s.lane == f"chip {c}" and s.name == f"l0_gate_c{c}"
        ]
    return gates


_CONFIGS = [
    tiny(chips=2, layers=2),
    tiny(chips=4, layers=2),
    Qwen3Config.preset("qwen3-8b", chips=4, layers=1),  # real dims: the model needs only shapes
]


@pytest.mark.parametrize("cfg", _CONFIGS, ids=lambda c: f"h{c.hidden}-n{c.chips}-l{c.layers}")
def test_critical_path_models_no_longer_than_source_order(cfg: Qwen3Config) -> None:
    source, critical = _phased(cfg, "source"), _phased(cfg, "critical-path")
    source_step = model(source, SN40L, mode="phase")[0].step_time
    critical_step = model(critical, SN40L, mode="phase")[0].step_time
    assert critical_step <= source_step * (1 + 1e-9)
    assert _n_phases(critical) <= _n_phases(source)


def test_chip_0_starts_its_mlp_with_the_other_chips() -> None:
    """qwen3-8b dims, 4 chips, the seed's fold all-reduce: in source order chip 0 starts its
    gate projection after chips 1-3 (it received the partials and forwarded the sum while
    they loaded their MLP weights), and the modelled step pays for chip 0's MLP running
    alone; the critical path starts every chip's gate in one phase, and the step is shorter
    by more than one gate projection's time."""
    cfg = Qwen3Config.preset("qwen3-8b", chips=4, layers=1)
    source, critical = _phased(cfg, "source"), _phased(cfg, "critical-path")
    late = _gates(source, 4)
    assert late[0].start > max(late[c].start for c in (1, 2, 3))
    gates = _gates(critical, 4)
    assert gates[0].start <= min(gates[c].start for c in (1, 2, 3))
    saved = model(source, SN40L, mode="phase")[0].step_time - (
        model(critical, SN40L, mode="phase")[0].step_time
    )
    assert saved > gates[0].duration


# -- the pass's options -------------------------------------------------------------------


def test_order_and_machine_options(tmp_path, capsys) -> None:
    cfg = tiny(chips=2, layers=1)
    src = tmp_path / "layer.mlir"
    module = program(cfg).clone()
    apply(module, "tp-relocate,tp-transfers")
    src.write_text(str(module))
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"base": "sn40l", "link_latency": 1e-3}))
    for option in ("order=source", "machine=generic", f'machine="{slow}"', ""):
        flag = f"--tp-phase={option}" if option else "--tp-phase"
        assert tp_opt.main([str(src), flag, "-o", str(tmp_path / "out.mlir")]) == 0, option
    for option, message in (
        ("machine=nope", "tp-phase: no machine 'nope'"),
        ("order=random", "given ('random',), expected typing.Literal['critical-path', 'source']"),
    ):
        capsys.readouterr()
        assert tp_opt.main([str(src), f"--tp-phase={option}"]) == 1
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err, err


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_a_negative_or_nan_time_is_refused(bad: float) -> None:
    """Bottom levels rank every statement before its dependants only for times of at least
    0: a negative or NaN time is refused, not scheduled."""
    with pytest.raises(ValueError, match="negative or not a number"):
        phase_of(_FORWARDING, [*_TIMES[:-1], bad])
