"""Figures of a sectioned program, per layer: sections, phases, transfers, bytes moved.

Statements are attributed to a layer by their label's ``l{i}_`` prefix (as tp-gen names
them; a transfer by the value it moves); anything else is the prologue.

An outlined program (``@decode`` calling ``@layer`` once a layer) gives the rows of the flat
program tp-inline makes of it: each lowered call counts its callee's statements under the
call's labels (`tp_dialect.analysis.calls.flat_runs.Runs`: layer k's ``lk_…``), and a phased
program's phases are numbered as the flat program numbers them (each call's phase replaced by
its callee's, in order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation

from tp_dialect.analysis.calls.chip_runs import (
    expanded_label,
    program_links,
    program_ops,
    relay_steps_of,
)
from tp_dialect.analysis.calls.flat_runs import CallError, Frame, Runs
from tp_dialect.analysis.rounds import Copy
from tp_dialect.analysis.touch import statements
from tp_dialect.linalg_kinds import nbytes
from tp_dialect.names import layer_of, value_name
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.program_ops import ChipProgramOp, LinkOp, RelayOp
from tp_dialect.signature import entry_function


@dataclass
class LayerStats:
    """One layer's (or the prologue's) share of the program."""

    layer: str
    sections: int = 0
    transfers: int = 0
    bytes_moved: int = 0
    phases: set[int] = field(default_factory=set[int])
    link_points: int = 0  # tp.link ops, over every chip's program
    rounds: set[int] = field(default_factory=set[int])  # relay rounds copying its tensors


def pipeline_stats(module: ModuleOp) -> list[LayerStats]:
    """Per-layer figures of ``module``'s entry function, prologue first, layers in order.

    Works at every stage: sectioned (sections, phases, transfers, bytes), and split into
    per-chip programs (sections of every program, link points, relay rounds)."""
    rows: dict[str, LayerStats] = {}

    def row(name: str) -> LayerStats:
        key = layer_of(name)
        return rows.setdefault(key, LayerStats(key))

    func = entry_function(module)
    for op in func.body.block.ops:
        if isinstance(op, ChipProgramOp):
            # Through its calls to per-chip functions: each call's sections and links under
            # its tag (``l_q`` in layer 3's call counts as ``l3_q``).
            links = {(link.op, link.call): link for link in program_links(op)}
            for inner, call in program_ops(op):
                if isinstance(inner, SectionOp):
                    label = inner.label.data if inner.label else ""
                    row(expanded_label(label, call)).sections += 1
                elif isinstance(inner, LinkOp):
                    link = links[(inner, call)]
                    names = link.sends + link.receives
                    row(names[0] if names else "").link_points += 1
                    # a transfer is counted once, where it is received
                    for name, value in zip(link.receives, inner.received, strict=True):
                        r = row(name)
                        r.transfers += 1
                        r.bytes_moved += nbytes(value.type)
        elif isinstance(op, RelayOp):
            for step, _ in relay_steps_of(op):
                if isinstance(step, Copy):
                    row(step.tensor).rounds.add(step.round)
    try:
        runs: Runs | None = Runs(func)
    except CallError:  # recursion (the passes refuse it): the entry's own statements
        runs = None
    stmts = list(runs.walk()) if runs else [(None, op) for op in statements(func)]
    numbers = _phase_numbers(runs)
    for frame, op in stmts:
        if not isinstance(op, SectionOp | TransferOp):
            continue
        if runs is not None and frame is not None:
            r = row(runs.label(frame, op))
        elif isinstance(op, TransferOp):
            r = row(value_name(op.input))
        else:
            r = row(op.label.data if op.label else "")
        if isinstance(op, SectionOp):
            r.sections += 1
        else:
            r.transfers += 1
            r.bytes_moved += nbytes(op.input.type)
        if numbers is not None:
            r.phases.add(numbers[frame, op])  # type: ignore[index]
        elif isinstance(phase := op.attributes.get("tp.phase"), IntegerAttr):
            r.phases.add(phase.value.data)
    layers = sorted((k for k in rows if k != "prologue"), key=lambda k: int(k.split()[1]))
    return [rows[k] for k in (["prologue"] if "prologue" in rows else []) + layers]


def _phase_numbers(runs: Runs | None) -> dict[tuple[Frame, Operation], int] | None:
    """An outlined phased program's statements numbered by phase as its flat program is:
    the phases in order, each call's phase replaced by its callee's (None for a flat
    program, whose ``tp.phase`` attributes are its numbers, or one not wholly phased)."""
    if runs is None or runs.flat:
        return None
    try:
        if not runs.phased:
            return None
        return {stmt: k for k, phase in enumerate(runs.phases()) for stmt in phase}
    except CallError:  # a call sharing its phase: each statement's own number
        return None


def format_stats(rows: list[LayerStats]) -> str:
    """A small table of the figures (columns a stage does not have are left out)."""
    linked = any(r.link_points for r in rows)
    head = f"{'':10} {'sections':>8} {'phases':>7} {'transfers':>9} {'bytes':>10}"
    if linked:
        head += f" {'link points':>11} {'relay rounds':>12}"
    lines = [head]
    for r in rows:
        line = (
            f"{r.layer:10} {r.sections:8d} {len(r.phases):7d} {r.transfers:9d} {r.bytes_moved:10d}"
        )
        if linked:
            line += f" {r.link_points:11d} {len(r.rounds):12d}"
        lines.append(line)
    return "\n".join(lines)
