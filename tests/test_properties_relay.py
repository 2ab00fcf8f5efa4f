"""Property tests of the per-chip programs (tp-link-points) and the host's relay (tp-relay).

A. Random valid programs from `random_programs.programs` (N = 1..4) go through
   ``tp-relocate{allreduce=fold|ring},tp-transfers[,tp-phase],tp-link-points,tp-relay``
   (sometimes with tp-raise-allreduce first, sometimes with shards hoisted into chip-typed host
   arguments so that a chip's start halt, link 0, receives; a ring where tp-transfers can spell
   it out, its sums travelling chip to chip). The interpreter running the chip programs under
   the relay, under value and storage semantics, must compute what the original program
   computes (to f32 rounding for the ring, whose folds add in a rotated order); the relay must
   run every
   chip through every halt once, in order, copying each received tensor just before the chip
   leaves the halt that receives it, from a chip that sent it in an earlier round; and the link
   points must send what an earlier section stored and receive what a later section loads,
   once per crossing value.

B. Random abstract halt graphs (no IR) go to `relay_schedule`, checked against an independent
   model: the dependency graph whose nodes are (chip, halt position), with an edge from each
   halt to the chip's next one and from the halt sending a name to the receiving chip's move out
   of the halt that receives it. A deadlock is exactly a cycle (or a name nobody sends); the
   schedule is as fast as that graph allows (each move at its ASAP level).

C. A hand-written cyclic pair of chip programs is refused by tp-relay as a deadlock.
"""

from __future__ import annotations

import math
import re
import signal
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from graphlib import CycleError, TopologicalSorter
from types import FrameType
from typing import Any

import numpy as np
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, check_ir, parse
from random_programs import Program, programs
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tp_dialect.analysis.rounds import (
    Copy,
    Deadlock,
    Halt,
    RelayStep,
    RunTo,
    relay_schedule,
    rounds,
)
from tp_dialect.analysis.schedule.crossings import transfers
from tp_dialect.analysis.touch import statements
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import AllReduceOp, SectionOp, TransferOp
from tp_dialect.program_ops import (
    ChipProgramOp,
    CopyOp,
    FinishOp,
    LinkOp,
    RelayOp,
    RunToOp,
)
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function

ALGORITHMS = ("fold", "ring")

# -- the relay's properties, over any halts (shared by A and B) ------------------------------


def sender_of(halts: Mapping[int, Sequence[Halt]]) -> dict[str, tuple[int, int]]:
    """Each sent name's (chip, halt position); a name is sent at one halt of one chip."""
    out: dict[str, tuple[int, int]] = {}
    for chip, hs in halts.items():
        for p, h in enumerate(hs):
            for name in h.sends:
                assert name not in out, f"{name} is sent twice: {out[name]} and {(chip, p)}"
                out[name] = (chip, p)
    return out


def asap_levels(halts: Mapping[int, Sequence[Halt]]) -> dict[tuple[int, int], float]:
    """The dependency graph's longest-path level of each node (chip, halt position), by Kahn's
    algorithm: a start is level 0; arriving at position p+1 takes one more than the chip's
    position p and than each node that sends what position p receives. Nodes on or after a
    cycle, or after a receive of a name nobody sends, get ``inf``."""
    senders = sender_of(halts)
    preds: dict[tuple[int, int], list[tuple[int, int]]] = {}
    blocked: set[tuple[int, int]] = set()
    for chip, hs in halts.items():
        preds[(chip, 0)] = []
        for p in range(1, len(hs)):
            node_preds = [(chip, p - 1)]
            for name in hs[p - 1].receives:
                if name in senders:
                    node_preds.append(senders[name])
                else:
                    blocked.add((chip, p))
            preds[(chip, p)] = node_preds
    succs: dict[tuple[int, int], list[tuple[int, int]]] = {n: [] for n in preds}
    waiting = {n: len(ps) + (n in blocked) for n, ps in preds.items()}
    for n, ps in preds.items():
        for q in ps:
            succs[q].append(n)
    level: dict[tuple[int, int], float] = {n: math.inf for n in preds}
    ready = [n for n, k in waiting.items() if k == 0]
    while ready:
        n = ready.pop()
        level[n] = max((level[q] + 1 for q in preds[n]), default=0)
        for m in succs[n]:
            waiting[m] -= 1
            if waiting[m] == 0:
                ready.append(m)
    return level


