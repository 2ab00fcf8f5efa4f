"""tp-run: run a tp program on the reference interpreter, binding arguments by name.

``tp-run layer.mlir --weights ckpt.safetensors --inputs in.npz --outputs out.npz [--check]``

Every argument is bound by name (its ``tp.name``, else its SSA name in the text, else
``arg0`` ...) from either file: the checkpoint or the ``.npz`` of inputs, whichever holds it
(both, alike in shape: the inputs' copy). Weights are sliced onto chips through the
manifest as the host would load them; ``--check`` also runs the unsharded program
(regenerated from the module's ``tp.config``, or ``--against FILE``) on the same weights
and inputs and fails above tolerance. ``--storage`` runs the program with in-place updates
overwriting their caches' storage (as a chip would); the program checked against still
runs with value semantics, the reference meaning.

``tp-run layer.mlir --dry-run [--machine M] [--mode phase,relay,dataflow|all]`` models the
step instead (`tp_dialect.runtime.model`). The model runs a program at the stage it is given;
lowering is this tool's: when a mode needs a later stage (sections for sequential and phase,
per-chip programs for relay and dataflow) a copy is lowered first — a source program with
``--allreduce``'s algorithm — and stderr says which passes ran.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from tp_dialect import certificate
from tp_dialect.analysis.machine import Machine, MachineError, machine_from
from tp_dialect.analysis.stats import format_stats, pipeline_stats
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.qwen3 import GenError, Qwen3Config, generate
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.checkpoint import (
    MemorySource,
    SafetensorsSource,
    TensorSource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.model import (
    MODES,
    NEEDS,
    ModelError,
    ModelReport,
    default_mode,
    model,
    stage_of,
)
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.timeline import (
    Timeline,
    combine,
    write_chrome_trace,
    write_timeline_png,
)
from tp_dialect.signature import BindError
from tp_dialect.tools.common import UserError, run_tool, write_atomically
from tp_dialect.tools.source import load_program, parse_module
from tp_dialect.universe import tp_context

ALLREDUCE_CHOICES: tuple[str, ...] = (*AllReduceOp.ALGORITHMS, "auto")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tp-run", description="Run a tp program on numpy.")
    p.add_argument("program", help="the .mlir program (e.g. from tp-gen or tp-opt)")
    w = p.add_mutually_exclusive_group()
    w.add_argument(
        "--weights", help="a .safetensors checkpoint of named tensors (any argument, by name)"
    )
    w.add_argument("--random-weights", type=int, metavar="SEED", help="random weights")
    i = p.add_mutually_exclusive_group()
    i.add_argument("--inputs", help="an .npz of named tensors (any argument, by name)")
    i.add_argument("--random-inputs", type=int, metavar="SEED", help="random inputs and caches")
    p.add_argument("--position", type=int, default=3, help="position for --random-inputs")
    p.add_argument("--outputs", help="write the results by name to this .npz")
    p.add_argument(
        "--check",
        action="store_true",
        help="also run the unsharded program and compare every output",
    )
    p.add_argument("--against", help="the unsharded program to check against (a file)")
    p.add_argument(
        "--storage",
        action="store_true",
        help="storage semantics: an in-place update (a KV cache write) overwrites its storage",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print per-layer sections, phases, transfers and bytes moved",
    )
    m = p.add_argument_group("the multi-RDU model (modelled time, memory, trace)")
    m.add_argument(
        "--machine",
        help="model the step on this machine: a preset (sn40l, "
        "generic) or a JSON file of its fields",
    )
    m.add_argument(
        "--mode",
        help="how the chips are driven: sequential, phase, relay, dataflow, several "
        "comma-separated (side by side), or all (default: from the program's stage)",
    )
    m.add_argument(
        "--allreduce",
        default="fold",
        help="the all-reduce algorithm when a source program is lowered for the model: "
        "fold (default), ring, oneshot, twoshot or auto (per all-reduce, by the machine)",
    )
    m.add_argument("--report", help="write the modelled figures here (JSON)")
    m.add_argument("--trace", help="write a Chrome trace here (opens in Perfetto)")
    m.add_argument("--timeline", help="write a Gantt chart here (PNG)")
    m.add_argument(
        "--dry-run",
        action="store_true",
        help="model time from shapes alone: no weights, no inputs, no numerics",
    )
    p.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of --check")
    p.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance of --check")
    return p


@dataclass(frozen=True)
class Comparison:
    """One output of the checked program against the reference's."""

    name: str
    max_abs: float
    max_rel: float  # max |a - b| / max |b|
    ok: bool


def compare(
    got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], rtol: float, atol: float
) -> list[Comparison]:
    """Every output of ``want`` compared with ``got``: max abs and relative error."""
    rows = []
    for name, ref in want.items():
        if name not in got:
            raise UserError(f"the checked program has no output '{name}'")
        a, b = np.asarray(got[name], np.float64), np.asarray(ref, np.float64)
        if a.shape != b.shape:
            raise UserError(f"output '{name}': shape {list(a.shape)} vs {list(b.shape)}")
        err = float(np.max(np.abs(a - b))) if a.size else 0.0
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        rows.append(
            Comparison(name, err, err / scale if scale else err, err <= atol + rtol * scale)
        )
    return rows


def _source(args: argparse.Namespace, module: ModuleOp) -> TensorSource:
    if args.weights:
        return SafetensorsSource(args.weights)
    if args.random_weights is not None:
        return MemorySource(random_weights(module, args.random_weights))
    return MemorySource({})


