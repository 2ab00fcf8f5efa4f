"""tp-run on MPI ranks: ``--mpi N`` starts the ranks (the launcher), ``--backend mpi`` is one
rank (chip programs run by `tp_dialect.runtime.mpi_exec`)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.runtime import mpi_exec, progress
from tp_dialect.runtime.checkpoint import (
    TensorSource,
    place_weights,
)
from tp_dialect.runtime.host_memory import check_fits, run_needs
from tp_dialect.runtime.iree_exec import TARGET
from tp_dialect.runtime.iree_mpi import run_mpi_iree
from tp_dialect.runtime.launch import find_mpiexec, rank_env, run_bounded
from tp_dialect.runtime.spmd import CommWorld, SpmdError, is_spmd, run_rank
from tp_dialect.signature import entry_function
from tp_dialect.tools.common import (
    UserError,
)
from tp_dialect.tools.run_io import (
    check_outputs,
    check_sources,
    inputs_of,
    source_of,
    warn_certificate,
    write_outputs,
)
from tp_dialect.tools.run_iree import iree_cache, warn_unwritable
from tp_dialect.tools.run_model import imported, per_chip
from tp_dialect.tools.source import load_program
from tp_dialect.universe import tp_context


def strip_mpi(argv: list[str]) -> list[str]:
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


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """``--mpi N``: this command again under ``mpiexec -n N`` (one more rank for
    ``--relay host``) with ``--backend mpi`` (and ``--engine iree`` for ``--backend
    iree``), bounded by ``--timeout``; the ranks' output passed on, their errors as one
    line. N is checked against the program's chips before any rank starts."""
    if args.mpi < 1:
        raise UserError(f"--mpi {args.mpi}: give at least one rank")
    if args.backend == "mpi":
        raise UserError("--mpi starts its own ranks: give --mpi N or --backend mpi, not both")
    check_mpi_flags(args, "--mpi")
    mpi_exec.load_mpi()
    mpiexec = _mpiexec()
    # N is the program's chip count, checked here: no rank starts for a world that cannot
    # run it (the ranks check it again, as they do under a user's own mpiexec).
    module = imported(load_program(tp_context(), args.program), False)
    chips = mpi_exec.program_chips(module)
    if args.mpi != chips:
        raise UserError(
            f"--mpi {args.mpi} does not fit the program: it has {chips} chip(s), one rank "
            f"each: give --mpi {chips}"
        )
    spmd = is_spmd(entry_function(module))
    if spmd:
        _check_spmd_flags(args)
    ranks = args.mpi + (args.relay == "host")
    # The ranks share this host's memory and together hold at least what one process would;
    # an SPMD module's ranks each hold every argument.
    random = (args.random_weights is not None, args.random_inputs is not None)
    needs = run_needs(module, args.storage, *random)
    if spmd:
        needs = replace(needs, arguments=needs.arguments * ranks, copies=needs.copies * ranks)
    check_fits(needs, f"running {args.program} on {ranks} rank(s)")
    cmd = [sys.executable, "-m", "tp_dialect.tools.tp_run", *strip_mpi(argv), "--backend", "mpi"]
    cmd += ["--engine", "iree"] if args.backend == "iree" else []
    with tempfile.TemporaryDirectory(prefix="tp-mpi-") as pids:
        cmd = mpi_exec.guarded(ranks, cmd, pids, mpiexec)
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
        died = mpi_exec.first_death(pids, args.mpi if args.relay == "host" else None)
        recorded = mpi_exec.recorded_errors(pids)
    sys.stdout.write(without_banner(out, proc.returncode))
    said = rank_lines(err)
    errors = [line for line in said if "error:" in line] or recorded
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


def rank_lines(err: str, tool: str = "tp-run") -> list[str]:
    """The ranks' own ``tool:`` lines in ``err``, each once, in order. mpiexec forwards the
    ranks' stderr in whatever pieces it reads, so two ranks' lines can run together: each
    ``tool:`` starts a line of its own."""
    err = re.sub(rf"(?<=[^\n])(?={re.escape(tool)}: )", "\n", err)
    return [line for line in dict.fromkeys(err.splitlines()) if line.startswith(f"{tool}:")]


_HYDRA = re.compile(
    r"^(=+|=   .*|YOUR APPLICATION TERMINATED.*|This typically refers.*|Please see the FAQ.*|\s*)$"
)


def without_banner(out: str, returncode: int) -> str:
    """The ranks' standard output ``out`` without mpiexec's banner about a dead rank (the
    launcher says which rank died in one line of its own; the banner names a guard)."""
    if returncode == 0:
        return out
    return "".join(line for line in out.splitlines(True) if not _HYDRA.match(line))


def _say_and_abort(comm: Any, line: str) -> None:
    """This rank's error ``line`` said (on stderr, and for the launcher in a file, which
    outlives the world's teardown), then every rank ended."""
    print(line, file=sys.stderr, flush=True)
    mpi_exec.record_error(comm.Get_rank(), line)
    mpi_exec.abort(comm, 1)


def check_mpi_flags(args: argparse.Namespace, how: str) -> None:
    """Refuse, before any rank starts, flags a run on MPI ranks cannot take (``how``: the
    flag that asked for MPI, named in the error)."""
    if args.machine or args.dry_run or args.report or args.trace or args.timeline:
        raise UserError(f"{how} runs the program: model it without {how}")
    if args.program == "-":
        raise UserError(f"{how}: every rank reads the program: give a file, not - (stdin)")
    given = (args.weights, args.random_weights, args.inputs, args.random_inputs)
    if all(g is None for g in given):
        raise UserError(
            "give the arguments: --weights CKPT or --random-weights SEED, and/or "
            "--inputs IN.npz or --random-inputs SEED"
        )