def has_cycle(halts: Mapping[int, Sequence[Halt]]) -> bool:
    """Whether the dependency graph has a cycle (graphlib, independent of `asap_levels`)."""
    senders = sender_of(halts)
    graph: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for chip, hs in halts.items():
        graph.setdefault((chip, 0), set())
        for p in range(1, len(hs)):
            deps = {(chip, p - 1)} | {senders[x] for x in hs[p - 1].receives if x in senders}
            graph[(chip, p)] = deps
    try:
        TopologicalSorter(graph).prepare()
    except CycleError:
        return True
    return False


def check_relay(halts: Mapping[int, Sequence[Halt]], steps: Sequence[RelayStep]) -> None:
    """The relay's invariants for chips with these halts (each list: start, ..., end)."""
    senders = sender_of(halts)
    # Steps come round by round.
    step_rounds = [s.round for s in steps]
    assert step_rounds == sorted(step_rounds), f"steps out of round order: {steps}"
    assert {s.chip for s in steps if isinstance(s, RunTo)} <= set(halts)
    # Every chip reaches each of its halts after the start exactly once, in order, the end last,
    # in strictly increasing rounds.
    arrive: dict[tuple[int, int], int] = {}
    for chip, hs in halts.items():
        runs = [s for s in steps if isinstance(s, RunTo) and s.chip == chip]
        assert [s.halt for s in runs] == [h.index for h in hs[1:]], (chip, runs)
        assert all(a.round < b.round for a, b in zip(runs, runs[1:], strict=False)), runs
        arrive[(chip, 0)] = -1
        for p, s in enumerate(runs, start=1):
            arrive[(chip, p)] = s.round
    # Each received name is copied to the chip in the round it leaves the halt receiving it,
    # from its sender, which arrived at the sending halt in a strictly earlier round; there are
    # no other copies.
    wanted: list[tuple[int, str, int, int]] = []
    for chip, hs in halts.items():
        for p in range(len(hs) - 1):
            leave = arrive[(chip, p + 1)]
            for name in hs[p].receives:
                assert name in senders, f"chip {chip} receives {name}, which nobody sends"
                src = senders[name]
                assert arrive[src] < leave, (name, src, arrive[src], chip, leave)
                wanted.append((leave, name, src[0], chip))
    copies = [(s.round, s.tensor, s.src, s.dst) for s in steps if isinstance(s, Copy)]
    assert sorted(copies) == sorted(wanted), (copies, wanted)
    # Replayed in step order (as the host does): a chip never leaves a halt before everything
    # it receives there is in its inbox, copied from an outbox filled in an earlier round.
    pos = {chip: 0 for chip in halts}
    outbox: dict[tuple[int, str], int] = {}  # (chip, name) -> round it was published
    inbox: dict[int, set[str]] = {chip: set() for chip in halts}
    for s in steps:
        if isinstance(s, Copy):
            assert (s.src, s.tensor) in outbox, f"{s}: chip {s.src} has not sent {s.tensor}"
            assert outbox[(s.src, s.tensor)] < s.round, f"{s}: sent in the same round"
            inbox[s.dst].add(s.tensor)
        else:
            hs = halts[s.chip]
            missing = hs[pos[s.chip]].receives - inbox[s.chip]
            assert not missing, f"{s}: chip {s.chip} leaves without {sorted(missing)}"
            pos[s.chip] += 1
            for name in hs[pos[s.chip]].sends:
                outbox[(s.chip, name)] = s.round
    assert all(p == len(halts[c]) - 1 for c, p in pos.items()), pos
    # As fast as possible: each move is in the round its dependency-graph level allows, so the
    # relay takes as many rounds as the graph's longest path.
    level = asap_levels(halts)
    for node, r in arrive.items():
        assert level[node] == r + 1, (node, level[node], r)
    n_rounds = max(step_rounds, default=-1) + 1
    assert n_rounds == max((int(v) for v in level.values()), default=0)


# -- A. random programs through the pipeline ------------------------------------------------


