"""tp-run's modelling: which modes, the lowering each needs (of a copy), and the report,
trace and chart of the modelled step."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.machine import Machine, machine_from
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes.universe import lowered as lowered_copy
from tp_dialect.runtime.model import (
    MODES,
    NEEDS,
    ModelReport,
    default_mode,
    model,
    stage_of,
)
from tp_dialect.runtime.model.timeline import (
    Timeline,
    combine,
    write_chrome_trace,
    write_timeline_png,
)
from tp_dialect.tools.common import (
    UserError,
    write_atomically,
)

ALLREDUCE_CHOICES: tuple[str, ...] = (*AllReduceOp.ALGORITHMS, "auto")


def parse_modes(text: str | None) -> list[str]:
    """The modes ``--mode`` names, in the report's order (``all``: every mode; none: an
    empty list, the program's stage decides); raises UserError naming an unknown one."""
    if text is None:
        return []
    asked = [m.strip() for m in text.split(",")]
    if "all" in asked:
        return list(MODES)
    for mode in asked:
        if mode not in MODES:
            raise UserError(
                f"unknown mode '{mode}' in --mode (one of {', '.join(MODES)}, "
                "several comma-separated, or all)"
            )
    return [m for m in MODES if m in asked]


FORMATS: dict[str, tuple[str, str]] = {
    "report": (".json", "the report is JSON"),
    "trace": (".json", "the trace is JSON (Chrome's trace format)"),
    "timeline": (".png", "the chart is a PNG"),
}
"""What each modelling output is written as, and the suffix that says so."""


