"""tp-run on IREE (``--backend iree``): the per-chip programs compiled to native code, in
one process (`tp_dialect.runtime.iree_exec`)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tp_dialect.passes.universe import lowered as lowered_copy
from tp_dialect.program_ops import CHIP_FUNCTION
from tp_dialect.runtime.checkpoint import TensorSource, place_weights
from tp_dialect.runtime.iree_exec import (
    TARGET,
    IreeRun,
    ModuleCache,
    default_cache_dir,
    iree,
    run_iree,
)
from tp_dialect.tools.common import UserError
from tp_dialect.tools.run_mpi import per_chip


def check_iree_flags(args: argparse.Namespace) -> None:
    """Refuse, before any work, what the IREE backend does not do; IREE itself must be
    installed (one line naming the extra otherwise)."""
    if args.backend != "iree":
        if args.iree_cache is not None:
            raise UserError("--iree-cache is for --backend iree")
        return
    if args.mpi is not None:
        raise UserError("--backend iree runs in one process: --mpi with IREE is not supported")
    if args.storage:
        raise UserError(
            "--storage is the interpreter's: IREE runs tensors as values (drop --storage)"
        )
    iree()


def iree_program(module: ModuleOp, allreduce: str) -> ModuleOp:
    """``module`` as flat per-chip programs, what tp-export cuts: itself, or a copy lowered
    (and an outlined program's per-chip functions inlined), said on stderr."""
    module = per_chip(module, allreduce, True)
    if any(isinstance(f, FuncOp) and CHIP_FUNCTION in f.attributes for f in module.ops):
        print("tp-run: inlining a copy's per-chip functions for IREE: tp-inline", file=sys.stderr)
        module = lowered_copy(module, "tp-inline")
    return module


def execute_iree(
    args: argparse.Namespace,
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], float, IreeRun]:
    """Place the arguments (each chip slice once) and run ``module`` on IREE: the results,
    the load time and what the run compiled and took."""
    program = iree_program(module, args.allreduce)
    t0 = time.perf_counter()
    placement = place_weights(program, source, inputs, casting=args.cast)
    load_s = time.perf_counter() - t0
    cache = ModuleCache(Path(args.iree_cache) if args.iree_cache else default_cache_dir())
    run = run_iree(program, placement.values, placement.placed, cache)
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