@dataclass
class Lowered:
    """A random program lowered to chip programs and a relay."""

    prog: Program
    spec: str
    module: ModuleOp
    crossing: list[tuple[str, int, int]]  # (value name hint, src, dst) before tp-link-points

    def __repr__(self) -> str:
        return f"Lowered({self.spec}) from {self.prog!r}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def hoist_shards(draw: st.DrawFn, prog: Program) -> Program:
    """``prog`` with some ``tp.shard`` statements replaced by chip-typed host arguments holding
    the same values (the same outputs). A chip whose first statements were shards may then
    start with a section that reads a crossing value: its start halt (link 0) receives."""
    args = list(prog.args)
    inputs = dict(prog.inputs)
    stmts = []
    for stmt in prog.stmts:
        if stmt.kind == "shard" and len(stmt.lines) == 1 and draw(st.booleans()):
            (name,) = stmt.binds
            args.append((name, stmt.lines[0].rsplit("-> ", 1)[1]))
            inputs[name] = prog.env[name]
        else:
            stmts.append(stmt)
    return replace(prog, args=args, inputs=inputs, stmts=stmts)


@st.composite
def lowered(draw: st.DrawFn) -> Lowered:
    """A random program (N = 1..4, sometimes with shards hoisted into chip-typed arguments)
    lowered through tp-relocate{allreduce=fold or ring}, tp-transfers, maybe tp-phase,
    tp-link-points and tp-relay (sometimes with tp-raise-allreduce first); a ring only where
    tp-transfers spells it out (an axis of N elements to cut: else per-chip programs refuse
    it, as `test_properties_lowering` checks)."""
    prog = draw(programs(chips=st.sampled_from((2, 3, 4, 1))))
    if draw(st.booleans()):
        prog = hoist_shards(draw, prog)
    raise_first = draw(st.booleans())
    phase = draw(st.booleans())
    algorithm = draw(st.sampled_from(ALGORITHMS))
    before = [
        *(["tp-raise-allreduce"] if raise_first else []),
        f"tp-relocate{{allreduce={algorithm}}}",
        "tp-transfers",
        *(["tp-phase"] if phase else []),
    ]
    spec = ",".join([*before, "tp-link-points", "tp-relay"])
    module = parse(prog.text())
    apply(module, ",".join(before))
    check_ir(module)
    ring_left = any(
        isinstance(op, AllReduceOp) and op.algorithm_name == "ring" for op in module.walk()
    )
    assume(not ring_left)
    event(f"{algorithm}, N={prog.n}")
    func = entry_function(module)
    hints = [r.name_hint for op in statements(func) for r in op.results]
    assert len(hints) == len(set(hints)) and None not in hints, hints
    crossing = [
        (op.input.name_hint, op.src, op.dst)
        for op in statements(func)
        if isinstance(op, TransferOp)
    ]
    crossing += [(t.value.name_hint, t.src, t.dst) for t in transfers(func, prog.n)]
    apply(module, "tp-link-points,tp-relay")
    check_ir(module)
    return Lowered(prog, spec, module, [(h, s, d) for h, s, d in crossing if h is not None])


def chip_programs(module: ModuleOp) -> list[ChipProgramOp]:
    return [op for op in entry_function(module).body.block.ops if isinstance(op, ChipProgramOp)]


def links(program: ChipProgramOp) -> list[LinkOp]:
    return [op for op in program.body.block.ops if isinstance(op, LinkOp)]


def halts_from_ir(program: ChipProgramOp) -> list[Halt]:
    """A chip program's halts read off its links: the start (link 0, or nothing placed), each
    later link, and the end (numbered one past the last link)."""
    lks = links(program)
    start = lks[0] if lks and lks[0].halt == 0 else None
    hs = [Halt(0, frozenset(), frozenset(start.receives if start else ()))]
    hs += [Halt(lk.halt, frozenset(lk.sends), frozenset(lk.receives)) for lk in lks if lk.halt]
    hs.append(Halt(max((lk.halt for lk in lks), default=0) + 1, frozenset(), frozenset()))
    return hs