def _inputs(args: argparse.Namespace, module: ModuleOp) -> dict[str, np.ndarray]:
    if args.inputs is None:
        if args.random_inputs is None:
            return {}
        return random_inputs(module, args.random_inputs, args.position)
    try:
        with np.load(args.inputs) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as err:
        raise UserError(f"cannot read inputs '{args.inputs}': {err}") from None


def _reference(args: argparse.Namespace, module: ModuleOp) -> ModuleOp:
    ctx = tp_context()
    if args.against:
        return load_program(ctx, args.against)
    if "tp.config" not in module.attributes:
        raise UserError("--check needs --against FILE: the program records no tp.config")
    cfg = Qwen3Config.from_attr(module.attributes["tp.config"])
    reference, _ = parse_module(ctx, generate(cfg.unsharded()), "<unsharded>")
    return reference


def execute(
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
    storage: bool = False,
) -> tuple[dict[str, np.ndarray], float, float]:
    """Bind every argument from ``source`` or ``inputs`` (what ``source`` holds sliced through
    the manifest), run (with ``storage``: under storage semantics); the results, load time
    and run time."""
    t0 = time.perf_counter()
    placement = place_weights(module, source, inputs)
    t1 = time.perf_counter()
    outputs = run_program(module, placement.values, placement.placed, storage)
    return outputs, t1 - t0, time.perf_counter() - t1


def _warn_certificate(path: str, module: ModuleOp) -> None:
    """Say when the shard obligation was never checked, or checked on another program."""
    state = certificate.status(module)
    if state == "missing":
        print(
            f"tp-run: warning: {path} carries no shard-obligation certificate "
            "(run tp-opt --tp-verify on it)",
            file=sys.stderr,
        )
    elif state == "stale":
        print(
            f"tp-run: warning: {path}'s shard-obligation certificate is stale: the program "
            "changed since tp-verify checked it",
            file=sys.stderr,
        )


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


def lowering_for(module: ModuleOp, mode: str, allreduce: str, machine: str) -> list[str]:
    """The passes that bring ``module`` to the stage ``mode`` models (none when it is there
    already); raises UserError when it is past it (per-chip programs cannot go back)."""
    stage = stage_of(module)
    relocate = f"tp-relocate{{allreduce={allreduce}}}"
    if allreduce == "auto":
        relocate = f"tp-relocate{{allreduce=auto machine={machine}}}"
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
) -> dict[str, tuple[ModelReport, Timeline]]:
    """Each of ``modes`` modelled on ``machine``, lowering a copy of ``module`` first when
    the mode needs a later stage (once per distinct lowering; ``say`` is told which)."""
    lowered: dict[tuple[str, ...], ModuleOp] = {}
    out: dict[str, tuple[ModelReport, Timeline]] = {}
    for mode in modes:
        passes = tuple(lowering_for(module, mode, allreduce, machine_spec))
        if passes not in lowered:
            copy = module
            if passes:
                if say is not None:
                    say(f"lowering a copy for {mode} mode: {','.join(passes)}")
                copy = module.clone()
                PassPipeline.parse_spec(TP_PASSES, ",".join(passes)).apply(tp_context(), copy)
            lowered[passes] = copy
        out[mode] = model(lowered[passes], machine, mode)
    return out


def _model(args: argparse.Namespace, module: ModuleOp) -> None:
    """Model the step on the machine in every asked mode; print each summary and write what
    was asked for (several modes: side by side in one report, trace and chart)."""
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
    results = model_modes(module, machine, modes, args.allreduce, spec, say)
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


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    module = load_program(tp_context(), args.program)
    _warn_certificate(args.program, module)
    if args.machine or args.dry_run or args.report or args.trace or args.timeline:
        _model(args, module)
        if args.dry_run:
            return 0
    given = (args.weights, args.random_weights, args.inputs, args.random_inputs)
    if all(g is None for g in given):
        raise UserError(
            "give the arguments: --weights CKPT or --random-weights SEED, and/or "
            "--inputs IN.npz or --random-inputs SEED (or --dry-run)"
        )
    source = _source(args, module)
    inputs = _inputs(args, module)
    outputs, load_s, run_s = execute(module, source, inputs, args.storage)
    chips = module.attributes.get("tp.chips")
    print(
        f"ran {args.program} ({chips.value.data if chips else 1} chip(s)"
        f"{', storage semantics' if args.storage else ''}): "
        f"load {load_s * 1e3:.1f} ms, run {run_s * 1e3:.1f} ms"
    )
    if args.stats:
        print(format_stats(pipeline_stats(module)))
    if args.outputs:
        buffer = io.BytesIO()
        np.savez(buffer, **outputs)
        write_atomically(args.outputs, buffer.getvalue())
        print(f"wrote {len(outputs)} output(s) to {args.outputs}")
    if not (args.check or args.against):
        return 0
    reference = _reference(args, module)
    want, _, _ = execute(reference, source, inputs)
    rows = compare(outputs, want, args.rtol, args.atol)
    width = max(len(r.name) for r in rows)
    print(f"check against the unsharded program (rtol {args.rtol:g}, atol {args.atol:g}):")
    for r in rows:
        verdict = "ok" if r.ok else "FAIL"
        print(f"  {r.name:<{width}}  max abs {r.max_abs:.3e}  max rel {r.max_rel:.3e}  {verdict}")
    return 0 if all(r.ok for r in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success (and a passing check), 1 otherwise, never a traceback."""
    return run_tool(
        "tp-run", _main, argv, (BindError, GenError, MachineError, ModelError, TpDiagnostic)
    )


if __name__ == "__main__":
    sys.exit(main())