def main_mpi(args: argparse.Namespace) -> int:
    """``--backend mpi``: this process is one rank. Rank 0 prints, writes ``--outputs`` and
    checks; an error on one rank is said by it (naming it) and aborts the world."""
    mpi = mpi_exec.load_mpi()
    comm = mpi.COMM_WORLD
    rank = comm.Get_rank()
    check_mpi_flags(args, "--backend mpi")
    iree = args.engine == "iree"
    try:
        module = imported(load_program(tp_context(), args.program), rank == 0)
        if rank == 0:
            warn_certificate(args.program, module)
        if is_spmd(entry_function(module)):
            return _main_spmd(args, module, comm)
        runnable = per_chip(module, args.allreduce, rank == 0)
        mpi_exec.check_world(runnable, comm.Get_size(), args.relay)
    except Exception as err:  # alike on every rank: one says it, none aborts
        if rank != 0:
            return 1
        raise err from None
    t0 = time.perf_counter()
    source: TensorSource | None = None

    given: Mapping[str, np.ndarray] | None = None

    def open_source(given: Mapping[str, np.ndarray]) -> TensorSource:
        nonlocal source
        source = source_of(args, module)
        check_sources(args, module, source, given, say=rank == 0)  # before any rank loads
        return source

    def read_inputs() -> Mapping[str, np.ndarray]:  # rank 0 only; --check reuses them
        nonlocal given
        given = inputs_of(args, module)
        return given

    try:
        # IREE's compiled code counts no ops: its ranks report the bytes they load
        ops = 0 if iree else mpi_exec.linalg_ops(runnable, rank)
        with progress.rank_reporting(rank, ops, sys.stderr):
            if iree:
                cache = iree_cache(args)
                run = run_mpi_iree(runnable, open_source, read_inputs, comm, args.cast, cache)
                if rank == 0:
                    warn_unwritable(cache)
            else:
                run = mpi_exec.run_mpi(
                    runnable,
                    open_source,
                    read_inputs,
                    args.storage,
                    args.relay,
                    comm,
                    args.cast,
                )
    except BaseException as err:
        chip = "" if args.relay == "host" and rank == comm.Get_size() - 1 else f" (chip {rank})"
        text = str(err) or type(err).__name__
        _say_and_abort(comm, f"tp-run: error: rank {rank}{chip}: {text}")
        return 1
    if run is None:
        return 0
    elapsed = time.perf_counter() - t0
    chips = comm.Get_size() - (args.relay == "host")
    print(
        f"ran {args.program} on {comm.Get_size()} MPI rank(s) ({chips} chip(s), relay "
        f"{args.relay}{', storage semantics' if args.storage else ''}"
        f"{f', IREE {TARGET}' if iree else ''}): {elapsed * 1e3:.1f} ms"
    )
    if args.stats:
        print(mpi_exec.format_rank_stats(run.stats))
    write_outputs(args, run.outputs)
    if not (args.check or args.against):
        return 0
    assert given is not None  # rank 0 read them
    return check_outputs(args, module, source or source_of(args, module), given, run.outputs)


def _main_spmd(args: argparse.Namespace, module: ModuleOp, comm: Any) -> int:
    """An SPMD module over mpi (tp-to-mpi's) on these ranks: each rank reads the inputs
    (the same, as they are seeded or files) and runs the function, its ``mpi`` ops over MPI
    itself; rank 0 prints, writes ``--outputs`` and checks."""
    rank, size = comm.Get_rank(), comm.Get_size()
    _check_spmd_flags(args)
    chips = mpi_exec.program_chips(module)
    if size != chips:  # alike on every rank, before anything is read
        raise UserError(
            f"the SPMD module runs on {chips} rank(s), one a chip: this world has {size}"
        )
    t0 = time.perf_counter()
    try:
        source = source_of(args, module)
        given = inputs_of(args, module)
        check_sources(args, module, source, given, say=rank == 0)
        placement = place_weights(module, source, given, casting=args.cast)
        outputs = run_rank(
            module, placement.values, rank, CommWorld(comm), args.storage, placement.placed
        )
    except BaseException as err:
        text = str(err) or type(err).__name__
        said = text if isinstance(err, SpmdError) else f"rank {rank} (chip {rank}): {text}"
        _say_and_abort(comm, f"tp-run: error: {said}")  # SpmdError names ranks
        return 1
    if rank != 0:
        return 0
    elapsed = time.perf_counter() - t0
    how = ", storage semantics" if args.storage else ""
    print(f"ran {args.program} on {size} MPI rank(s) (SPMD over mpi{how}): {elapsed * 1e3:.1f} ms")
    write_outputs(args, outputs)
    if not (args.check or args.against):
        return 0
    return check_outputs(args, module, source, given, outputs)


def _check_spmd_flags(args: argparse.Namespace) -> None:
    """Refuse what an SPMD module's ranks cannot do (before any rank starts, under --mpi)."""
    if args.engine == "iree" or args.backend == "iree":
        raise UserError("an SPMD module over mpi runs on the interpreter: not --backend iree")
    if args.relay == "host":
        raise UserError("an SPMD module over mpi has no host rank: not --relay host")
    if args.stats:
        raise UserError("--stats counts per-chip programs' ranks: not an SPMD module's")