def relay_steps_from_ir(module: ModuleOp) -> list[RelayStep]:
    relays = [op for op in entry_function(module).body.block.ops if isinstance(op, RelayOp)]
    assert len(relays) == 1, f"{len(relays)} tp.relay ops"
    out: list[RelayStep] = []
    for s in relays[0].body.block.ops:
        if isinstance(s, RunToOp):
            out.append(RunTo(s.round.value.data, s.chip.value.data, s.halt.value.data))
        else:
            assert isinstance(s, CopyOp), s.name
            out.append(
                Copy(s.round.value.data, s.tensor.data, s.source.value.data, s.dest.value.data)
            )
    return out


def top_level(op: Operation, block_owner: ChipProgramOp) -> Operation:
    """The op of ``block_owner``'s block that holds ``op`` (``op`` itself if top level)."""
    while op.parent_op() is not block_owner:
        parent = op.parent_op()
        assert parent is not None, op
        op = parent
    return op


@settings(max_examples=70, **SETTINGS)
@given(lowered())
def test_chip_programs_under_the_relay_compute_the_original_outputs(case: Lowered) -> None:
    """Invariant: the reference interpreter running the per-chip programs under the tp.relay,
    under value and under storage semantics, gives the outputs of the original program (the
    generator's numpy model and the interpreter on the unlowered module): to rtol 1e-6 with
    the seed's fold, to f32 rounding of the summands with a ring (its folds add in a rotated
    chip order), and the same under both semantics, bitwise."""
    got = run_program(case.module, case.prog.inputs)
    stored = run_program(case.module, case.prog.inputs, storage=True)
    original = run_program(parse(case.prog.text()), case.prog.inputs)
    assert set(got) == set(case.prog.expected) == set(original) == set(stored)
    ring = "allreduce=ring" in case.spec
    for name, want in case.prog.expected.items():
        np.testing.assert_array_equal(stored[name], got[name], err_msg=name)
        for reference in (want, original[name]):
            scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
            atol = 1e-5 * scale if ring else 0.0
            np.testing.assert_allclose(got[name], reference, rtol=1e-6, atol=atol, err_msg=name)


@settings(max_examples=70, **SETTINGS)
@given(lowered())
def test_relay_reaches_every_halt_once_and_copies_receives_in_time(case: Lowered) -> None:
    """Invariant: in the tp.relay, every chip program (one per chip) runs to each of its halts
    once, in increasing order, ending at its end; every tensor a halt receives is copied to
    that chip, from the chip whose link sends it, in the round the chip leaves that halt, and
    the sender reached its sending halt in a strictly earlier round; no chip is run from a halt
    whose receives are not in its inbox; the number of rounds is the longest dependency path.
    Running tp-relay again replaces the relay with the same one."""
    progs = chip_programs(case.module)
    assert sorted(p.chip_index for p in progs) == list(range(case.prog.n))
    halts = {p.chip_index: halts_from_ir(p) for p in progs}
    steps = relay_steps_from_ir(case.module)
    apply(case.module, "tp-relay")  # again: the old relay is replaced by the same one
    assert relay_steps_from_ir(case.module) == steps
    event(f"N={case.prog.n}, copies={min(sum(isinstance(s, Copy) for s in steps), 3)}")
    check_relay(halts, steps)


