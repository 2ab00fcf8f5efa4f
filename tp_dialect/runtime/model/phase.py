"""Phase and sequential modes: a sectioned program's statements in lock step.

Invariant: statements run phase by phase — every statement of a phase starts when the phase
does, the phase lasts as long as its longest statement plus the machine's barrier latency
(every chip waits for every chip), and the next phase starts after it. Phases are the
program's ``tp.phase`` attributes (tp-phase's), or tp-phase's analysis when it has none;
*sequential* mode gives every statement a phase of its own, in program order. A section takes
`section_time` on each of its chips; a transfer holds its source and its destination chip for
``latency + bytes / bandwidth`` (hops on a ring). This is the seed's model, kept as it was for
comparison.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from tp_dialect.analysis.cost import nbytes
from tp_dialect.analysis.machine import Machine
from tp_dialect.analysis.phases import phase_of
from tp_dialect.analysis.touch import statements, touch
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.runtime.model.core import (
    ModelError,
    chips_of,
    label_of,
    section_slices,
)
from tp_dialect.runtime.model.memory import MemEvent, sectioned_streams
from tp_dialect.runtime.model.report import ModelReport
from tp_dialect.runtime.timeline import Flow, Slice, Timeline
from tp_dialect.signature import entry_function


def simulate_sectioned(
    module: ModuleOp, machine: Machine, sequential: bool = False
) -> tuple[ModelReport, Timeline, list[list[MemEvent]]]:
    """The phase-mode (or, with ``sequential``, statement-by-statement) step of a sectioned
    program: its report's time and bytes, the timeline, and each chip's memory events in
    the order the statements run."""
    func = entry_function(module)
    n = chips_of(module)
    stmts = statements(func)
    for op in stmts:
        if not isinstance(op, SectionOp | TransferOp):
            raise ModelError(f"'{op.name}' is not in a section: lower the program first")
    if sequential:
        phases = list(range(len(stmts)))
    elif all(isinstance(op.attributes.get("tp.phase"), IntegerAttr) for op in stmts):
        phases = [op.attributes["tp.phase"].value.data for op in stmts]  # type: ignore[union-attr]
    else:
        phases = phase_of([touch(op, n) for op in stmts])  # type: ignore[arg-type]
    report = ModelReport(machine, "sequential" if sequential else "phase", n)
    timeline = Timeline([f"chip {c}" for c in range(n)], [], [])
    by_phase: dict[int, list[int]] = {}
    for i, p in enumerate(phases):
        by_phase.setdefault(p, []).append(i)
    order = [stmts[i] for p in sorted(by_phase) for i in by_phase[p]]
    t = 0.0
    for p in sorted(by_phase):
        longest = 0.0
        for i in by_phase[p]:
            op = stmts[i]
            label = label_of(op)
            layer = report.layer(label).layer
            if isinstance(op, TransferOp):
                moved = nbytes(op.input.type)
                duration = machine.transfer_time(moved, op.src, op.dst, n)
                report.moved(label, moved)
                # A transfer holds both chips for its duration (a send and a receive slice);
                # the flow joins them mid-way, so a trace viewer attaches it to both.
                for lane, what in ((op.src, "send"), (op.dst, "recv")):
                    timeline.slices.append(
                        Slice(
                            f"chip {lane}",
                            f"{what} {label}",
                            t,
                            duration,
                            "transfer",
                            layer,
                            {"bytes": moved},
                        )
                    )
                mid = t + duration / 2
                timeline.flows.append(Flow(label, f"chip {op.src}", mid, f"chip {op.dst}", mid))
            else:
                assert isinstance(op, SectionOp)
                pieces = section_slices(op, op.chip_list, label, t, layer, n, machine)
                timeline.slices.extend(pieces)
                duration = pieces[0].duration
            longest = max(longest, duration)
        t += longest + machine.barrier_latency  # every chip waits for every chip
    report.step_time = t
    return report, timeline, sectioned_streams(func, order, n)
