"""tp-run on IREE (``--backend iree``): the per-chip programs compiled to native code, in
one process (`tp_dialect.runtime.iree_exec`)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.runtime.checkpoint import TensorSource, place_weights
from tp_dialect.runtime.iree_exec import TARGET, IreeRun, iree, module_cache, run_iree
from tp_dialect.tools.common import UserError
from tp_dialect.tools.run_mpi import per_chip


def uses_iree(args: argparse.Namespace) -> bool:
    """Whether IREE runs the chips: ``--backend iree``, or a rank's ``--engine iree``."""
    return args.backend == "iree" or (args.backend == "mpi" and args.engine == "iree")


def check_iree_flags(args: argparse.Namespace) -> None:
    """Refuse, before any work, what the IREE backend does not do; IREE itself must be
    installed (one line naming the extra otherwise)."""
    if args.engine != "interp" and args.backend != "mpi":
        raise UserError(
            "--engine is a rank's (--backend mpi): in one process, or to start ranks with "
            "--mpi N, give --backend iree"
        )
    if not uses_iree(args):
        if args.iree_cache is not None:
            raise UserError("--iree-cache is for --backend iree")
        return
    if args.storage:
        raise UserError(
            "--storage is the interpreter's: IREE runs tensors as values (drop --storage)"
        )
    if (args.mpi is not None or args.backend == "mpi") and args.relay == "host":
        raise UserError(
            "--relay host is the interpreter's: IREE's ranks send each buffer straight to "
            "its receivers (drop --relay host)"
        )
    iree()


def execute_iree(
    args: argparse.Namespace,
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], float, IreeRun]:
    """Place the arguments (each chip slice once) and run ``module`` on IREE: the results,
    the load time and what the run compiled and took."""
    program = per_chip(module, args.allreduce, True, flat=True)
    t0 = time.perf_counter()
    placement = place_weights(program, source, inputs, casting=args.cast)
    load_s = time.perf_counter() - t0
    run = run_iree(program, placement.values, placement.placed, module_cache(args.iree_cache))
    return run.outputs, load_s, run


def describe(run: IreeRun) -> str:
    """What an IREE run compiled and took, for tp-run's summary line."""
    cached = f", {run.rebuilt} corrupt cache entries rebuilt" if run.rebuilt else ""
    return (
        f"IREE {TARGET}: {run.functions} functions, {run.distinct} distinct, "
        f"{run.compiled} compiled, {run.hits} from the cache{cached}; "
        f"compile {run.compile_s * 1e3:.1f} ms, place {run.place_s * 1e3:.1f} ms, "
        f"run {run.run_s * 1e3:.1f} ms"
    )