@settings(max_examples=70, **SETTINGS)
@given(lowered())
def test_link_points_send_stored_values_and_receive_loaded_ones(case: Lowered) -> None:
    """Invariant: in each chip program, links are numbered 0 (the start, before any section,
    sending nothing) or 1, 2, ... in program order; each link sends values stored by the
    section right before it; each value a link receives is used, only by later sections, and
    by the section right after the link; every crossing value (tp.transfer ops and the
    transfers analysis before tp-link-points) is sent once by its sender, under one buffer name
    no other chip sends, and received once by each reader chip under that name."""
    progs = {p.chip_index: p for p in chip_programs(case.module)}
    sent: dict[int, dict[str, str]] = {}  # chip -> value hint -> buffer name
    received: dict[int, dict[str, list[str]]] = {}  # chip -> buffer name -> value hints
    senders_of_name: dict[str, list[int]] = {}
    for chip, prog in progs.items():
        ops = list(prog.body.block.ops)
        lks = links(prog)
        numbers = [lk.halt for lk in lks]
        first = 0 if numbers and numbers[0] == 0 else 1
        assert numbers == list(range(first, first + len(numbers))), (chip, numbers)
        sections = [i for i, op in enumerate(ops) if isinstance(op, SectionOp)]
        for lk in lks:
            at = ops.index(lk)
            if lk.halt == 0:
                assert not lk.sends and all(at < i for i in sections), (chip, str(lk))
            if lk.sends:
                before = ops[at - 1]
                assert isinstance(before, SectionOp), (chip, str(lk))
                for v, name in zip(lk.sent, lk.sends, strict=True):
                    assert v.owner is before, (chip, name, str(lk))
                    assert name not in sent.setdefault(chip, {}).values(), (chip, name)
                    assert v.name_hint is not None
                    sent[chip][v.name_hint] = name
                    senders_of_name.setdefault(name, []).append(chip)
            after = ops[at + 1] if at + 1 < len(ops) else None
            for r, name in zip(lk.received, lk.receives, strict=True):
                received.setdefault(chip, {}).setdefault(name, []).append(r.name_hint or "")
                assert r.uses, (chip, name, "received but never used")
                for use in r.uses:
                    user = top_level(use.operation, prog)
                    assert isinstance(user, SectionOp) and ops.index(user) > at, (chip, name)
                assert isinstance(after, SectionOp), (chip, str(lk))
                assert any(top_level(u.operation, prog) is after for u in r.uses), (chip, name)
        assert isinstance(ops[-1], FinishOp)
    for name, chips in senders_of_name.items():
        assert len(chips) == 1, f"{name} is sent by chips {chips}"
    expected_sends = {(h, s) for h, s, _ in case.crossing}
    got_sends = {(h, c) for c, by_hint in sent.items() for h in by_hint}
    assert got_sends == expected_sends, (got_sends, expected_sends)
    for h, src, dst in case.crossing:
        name = sent[src][h]
        assert received.get(dst, {}).get(name) == [h], (h, src, dst, received.get(dst))
    expected_receives = {(sent[s][h], d) for h, s, d in case.crossing}
    got_receives = {(n, c) for c, by_name in received.items() for n in by_name}
    assert got_receives == expected_receives, (got_receives, expected_receives)


# -- B. abstract halt graphs -----------------------------------------------------------------


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Timeout("relay_schedule did not return within the time bound")


