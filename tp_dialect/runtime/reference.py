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
from xdsl.interpreters.func import FuncFunctions

from tp_dialect.grid import stated_chips
from tp_dialect.ops import ShardOp
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime.binding import cast_problem, describe_port
from tp_dialect.runtime.numpy_impls import LocatingInterpreter, NumpyFunctions, own_storage
from tp_dialect.runtime.relay_exec import run_linked
from tp_dialect.signature import BindError, Port, entry_function, ports


def bind(ins: list[Port], values: Mapping[str, Any]) -> list[Any]:
    """Values for ``ins`` in order, checked: every port present (by its name, else its
    alias, the positional ``arg0`` of an argument named by its text), shapes right, and each
    value converted to the port's dtype where numpy's ``same_kind`` rule allows (an
    integer where every value fits; a float never becomes an integer: `cast_problem`)."""
    bound = []
    for port in ins:
        key = port.key_in(values)
        if key is None:
            raise BindError(f"missing argument '{port.name}' (expected {describe_port(port)})")
        value = np.asarray(values[key])
        if tuple(value.shape) != port.shape:
            raise BindError(
                f"argument '{port.name}': expected shape {list(port.shape)}, "
                f"found {list(value.shape)}"
            )
        problem = cast_problem(port, value.dtype, "same_kind", value)
        if problem:
            raise BindError(f"argument '{port.name}' {problem}")
        bound.append(
            value.astype(port.numpy_dtype, copy=False)
            if port.shape
            else port.numpy_dtype.type(value)
        )
    return bound


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
        interpreter.register_implementations(FuncFunctions())
        interpreter.register_implementations(NumpyFunctions(placed, storage=storage))
        results = interpreter.call_op(func, tuple(args))
    return {
        port.name: np.asarray(r, dtype=port.numpy_dtype)
        for port, r in zip(outs, results, strict=True)
    }


__all__ = ["BindError", "bind", "entry_function", "ports", "run_program"]
