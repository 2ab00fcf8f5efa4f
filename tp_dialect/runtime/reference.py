"""The reference interpreter (the "VM"): a tp program run on numpy, arguments bound by name.

Value semantics by default; ``storage=True`` runs in-place updates as real overwrites of their
destination's storage (`NumpyFunctions`), so a phased program whose order lets a reader see a
cache after its update gives different numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.grid import stated_chips
from tp_dialect.ops import ShardOp
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime.binding import bind
from tp_dialect.runtime.numpy_impls import LocatingInterpreter, NumpyFunctions, own_storage
from tp_dialect.runtime.relay_exec import run_linked
from tp_dialect.signature import BindError, entry_function, ports
from tp_dialect.xdsl_compat import func_functions


def run_program(
    module: ModuleOp,
    values: Mapping[str, Any],
    placed: dict[ShardOp, np.ndarray] | None = None,
    storage: bool = False,
) -> dict[str, np.ndarray]:
    """The entry function of ``module`` run on ``values``; its results by name. With
    ``storage``, in-place updates overwrite their destination's storage (the caller's arrays
    are never written: the bound inputs are copied once)."""
    func = entry_function(module)
    from tp_dialect.runtime.spmd import is_spmd, run_spmd

    if is_spmd(func):  # tp-to-mpi's: every rank runs it, rank 0's results are the program's
        ranks = stated_chips(module) or 1
        return run_spmd(module, values, ranks, storage=storage, placed=placed)
    ins, outs = ports(func)
    args = bind(ins, values)
    if storage:
        args = [own_storage(a) for a in args]
    if any(isinstance(op, ChipProgramOp) for op in func.body.block.ops):
        # per-chip programs: the relay
        results = run_linked(module, func, args, placed, storage=storage)
    else:
        interpreter = LocatingInterpreter(module)
        interpreter.register_implementations(func_functions())
        interpreter.register_implementations(NumpyFunctions(placed, storage=storage))
        results = interpreter.call_op(func, tuple(args))
    return {
        port.name: np.asarray(r, dtype=port.numpy_dtype)
        for port, r in zip(outs, results, strict=True)
    }


__all__ = ["BindError", "bind", "entry_function", "ports", "run_program"]