def check_formats(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output of the model whose file's suffix names another
    format (``--timeline chart.svg`` was written as a PNG): a path without one is taken."""
    for flag, (suffix, what) in FORMATS.items():
        path = getattr(args, flag)
        given = os.path.splitext(path)[1] if path else ""
        if given and given.lower() != suffix:
            raise UserError(f"--{flag} '{path}': {what}; name the file {suffix}")


def lowering_for(module: ModuleOp, mode: str, allreduce: str, machine: str) -> list[str]:
    """The passes that bring ``module`` to the stage ``mode`` models (none when it is there
    already); raises UserError when it is past it (per-chip programs cannot go back)."""
    stage = stage_of(module)
    relocate = f"tp-relocate{{allreduce={allreduce}}}"
    if allreduce == "auto":
        if '"' in machine or "\\" in machine:
            raise UserError(f"--machine '{machine}': a path with a quote or backslash")
        relocate = f'tp-relocate{{allreduce=auto machine="{machine}"}}'
    if NEEDS[mode] == "programs":
        if stage == "programs":
            return []
        head = [relocate, "tp-transfers"] if stage == "source" else []
        return [*head, "tp-link-points"]
    if stage == "programs":
        raise UserError(
            f"{mode} mode needs the sectioned program, not per-chip programs: give the "
            "program before tp-link-points"
        )
    passes = [relocate, "tp-transfers"] if stage == "source" else []
    if mode == "phase" and stage != "phased":
        passes.append("tp-phase")
    return passes


def model_modes(
    module: ModuleOp,
    machine: Machine,
    modes: Sequence[str],
    allreduce: str = "fold",
    machine_spec: str = "sn40l",
    say: Callable[[str], None] | None = None,
    on_copy: Callable[[ModuleOp, ModuleOp], None] | None = None,
) -> dict[str, tuple[ModelReport, Timeline]]:
    """Each of ``modes`` modelled on ``machine``, lowering a copy of ``module`` first when
    the mode needs a later stage (once per distinct lowering; ``say`` is told which,
    ``on_copy`` shown each copy as `lowered` makes it)."""
    lowered: dict[tuple[str, ...], ModuleOp] = {}
    out: dict[str, tuple[ModelReport, Timeline]] = {}
    for mode in modes:
        passes = tuple(lowering_for(module, mode, allreduce, machine_spec))
        if passes not in lowered:
            copy = module
            if passes:
                if say is not None:
                    say(f"lowering a copy for {mode} mode: {','.join(passes)}")
                copy = lowered_copy(module, ",".join(passes), on_copy)
            lowered[passes] = copy
        out[mode] = model(lowered[passes], machine, mode)
    return out


def model_step(
    args: argparse.Namespace,
    module: ModuleOp,
    on_copy: Callable[[ModuleOp, ModuleOp], None] | None = None,
) -> None:
    """Model the step on the machine in every asked mode; print each summary and write what
    was asked for (several modes: side by side in one report, trace and chart). ``on_copy``
    is shown each copy lowered for a mode (`model_modes`)."""
    spec = args.machine or "sn40l"
    machine = machine_from(spec)
    if args.allreduce not in ALLREDUCE_CHOICES:
        raise UserError(
            f"unknown all-reduce algorithm '{args.allreduce}' in --allreduce (one of "
            f"{', '.join(ALLREDUCE_CHOICES)})"
        )
    modes = parse_modes(args.mode)
    if not modes:
        stage = stage_of(module)
        modes = ["sequential"] if stage == "source" else [default_mode(module)]

    def say(text: str) -> None:
        print(f"tp-run: {text}", file=sys.stderr)

    t0 = time.perf_counter()
    results = model_modes(module, machine, modes, args.allreduce, spec, say, on_copy)
    elapsed = time.perf_counter() - t0
    for report, _ in results.values():
        print(report.summary())
    print(f"[modelled in {elapsed:.2f} s]")
    first = next(iter(results.values()))[0]
    for entry in first.memory:
        needed = (
            float(entry["resident_weights_bytes"])
            + float(entry["resident_state_bytes"])
            + float(entry["peak_live_bytes"])
        )
        if not entry["fits"]:
            print(
                f"tp-run: warning: chip {entry['chip']} needs {needed / 1e9:.2f} GB, more "
                f"than its {machine.hbm_bytes / 1e9:.0f} GB",
                file=sys.stderr,
            )
    if args.report:
        if len(results) == 1:
            data: dict[str, object] = first.to_json()
        else:
            data = {
                "machine": machine.to_json(),
                "chips": first.chips,
                "modes": {mode: r.to_json() for mode, (r, _) in results.items()},
            }
        write_atomically(args.report, json.dumps(data, indent=1) + "\n")
    timeline = combine({mode: t for mode, (_, t) in results.items()})
    title = first.summary() if len(results) == 1 else f"{first.chips} x {machine.name}"
    if args.trace:
        write_chrome_trace(timeline, args.trace)
    if args.timeline:
        write_timeline_png(timeline, args.timeline, title)


def per_chip(module: ModuleOp, allreduce: str, say: bool) -> ModuleOp:
    """``module`` as per-chip programs: itself, or a copy lowered to them (``say``: on
    stderr, which passes ran)."""
    return _lowered(module, allreduce, say)


def imported(
    module: ModuleOp, say: bool, on_copy: Callable[[ModuleOp, ModuleOp], None] | None = None
) -> ModuleOp:
    """``module``, or a copy through tp-import-shard when it holds MLIR Shard annotations
    (a program annotated for MLIR's sharding propagation runs as the tp program they state);
    ``on_copy`` is shown the original and the copy (errors located at the original)."""
    if not any(op.dialect_name() == "shard" for op in module.walk()):
        return module
    if say:
        print("tp-run: importing MLIR Shard annotations: tp-import-shard", file=sys.stderr)
    return lowered_copy(module, "tp-import-shard", on_copy)


def _lowered(module: ModuleOp, allreduce: str, say: bool) -> ModuleOp:
    if stage_of(module) == "programs":
        return module
    if allreduce not in AllReduceOp.ALGORITHMS:
        raise UserError(
            f"unknown all-reduce algorithm '{allreduce}' in --allreduce for MPI (one of "
            f"{', '.join(AllReduceOp.ALGORITHMS)})"
        )
    passes = lowering_for(module, "relay", allreduce, "sn40l")
    if say:
        print(f"tp-run: lowering a copy to per-chip programs: {','.join(passes)}", file=sys.stderr)
    return lowered_copy(module, ",".join(passes))
