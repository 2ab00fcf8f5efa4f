"""tp-run on IREE (``--backend iree``): the per-chip programs compiled to native code, in
one process (`tp_dialect.runtime.iree_exec`) or on MPI ranks (`tp_dialect.runtime.iree_mpi`,
started by `tp_dialect.tools.run_mpi`)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.runtime.checkpoint import TensorSource, place_weights
from tp_dialect.runtime.iree_exec import (
    CPU,
    TARGETS,
    IreeRun,
    IreeTarget,
    ModuleCache,
    check_target,
    default_cache_dir,
    iree,
    run_iree,
)
from tp_dialect.tools.common import UserError
from tp_dialect.tools.run_model import per_chip

_ARCH = re.compile(r"^[A-Za-z0-9_.+-]+$")


def uses_iree(args: argparse.Namespace) -> bool:
    """Whether IREE runs the chips: ``--backend iree``, or a rank's ``--engine iree``."""
    return args.backend == "iree" or (args.backend == "mpi" and args.engine == "iree")


def check_iree_flags(args: argparse.Namespace) -> None:
    """Refuse, before any work, what the IREE backend does not do; IREE itself must be
    installed (one line naming the extra otherwise), and the target's driver and a device
    of it present (one line saying what the target needs)."""
    if args.engine != "interp" and args.backend != "mpi":
        raise UserError(
            "--engine is a rank's (--backend mpi): in one process, or to start ranks with "
            "--mpi N, give --backend iree"
        )
    if not uses_iree(args):
        for flag in ("iree_cache", "iree_target", "iree_target_arch"):
            if getattr(args, flag) is not None:
                raise UserError(f"--{flag.replace('_', '-')} is for --backend iree")
        return
    if args.storage:
        raise UserError(
            "--storage is the interpreter's: IREE runs tensors as values (drop --storage)"
        )
    on_ranks = args.mpi is not None or args.backend == "mpi"
    if on_ranks and args.relay == "host":
        raise UserError(
            "--relay host is the interpreter's: IREE's ranks send each buffer straight to "
            "its receivers (drop --relay host)"
        )
    if on_ranks and args.iree_target not in (None, CPU.name):
        raise UserError(
            f"--iree-target {args.iree_target} runs in one process: IREE's ranks run "
            f"{CPU.name} (drop --mpi)"
        )
    iree()
    check_target(iree_target(args))


def iree_target(args: argparse.Namespace) -> IreeTarget:
    """The target ``--iree-target`` and ``--iree-target-arch`` name (the host CPU by
    default); a UserError for an architecture the CPU target or IREE's flags cannot take."""
    target = TARGETS[args.iree_target or CPU.name]
    arch = args.iree_target_arch
    if arch is not None and target is CPU:
        raise UserError(
            "--iree-target-arch is for a GPU target: llvm-cpu builds for this machine's CPU"
        )
    if arch is not None and not _ARCH.match(arch):
        raise UserError(f"--iree-target-arch {arch!r}: not an architecture name (sm_90, gfx90a …)")
    return target.for_arch(arch)


def iree_cache(args: argparse.Namespace) -> ModuleCache:
    """The cache of compiled modules ``--iree-cache`` names (else `default_cache_dir`), for
    ``--iree-target``."""
    directory = Path(args.iree_cache) if args.iree_cache else default_cache_dir()
    return ModuleCache(directory, iree_target(args))


def warn_unwritable(cache: ModuleCache) -> None:
    """Say on stderr when ``cache`` could not keep what it compiled (the run went on)."""
    if cache.unwritable:
        print(
            f"tp-run: warning: compiled modules not kept in {cache.directory}: {cache.unwritable}",
            file=sys.stderr,
        )


def execute_iree(
    args: argparse.Namespace,
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], float, IreeRun]:
    """Place the arguments (each chip slice once) and run ``module`` on IREE: the results,
    the load time and what the run compiled and took."""
    # An outlined program runs as it is: its per-chip @layer functions export once, and the
    # slices each call hands them are read from the checkpoint, never a weight whole.
    program = per_chip(module, args.allreduce, True)
    t0 = time.perf_counter()
    placement = place_weights(program, source, inputs, casting=args.cast, through_calls=True)
    load_s = time.perf_counter() - t0
    cache = iree_cache(args)
    run = run_iree(program, placement.values, placement.placed, cache, placement.sliced)
    warn_unwritable(cache)
    return run.outputs, load_s, run


def describe(run: IreeRun, target: IreeTarget = CPU) -> str:
    """What an IREE run compiled and took, for tp-run's summary line."""
    cached = f", {run.rebuilt} corrupt cache entries rebuilt" if run.rebuilt else ""
    return (
        f"IREE {target.name}: {run.functions} functions, {run.distinct} distinct, "
        f"{run.compiled} compiled, {run.hits} from the cache{cached}; "
        f"compile {run.compile_s * 1e3:.1f} ms, place {run.place_s * 1e3:.1f} ms, "
        f"run {run.run_s * 1e3:.1f} ms"
    )
