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
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg

from tp_dialect import certificate
from tp_dialect.analysis.machine import Machine, MachineError, machine_from
from tp_dialect.analysis.stats import format_stats, pipeline_stats
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.models import unsharded_text
from tp_dialect.frontend.qwen3 import GenError
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes.universe import lowered as lowered_copy
from tp_dialect.runtime import mpi_exec, progress
from tp_dialect.runtime.checkpoint import (
    CASTS,
    MemorySource,
    SafetensorsSource,
    TensorSource,
    check_source,
    conform_inputs,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.launch import find_mpiexec, rank_env, run_bounded
from tp_dialect.runtime.model import (
    MODES,
    NEEDS,
    ModelError,
    ModelReport,
    default_mode,
    model,
    stage_of,
)
from tp_dialect.runtime.progress import reporting
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.timeline import (
    Timeline,
    combine,
    write_chrome_trace,
    write_timeline_png,
)
from tp_dialect.signature import BindError
from tp_dialect.tools.common import (
    LocatedError,
    UserError,
    at_least,
    check_writable,
    run_tool,
    write_atomically,
)
from tp_dialect.tools.source import load_program, load_program_mapped, located, parse_module
from tp_dialect.universe import tp_context

ALLREDUCE_CHOICES: tuple[str, ...] = (*AllReduceOp.ALGORITHMS, "auto")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tp-run", description="Run a tp program on numpy.")
    p.add_argument("program", help="the .mlir program (e.g. from tp-gen or tp-opt)")
    w = p.add_mutually_exclusive_group()
    w.add_argument(
        "--weights", help="a .safetensors checkpoint of named tensors (any argument, by name)"
    )
    w.add_argument("--random-weights", type=at_least(0, int), metavar="SEED", help="random weights")
    i = p.add_mutually_exclusive_group()
    i.add_argument("--inputs", help="an .npz of named tensors (any argument, by name)")
    i.add_argument(
        "--random-inputs",
        type=at_least(0, int),
        metavar="SEED",
        help="random inputs and caches",
    )
    p.add_argument(
        "--position", type=at_least(0, int), default=3, help="position for --random-inputs"
    )
    p.add_argument(
        "--cast",
        choices=CASTS,
        default="safe",
        help="a tensor whose dtype is not its argument's: no: refused; safe (default): "
        "converted only when exact (bf16 to f32); same_kind: converted, rounding (f64 to "
        "f32), said on stderr. A float never becomes an integer",
    )
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
    r = p.add_argument_group("several processes (MPI: one rank per chip)")
    r.add_argument(
        "--mpi",
        type=int,
        metavar="N",
        help="start N ranks (one per chip) with the installed mpiexec and run on them",
    )
    r.add_argument(
        "--backend",
        choices=("interp", "mpi"),
        default="interp",
        help="interp (default): one process; mpi: this process is one rank of an MPI world "
        "(mpiexec -n N tp-run PROGRAM --backend mpi ...)",
    )
    r.add_argument(
        "--relay",
        choices=mpi_exec.RELAYS,
        default="direct",
        help="on MPI: direct (default): a chip sends each buffer straight to its receivers; "
        "host: one more rank (the host) performs the relay's copies",
    )
    r.add_argument(
        "--timeout",
        type=at_least(0, float, strict=True),
        default=600.0,
        metavar="SECONDS",
        help="with --mpi: stop the ranks after this long (default 600)",
    )
    p.add_argument(
        "--rtol", type=at_least(0, float), default=1e-4, help="relative tolerance of --check"
    )
    p.add_argument(
        "--atol", type=at_least(0, float), default=1e-5, help="absolute tolerance of --check"
    )
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
    """The weights asked for, their dtypes checked against the ports (``--cast``)."""
    source: TensorSource = MemorySource({})
    if args.weights:
        source = SafetensorsSource(args.weights)
    elif args.random_weights is not None:
        source = MemorySource(random_weights(module, args.random_weights))
    _note(check_source(module, source, args.cast))
    return source


def _inputs(
    args: argparse.Namespace, module: ModuleOp, source: TensorSource | None = None
) -> dict[str, np.ndarray]:
    """The inputs asked for, each checked against its port (shape; dtype by ``--cast``)
    and against ``source``'s copy, if it has one."""
    if args.inputs is None:
        if args.random_inputs is None:
            return {}
        return random_inputs(module, args.random_inputs, args.position)
    given, notes = conform_inputs(module, read_npz(args.inputs), args.cast, source)
    _note(notes)
    return given


def read_npz(path: str) -> dict[str, np.ndarray]:
    """The named arrays of the ``.npz`` at ``path``, read whole; a UserError naming the file
    when it is not one (a lone ``.npy``, a truncated or damaged archive, pickled objects)."""
    try:
        data = np.load(path, allow_pickle=False)
    except OSError as err:
        raise UserError(f"cannot read inputs '{path}': {err.strerror or err}") from None
    except Exception as err:  # numpy's reader raises what its format parsers raise
        raise UserError(f"cannot read inputs '{path}': not an .npz of arrays ({err})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UserError(
            f"cannot read inputs '{path}': a single array (.npy); give an .npz of named "
            "arrays (numpy.savez)"
        )
    try:
        with data:
            return {k: data[k] for k in data.files}
    except Exception as err:  # a damaged member: zipfile, zlib and the .npy parser's errors
        raise UserError(f"cannot read inputs '{path}': a damaged .npz ({err})") from None


def _note(notes: Sequence[str]) -> None:
    for line in notes:
        print(f"tp-run: note: {line}", file=sys.stderr)


def _reference(args: argparse.Namespace, module: ModuleOp) -> ModuleOp:
    ctx = tp_context()
    if args.against:
        return load_program(ctx, args.against)
    if "tp.config" not in module.attributes:
        raise UserError("--check needs --against FILE: the program records no tp.config")
    reference, _ = parse_module(ctx, unsharded_text(module.attributes["tp.config"]), "<unsharded>")
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
    total_ops = sum(isinstance(op, linalg.GenericOp) for op in module.walk())
    with reporting(sys.stderr, total_ops):  # on a terminal, after 2 s: bytes, ops run
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
                copy = lowered_copy(module, ",".join(passes))
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
    if args.mpi is not None:
        return _launch(args, list(sys.argv[1:] if argv is None else argv))
    if args.backend == "mpi":
        return _main_mpi(args)
    module, source_map = load_program_mapped(tp_context(), args.program)
    check_writable(args.outputs, args.report, args.trace, args.timeline)
    try:
        return _run(args, module)
    except TpDiagnostic as err:  # a refusal at an op (say, a slice out of range): there
        where = source_map.locate(err.op)
        raise LocatedError(located(args.program, where, err.message)) from None


def _run(args: argparse.Namespace, module: ModuleOp) -> int:
    """Model and/or run ``module`` as ``args`` ask: the exit code."""
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
    inputs = _inputs(args, module, source)
    outputs, load_s, run_s = execute(module, source, inputs, args.storage)
    chips = module.attributes.get("tp.chips")
    print(
        f"ran {args.program} ({chips.value.data if chips else 1} chip(s)"
        f"{', storage semantics' if args.storage else ''}): "
        f"load {load_s * 1e3:.1f} ms, run {run_s * 1e3:.1f} ms"
    )
    if args.stats:
        print(format_stats(pipeline_stats(module)))
    _write_outputs(args, outputs)
    return _check(args, module, source, inputs, outputs)


def _write_outputs(args: argparse.Namespace, outputs: Mapping[str, np.ndarray]) -> None:
    """``--outputs``: the results by name, written whole or not at all."""
    if args.outputs:
        buffer = io.BytesIO()
        np.savez(buffer, **outputs)
        write_atomically(args.outputs, buffer.getvalue())
        print(f"wrote {len(outputs)} output(s) to {args.outputs}")


def _check(
    args: argparse.Namespace,
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
) -> int:
    """``--check``/``--against``: 0 when every output is within tolerance of the unsharded
    program's (run here on the same weights and inputs), 1 otherwise; 0 when not asked."""
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
    failed = [r.name for r in rows if not r.ok]
    if failed:
        print(
            f"tp-run: error: check failed: {', '.join(failed)} beyond tolerance of the "
            "unsharded program",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _strip_mpi(argv: list[str]) -> list[str]:
    """``argv`` without ``--mpi N`` / ``--mpi=N`` (the ranks must not launch ranks)."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--mpi":
            skip = True
        elif not a.startswith("--mpi="):
            out.append(a)
    return out


def _mpiexec() -> str:
    """The mpiexec beside this Python (the ``mpich`` wheel's), else one on PATH."""
    found = find_mpiexec()
    if found is None:
        raise UserError("cannot run on MPI: no mpiexec (install an MPI, e.g. pip install mpich)")
    return found


def _launch(args: argparse.Namespace, argv: list[str]) -> int:
    """``--mpi N``: this command again under ``mpiexec -n N`` (one more rank for
    ``--relay host``) with ``--backend mpi``, bounded by ``--timeout``; the ranks' output
    passed on, their errors as one line."""
    if args.mpi < 1:
        raise UserError(f"--mpi {args.mpi}: give at least one rank")
    if args.backend == "mpi":
        raise UserError("--mpi starts its own ranks: give --mpi N or --backend mpi, not both")
    _check_mpi_flags(args, "--mpi")
    mpi_exec.load_mpi()
    ranks = args.mpi + (args.relay == "host")
    cmd = [_mpiexec(), "-n", str(ranks), sys.executable, "-m", "tp_dialect.tools.tp_run"]
    cmd += [*_strip_mpi(argv), "--backend", "mpi"]
    with tempfile.TemporaryDirectory(prefix="tp-mpi-") as pids:
        env = {**rank_env(ranks), mpi_exec.PID_DIR_ENV: pids}
        # The ranks' stderr is a pipe held until they end: they report progress to files
        # here and this process draws it, on its own stderr, only if the user sees that.
        for var in (progress.DIR_ENV, progress.FORCE_ENV):
            env.pop(var, None)
        watch = progress.shows(sys.stderr)
        reports = os.path.join(pids, "progress")
        if watch:
            os.mkdir(reports)
            env[progress.DIR_ENV] = reports
        try:
            with progress.watching(sys.stderr, reports, ranks) as poll:
                proc = run_bounded(cmd, env, args.timeout, poll if watch else None)
        except subprocess.TimeoutExpired:
            raise UserError(
                f"the {ranks} MPI rank(s) did not finish within {args.timeout:g} s: stopped them"
            ) from None
        out, err = proc.stdout, proc.stderr
        died = _who_died(out + err, pids, args.mpi if args.relay == "host" else None)
    if proc.returncode != 0:  # mpiexec's own banner about a dead rank: said below in a line
        out = "".join(line for line in out.splitlines(True) if not _HYDRA.match(line))
    sys.stdout.write(out)
    said = rank_lines(err)
    errors = [line for line in said if "error:" in line]
    for line in said:
        if "error:" not in line:
            print(line, file=sys.stderr)
    if errors:
        print(errors[0], file=sys.stderr)
    if proc.returncode != 0:
        if not errors:
            print(
                f"tp-run: error: {died or 'a rank ended without saying why'}: the MPI run "
                f"stopped (mpiexec exit code {proc.returncode})",
                file=sys.stderr,
            )
        return 1
    return 0


def rank_lines(err: str) -> list[str]:
    """The ranks' own ``tp-run:`` lines in ``err``, each once, in order. mpiexec forwards the
    ranks' stderr in whatever pieces it reads, so two ranks' lines can run together: each
    ``tp-run:`` starts a line of its own."""
    err = re.sub(r"(?<=[^\n])(?=tp-run: )", "\n", err)
    return [line for line in dict.fromkeys(err.splitlines()) if line.startswith("tp-run:")]


_HYDRA = re.compile(
    r"^(=+|=   .*|YOUR APPLICATION TERMINATED.*|This typically refers.*|Please see the FAQ.*|\s*)$"
)


def _who_died(err: str, pids: str, host_rank: int | None) -> str | None:
    """Which rank mpiexec reports dead in ``err`` and how ("rank 1 (chip 1) died: Killed
    (signal 9)"), the rank found through the pid files in ``pids``; None when it says none."""
    found = re.search(r"PID (\d+) RUNNING AT", err)
    if found is None:
        return None
    how = re.search(r"EXIT STRING: (.+)", err)
    reason = how.group(1).strip() if how else "it ended abnormally"
    rank = mpi_exec.rank_of_pid(pids, int(found.group(1)))
    if rank is None:
        return f"process {found.group(1)} died: {reason}"
    chip = "the host" if rank == host_rank else f"chip {rank}"
    return f"rank {rank} ({chip}) died: {reason}"


def _check_mpi_flags(args: argparse.Namespace, how: str) -> None:
    """Refuse, before any rank starts, flags a run on MPI ranks cannot take (``how``: the
    flag that asked for MPI, named in the error)."""
    if args.machine or args.dry_run or args.report or args.trace or args.timeline:
        raise UserError(f"{how} runs the program: model it without {how}")
    given = (args.weights, args.random_weights, args.inputs, args.random_inputs)
    if all(g is None for g in given):
        raise UserError(
            "give the arguments: --weights CKPT or --random-weights SEED, and/or "
            "--inputs IN.npz or --random-inputs SEED"
        )


def _main_mpi(args: argparse.Namespace) -> int:
    """``--backend mpi``: this process is one rank. Rank 0 prints, writes ``--outputs`` and
    checks; an error on one rank is said by it (naming it) and aborts the world."""
    mpi = mpi_exec.load_mpi()
    comm = mpi.COMM_WORLD
    rank = comm.Get_rank()
    mpi_exec.record_rank(rank)
    _check_mpi_flags(args, "--backend mpi")
    try:
        module = load_program(tp_context(), args.program)
        if rank == 0:
            _warn_certificate(args.program, module)
        runnable = _per_chip(module, args.allreduce, rank == 0)
        mpi_exec.check_world(runnable, comm.Get_size(), args.relay)
    except Exception as err:  # alike on every rank: one says it, none aborts
        if rank != 0:
            return 1
        raise err from None
    t0 = time.perf_counter()
    source: TensorSource | None = None

    given: Mapping[str, np.ndarray] | None = None

    def open_source() -> TensorSource:
        nonlocal source
        source = _source(args, module)
        return source

    def read_inputs() -> Mapping[str, np.ndarray]:  # rank 0 only; --check reuses them
        nonlocal given
        given = _inputs(args, module)
        return given

    try:
        with progress.rank_reporting(rank, mpi_exec.linalg_ops(runnable, rank), sys.stderr):
            run = mpi_exec.run_mpi(
                runnable,
                open_source,
                read_inputs,
                args.storage,
                args.relay,
                comm,
            )
    except BaseException as err:
        chip = "" if args.relay == "host" and rank == comm.Get_size() - 1 else f" (chip {rank})"
        text = str(err) or type(err).__name__
        print(f"tp-run: error: rank {rank}{chip}: {text}", file=sys.stderr, flush=True)
        mpi_exec.abort(comm, 1)
        return 1
    if run is None:
        return 0
    elapsed = time.perf_counter() - t0
    chips = comm.Get_size() - (args.relay == "host")
    print(
        f"ran {args.program} on {comm.Get_size()} MPI rank(s) ({chips} chip(s), relay "
        f"{args.relay}{', storage semantics' if args.storage else ''}): {elapsed * 1e3:.1f} ms"
    )
    if args.stats:
        print(mpi_exec.format_rank_stats(run.stats))
    _write_outputs(args, run.outputs)
    if not (args.check or args.against):
        return 0
    assert given is not None  # rank 0 read them
    return _check(args, module, source or _source(args, module), given, run.outputs)


def _per_chip(module: ModuleOp, allreduce: str, say: bool) -> ModuleOp:
    """``module`` as per-chip programs: itself, or a copy lowered to them (``say``: on
    stderr, which passes ran)."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success (and a passing check), 1 otherwise, never a traceback."""
    return run_tool(
        "tp-run",
        _main,
        argv,
        (BindError, GenError, MachineError, ModelError, TpDiagnostic, mpi_exec.MpiError),
    )


if __name__ == "__main__":
    sys.exit(main())