def bounded_schedule(halts: Mapping[int, Sequence[Halt]], seconds: float = 5.0) -> Any:
    """relay_schedule's steps, or its Deadlock (returned, not raised); fails past the bound."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return relay_schedule(halts)
    except Deadlock as err:
        return err
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Graph:
    """Per-chip halt lists with names sent once and received anywhere (may be cyclic)."""

    halts: dict[int, list[Halt]]
    unsent: frozenset[str]

    def __repr__(self) -> str:
        lines = [f"Graph(unsent={sorted(self.unsent)})"]
        for c, hs in self.halts.items():
            for p, h in enumerate(hs):
                lines.append(
                    f"  chip {c} pos {p} halt {h.index}: sends {sorted(h.sends)} "
                    f"receives {sorted(h.receives)}"
                )
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@st.composite
def graphs(draw: st.DrawFn, acyclic: bool | None = None, unsent: bool = True) -> Graph:
    """Random halt graphs: N chips (distinct numbers 0..7, in any order), each a start, 0..4
    halts and an end (indices increasing, with gaps); names each sent at one (chip, halt after
    the start), or by nobody; each received by a few (chip, halt before the end), the sending
    chip too. With ``acyclic`` the receives respect a random time line (so no cycles); else
    anything goes."""
    chips = draw(st.lists(st.integers(0, 7), min_size=1, max_size=5, unique=True))
    n = len(chips)
    sizes = [draw(st.integers(2, 6)) for _ in range(n)]
    indices = []
    for size in sizes:
        gaps = draw(st.lists(st.integers(1, 3), min_size=size - 1, max_size=size - 1))
        indices.append([0, *np.cumsum(gaps).tolist()])
    if acyclic is None:
        acyclic = draw(st.booleans())
    # A time line strictly increasing along each chip: with ``acyclic``, a name is only
    # received at a halt whose move out of it comes later than the sending halt.
    time: dict[tuple[int, int], int] = {}
    for c, size in enumerate(sizes):
        ts = sorted(draw(st.lists(st.integers(0, 30), min_size=size, max_size=size)))
        time.update({(c, p): t * 100 + p for p, t in enumerate(ts)})
    sends: dict[tuple[int, int], set[str]] = {}
    receives: dict[tuple[int, int], set[str]] = {}
    never: set[str] = set()
    for k in range(draw(st.integers(0, 10))):
        name = f"t{k}"
        if unsent and draw(st.integers(0, 9)) == 0:
            never.add(name)
            at: tuple[int, int] | None = None
        else:
            c = draw(st.integers(0, n - 1))
            at = (c, draw(st.integers(1, sizes[c] - 1)))
            sends.setdefault(at, set()).add(name)
        for _ in range(draw(st.integers(0, 3))):
            c = draw(st.integers(0, n - 1))
            options = [
                p
                for p in range(sizes[c] - 1)
                if not acyclic or at is None or time[at] < time[(c, p + 1)]
            ]
            if options:
                receives.setdefault((c, draw(st.sampled_from(options))), set()).add(name)
    halts = {
        chips[c]: [
            Halt(
                indices[c][p],
                frozenset(sends.get((c, p), ())),
                frozenset(receives.get((c, p), ())),
            )
            for p in range(sizes[c])
        ]
        for c in range(n)
    }
    return Graph(halts, frozenset(never))


def _needs_unsent(g: Graph) -> bool:
    return any(h.receives & g.unsent for hs in g.halts.values() for h in hs)


@settings(max_examples=700, **SETTINGS)
@given(graphs())
def test_relay_schedule_finishes_or_deadlocks_and_a_finished_relay_is_sound(g: Graph) -> None:
    """Invariant: relay_schedule returns (within a time bound) a schedule or raises Deadlock;
    a schedule reaches every halt once in order, copies each receive from its sender in the
    round the chip leaves the halt, after the sender reached it, and takes as many rounds as
    the dependency graph's longest path (each move at its ASAP level)."""
    result = bounded_schedule(g.halts)
    assert isinstance(result, list | Deadlock), result
    if isinstance(result, list):
        total = sum(len(hs) - 1 for hs in g.halts.values())
        total += sum(len(h.receives) for hs in g.halts.values() for h in hs[:-1])
        assert len(result) == total, (len(result), total)
        check_relay(g.halts, result)


