"""Phase and sequential modes: a sectioned program's statements in lock step.

Invariant: statements run phase by phase — every statement of a phase starts when the phase
does, the phase lasts as long as its longest statement plus the machine's barrier latency
(every chip waits for every chip), and the next phase starts after it. Phases are the
program's ``tp.phase`` attributes (tp-phase's), or tp-phase's analysis when it has none;
*sequential* mode gives every statement a phase of its own, in program order. A section takes
`section_time` on each of its chips; a transfer holds its source and its destination chip for
``latency + bytes / bandwidth`` (hops on a ring). This is the seed's model, kept as it was for
comparison.

Outlined programs (``@decode`` calling ``@layer``): a lowered call runs its callee's
statements (`calls.Runs`): in sequential mode each in turn, in phase mode the callee's phases
in the call's phase, each labelled as the flat program tp-inline makes labels it (layer ``k``'s
``lk_…``). The report, timeline and memory events are the flat program's, float for float.

How a layer called 36 times is not simulated 36 times. In phase mode a call stands alone in
its phase (tp-phase puts it on every chip its caller uses): it starts after a barrier, with
every chip idle and nothing in flight, and the phase model carries nothing from one phase to
the next but the clock. So the callee's schedule — which statements share a phase, how long
each statement and each phase takes — does not depend on when or from where it is called
(the model is invariant under a shift in time): it is computed once per callee (its phase
groups once per function, `Runs.groups`; each statement's cost, kind and FLOPs once per op,
`_figures`), and each call only lays it down from the call's start, adding the same phase
lengths in the same order as the flat program does (floating-point addition is not
associative, so the clock is advanced phase by phase rather than by the callee's total, which
keeps the step time bit for bit the flat program's) and writing its slices under the call's
labels. The memory model needs every call's own events (a call's buffers are its own); they
are the callee's per-statement template (`memory.sectioned_streams`) with the call's frame.
A program with no ``tp.phase`` is phased by tp-phase's analysis over the flat order of its
statements, calls expanded (`Runs.touch`): there the flat analysis may overlap layers, so
nothing is shifted, but every statement is still costed once per op.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tp_dialect.analysis.calls.flat_runs import CallError, Frame, Runs
from tp_dialect.analysis.schedule.phases import phase_of
from tp_dialect.analysis.timing.cost import nbytes, op_cost
from tp_dialect.analysis.touch import SectionTouch, touch
from tp_dialect.machine import Machine
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.runtime.model.core import ModelError, chips_of, section_time
from tp_dialect.runtime.model.memory import MemEvent, sectioned_streams
from tp_dialect.runtime.model.report import ModelReport
from tp_dialect.runtime.model.timeline import Flow, Slice, Timeline
from tp_dialect.signature import entry_function

Statement = tuple[Frame, Operation]


@dataclass(frozen=True)
class _Figures:
    """What one statement costs on the machine, the same at every call of its function: its
    time on each of its chips, its slice kind and arguments, the bytes a transfer moves."""

    duration: float
    kind: str
    args: Mapping[str, float | int | str]
    lanes: tuple[str, ...]  # a section's chips' lanes; a transfer's source and destination
    moved: int = 0


def _figures(op: Operation, machine: Machine, n: int) -> _Figures:
    """`_Figures` of a section (`section_time`, its FLOPs and bytes) or a transfer."""
    if isinstance(op, TransferOp):
        moved = nbytes(op.input.type)
        lanes = (f"chip {op.src}", f"chip {op.dst}")
        return _Figures(
            machine.transfer_time(moved, op.src, op.dst, n),
            "transfer",
            {"bytes": moved},
            lanes,
            moved,
        )
    assert isinstance(op, SectionOp)
    cost = op_cost(op)
    duration, kind = section_time(op, machine, n, cost)
    lanes = tuple(f"chip {c}" for c in op.chip_list)
    return _Figures(duration, kind, {"flops": cost.flops, "bytes": cost.bytes}, lanes)


def _schedule(runs: Runs, n: int, sequential: bool) -> Iterable[list[Statement]]:
    """The phases the statements run in (module docstring), each a list of statements."""
    if sequential:
        return ([s] for s in runs.walk())
    try:
        if runs.phased:
            return runs.phases()
    except CallError as err:
        raise ModelError(str(err)) from None
    stmts = list(runs.walk())
    bases: dict[Operation, SectionTouch] = {}
    touches: list[SectionTouch] = []
    for frame, op in stmts:
        assert isinstance(op, SectionOp | TransferOp)
        if op not in bases:
            bases[op] = touch(op, n)
        touches.append(runs.touch(frame, op, bases[op]))
    by_phase: dict[int, list[Statement]] = {}
    for stmt, p in zip(stmts, phase_of(touches), strict=True):
        by_phase.setdefault(p, []).append(stmt)
    return (by_phase[p] for p in sorted(by_phase))


def simulate_sectioned(
    module: ModuleOp, machine: Machine, sequential: bool = False, runs: Runs | None = None
) -> tuple[ModelReport, Timeline, list[list[MemEvent]]]:
    """The phase-mode (or, with ``sequential``, statement-by-statement) step of a sectioned
    program, lowered calls followed (``runs``: its `Runs`, if already made): its report's
    time and bytes, the timeline, and each chip's memory events in the order the statements
    run."""
    func = entry_function(module)
    n = chips_of(module)
    try:
        runs = runs or Runs(func)
    except CallError as err:
        raise ModelError(str(err)) from None
    for f in runs.functions():
        for op in runs.statements(f):
            if not isinstance(op, SectionOp | TransferOp) and not runs.lowered(op):
                raise ModelError(f"'{op.name}' is not in a section: lower the program first")
    report = ModelReport(machine, "sequential" if sequential else "phase", n)
    timeline = Timeline([f"chip {c}" for c in range(n)], [], [])
    figures: dict[Operation, _Figures] = {}
    order: list[Statement] = []
    t = 0.0
    for phase in _schedule(runs, n, sequential):
        longest = 0.0
        for frame, op in phase:
            order.append((frame, op))
            fig = figures.get(op)
            if fig is None:
                fig = figures[op] = _figures(op, machine, n)
            label = runs.label(frame, op)
            layer = report.layer(label).layer
            if isinstance(op, TransferOp):
                report.moved(label, fig.moved)
                # A transfer holds both chips for its duration (a send and a receive slice);
                # the flow joins them mid-way, so a trace viewer attaches it to both.
                src, dst = fig.lanes
                for lane, what in ((src, "send"), (dst, "recv")):
                    timeline.slices.append(
                        Slice(lane, f"{what} {label}", t, fig.duration, "transfer", layer, fig.args)
                    )
                mid = t + fig.duration / 2
                timeline.flows.append(Flow(label, src, mid, dst, mid))
            else:
                timeline.slices.extend(
                    Slice(lane, label, t, fig.duration, fig.kind, layer, fig.args)
                    for lane in fig.lanes
                )
            longest = max(longest, fig.duration)
        t += longest + machine.barrier_latency  # every chip waits for every chip
    report.step_time = t
    return report, timeline, sectioned_streams(runs, order, n)
