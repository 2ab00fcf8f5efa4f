"""Relay mode: per-chip programs under the host's relay, as an event simulation.

Invariant: the relay's steps (the ``tp.relay`` op, or the schedule tp-relay would build) are
played in order. ``run_to`` runs a chip's segment — its sections from the halt it stands at to
the next — once the chip is free and every tensor its halt receives has arrived; each section
takes `section_time`. ``copy`` is made by the host, one copy at a time, once the sender has
reached the halt that sends it: the host's per-copy overhead plus ``latency + bytes /
bandwidth``. This is the seed's model, kept as it was for comparison (`dataflow` drops the
host from the path).
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.calls.chip_runs import ProgramLink, program_links, program_ops
from tp_dialect.analysis.calls.flat_runs import Frame, Runs
from tp_dialect.analysis.rounds import Copy
from tp_dialect.analysis.schedule.programs import check_programs, relay_steps
from tp_dialect.analysis.timing.cost import nbytes
from tp_dialect.machine import Machine
from tp_dialect.ops import SectionOp
from tp_dialect.program_ops import ChipProgramOp, LinkOp
from tp_dialect.runtime.model.core import (
    ModelError,
    chips_of,
    section_slices,
)
from tp_dialect.runtime.model.memory import MemEvent, program_streams
from tp_dialect.runtime.model.report import ModelReport
from tp_dialect.runtime.model.timeline import Flow, Slice, Timeline
from tp_dialect.signature import entry_function

Segment = list[tuple[SectionOp, Frame]]


def _segments(
    program: ChipProgramOp, runs: Runs
) -> tuple[dict[int, Segment], dict[int, tuple[ProgramLink, Frame]]]:
    """A program's sections by the halt they run up to, and its links by halt, each with
    the frame it runs in (a per-chip call's, or the entry's)."""
    halt, segments, links = 0, {}, {}
    current: Segment = []
    by_op = {(link.op, link.call): link for link in program_links(program)}
    for op, call in program_ops(program):
        frame = runs.root if call is None else runs.root.children[call]
        if isinstance(op, LinkOp):
            link = by_op[(op, call)]
            if link.halt != 0:
                segments[link.halt] = current
                current = []
            links[link.halt] = (link, frame)
            halt = link.halt
        elif isinstance(op, SectionOp):
            current.append((op, frame))
    segments[halt + 1] = current  # to the end (tp.finish)
    return segments, links


def simulate_relay(
    module: ModuleOp, machine: Machine, runs: Runs
) -> tuple[ModelReport, Timeline, list[list[MemEvent]]]:
    """The relay-mode step of per-chip programs: its report's time and bytes, the timeline
    (a lane for the host, one per chip), and each chip's memory events in program order.
    A section's cost is computed once however many calls run it."""
    func = entry_function(module)
    n = chips_of(module)
    # Programs that do not fit together, or a relay that does not fit them, are refused at
    # the op at fault before anything is modelled.
    programs = check_programs(func).programs
    if not programs:
        raise ModelError("relay mode needs per-chip programs: run tp-link-points first")
    report = ModelReport(machine, "relay", n)
    timeline = Timeline(["host", *[f"chip {c}" for c in range(n)]], [], [])
    segments: dict[int, dict[int, Segment]] = {}
    link_at: dict[int, dict[int, tuple[ProgramLink, Frame]]] = {}
    for c, program in programs.items():
        segments[c], link_at[c] = _segments(program, runs)
    free = dict.fromkeys(programs, 0.0)
    standing = dict.fromkeys(programs, 0)
    sent_at: dict[str, float] = {}
    sent_bytes: dict[str, int] = {}
    arrived: dict[tuple[str, int], float] = {}
    host_free = 0.0
    costed: dict[SectionOp, list[Slice]] = {}
    for step in relay_steps(func):
        if isinstance(step, Copy):
            if step.tensor not in sent_at:
                raise ModelError(
                    f"the relay copies '{step.tensor}' to chip {step.dst} before chip "
                    f"{step.src} sent it"
                )
            moved = sent_bytes[step.tensor]
            start = max(host_free, sent_at[step.tensor])
            duration = machine.host_copy_overhead + machine.transfer_time(
                moved, step.src, step.dst, n
            )
            host_free = start + duration
            arrived[(step.tensor, step.dst)] = host_free
            report.moved(step.tensor, moved)
            layer = report.layer(step.tensor).layer
            timeline.slices.append(
                Slice(
                    "host", f"copy {step.tensor}", start, duration, "copy", layer, {"bytes": moved}
                )
            )
            timeline.flows.append(
                Flow(
                    step.tensor,
                    f"chip {step.src}",
                    sent_at[step.tensor],
                    f"chip {step.dst}",
                    host_free,
                )
            )
            continue
        c = step.chip
        leaving = link_at[c].get(standing[c])
        t = free[c]
        if leaving is not None:
            for name in leaving[0].receives:
                if (name, c) not in arrived:
                    raise ModelError(
                        f"chip {c} leaves halt {leaving[0].halt} without '{name}': the relay "
                        f"never copied it to chip {c}"
                    )
                t = max(t, arrived[(name, c)])
        for section, frame in segments[c][step.halt]:
            label = runs.label(frame, section)
            layer = report.layer(label).layer
            if section not in costed:  # the same op in every call: costed once
                costed[section] = section_slices(section, [c], label, 0.0, layer, n, machine)
            (piece,) = costed[section]
            timeline.slices.append(replace(piece, name=label, start=t, layer=layer))
            t += piece.duration
        free[c] = t
        standing[c] = step.halt
        arriving = link_at[c].get(step.halt)
        if arriving is not None:
            link, _ = arriving
            for name, value in zip(link.sends, link.op.sent, strict=True):
                sent_at[name] = t
                sent_bytes[name] = nbytes(value.type)
    report.step_time = max(max(free.values()), host_free)
    return report, timeline, program_streams(func, n, runs)