def _where_name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(name)} \(")


@settings(max_examples=700, **SETTINGS)
@given(graphs())
def test_relay_schedule_deadlocks_exactly_on_cycles_and_names_what_each_chip_waits_for(
    g: Graph,
) -> None:
    """Invariant: relay_schedule raises Deadlock exactly when the dependency graph (halt ->
    next halt on a chip; sending halt -> the receiver's move out of its receiving halt) has a
    cycle or a halt receives a name nobody sends; the Deadlock's `where` names every chip — a
    chip that got to its end as finished, a stuck chip by the halt it stands at (its start, or
    halt k) and every name it still waits for, and no name it already has."""
    cyclic = has_cycle(g.halts)
    needs_unsent = _needs_unsent(g)
    result = bounded_schedule(g.halts)
    event(f"cyclic={cyclic}, needs an unsent name={needs_unsent}")
    assert isinstance(result, Deadlock) == (cyclic or needs_unsent), (cyclic, needs_unsent)
    if not isinstance(result, Deadlock):
        return
    assert set(result.where) == set(g.halts), result.where
    level = asap_levels(g.halts)
    senders = sender_of(g.halts)
    for chip, hs in g.halts.items():
        where = result.where[chip]
        p = max(q for q in range(len(hs)) if level[(chip, q)] < math.inf)
        if p == len(hs) - 1:
            assert "finished" in where, (chip, where)
            continue
        assert "finished" not in where, (chip, where)
        assert ("at its start" if p == 0 else f"at halt {hs[p].index}") in where, (chip, where)
        for name in hs[p].receives:
            has_it = name in senders and level[senders[name]] < math.inf
            named = bool(_where_name_pattern(name).search(where))
            assert named != has_it, (chip, name, has_it, where)
        assert where in str(result), (where, str(result))


@settings(max_examples=400, **SETTINGS)
@given(graphs(acyclic=True, unsent=False))
def test_relay_schedule_is_as_fast_as_the_dependency_graph_allows(g: Graph) -> None:
    """Invariant: on an acyclic halt graph where every received name is sent, relay_schedule
    finishes, and its number of rounds equals the longest path of the dependency graph (ASAP
    levels computed independently), every chip moving in the round its level allows."""
    assert not has_cycle(g.halts)
    result = bounded_schedule(g.halts)
    assert isinstance(result, list), result
    levels = asap_levels(g.halts)
    assert rounds(result) == max(map(int, levels.values()))
    check_relay(g.halts, result)


# -- C. a hand-written deadlock --------------------------------------------------------------

CYCLIC = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cycle(%a: tensor<4xf32> {tp.name = "a"}) -> () {
    tp.chip_program on 0 (%a) {
    ^bb0(%a0: tensor<4xf32>):
      %x = tp.link 1 sends() as [] receives ["x"] : () -> (tensor<4xf32, #tp.chip<1>>)
      %y = tp.section "y" on [0] {
        %0 = arith.addf %a0, %a0 : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      tp.link 2 sends(%y) as ["y"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 (%a) {
    ^bb0(%a1: tensor<4xf32>):
      %y = tp.link 1 sends() as [] receives ["y"] : () -> (tensor<4xf32>)
      %x = tp.section "x" on [1] {
        %0 = tp.shard %a1 at #tp.slice<axis = 0, ranges = [(0, 4)], full = [4]>
          : tensor<4xf32> -> tensor<4xf32, #tp.chip<1>>
        tp.yield %0 : tensor<4xf32, #tp.chip<1>>
      } : tensor<4xf32, #tp.chip<1>>
      tp.link 2 sends(%x) as ["x"] receives [] : (tensor<4xf32, #tp.chip<1>>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}
"""


def _steps_in(module: ModuleOp) -> Iterator[Operation]:
    yield from (op for op in module.walk() if isinstance(op, RelayOp))


def test_relay_refuses_a_cyclic_pair_of_chip_programs() -> None:
    """Invariant: chip 0 receives x at link 1 and sends y at link 2 while chip 1 receives y at
    link 1 and sends x at link 2: tp-relay refuses with a [deadlock] diagnostic at a chip
    program, naming each chip, the halt it stands at and the tensor it waits for (and from
    whom), and adds no tp.relay."""
    module = parse(CYCLIC)
    try:
        apply(module, "tp-relay")
    except TpDiagnostic as diag:
        message = diag.message
        assert message.endswith("[deadlock]"), message
        assert isinstance(diag.op, ChipProgramOp), diag.op
        assert "chip 0 stands at halt 1 waiting for x (from chip 1)" in message, message
        assert "chip 1 stands at halt 1 waiting for y (from chip 0)" in message, message
    else:
        raise AssertionError("tp-relay accepted a cyclic pair of chip programs")
    assert not list(_steps_in(module))


def test_relay_accepts_the_pair_once_the_cycle_is_broken() -> None:
    """Invariant (the control for the test above): with chip 1 sending x before it receives y
    (its links swapped), the graph is acyclic and tp-relay emits a relay that runs chip 1 to
    halt 1, copies x to chip 0, then y back to chip 1."""
    text = CYCLIC.replace(
        """      %y = tp.link 1 sends() as [] receives ["y"] : () -> (tensor<4xf32>)
""",
        "",
    ).replace(
        """      tp.link 2 sends(%x) as ["x"] receives [] : (tensor<4xf32, #tp.chip<1>>) -> ()
""",
        """      tp.link 1 sends(%x) as ["x"] receives [] : (tensor<4xf32, #tp.chip<1>>) -> ()
      %y = tp.link 2 sends() as [] receives ["y"] : () -> (tensor<4xf32>)
""",
    )
    module = parse(text)
    apply(module, "tp-relay")
    check_ir(module)
    steps = relay_steps_from_ir(module)
    halts = {p.chip_index: halts_from_ir(p) for p in chip_programs(module)}
    check_relay(halts, steps)
    copies = [(s.tensor, s.src, s.dst) for s in steps if isinstance(s, Copy)]
    assert copies == [("x", 1, 0), ("y", 0, 1)], steps
