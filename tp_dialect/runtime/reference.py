"""The reference interpreter (the "VM"): a tp program run on numpy, arguments bound by name.

Function arguments and results carry their names in ``{tp.name = "..."}`` attributes
(Hugging Face checkpoint names for weights; ``hidden_states``, ``position``,
``past_key.{i}`` ... for decode inputs), so a caller binds by name and never by position.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute

from tp_dialect.ops import ShardOp
from tp_dialect.runtime.dtypes import dtype_name, numpy_dtype
from tp_dialect.runtime.numpy_impls import NumpyFunctions

NAME_ATTR = "tp.name"


class BindError(ValueError):
    """An argument missing, or of the wrong shape or dtype: names expected and found."""


@dataclass(frozen=True)
class Port:
    """One named argument or result of a program's entry function."""

    name: str
    shape: tuple[int, ...]  # () for a scalar
    dtype: str  # f32, bf16, i64, ...

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(np.int64) if self.dtype == "i64" else _np_dtype(self.dtype)


def _np_dtype(name: str) -> np.dtype:
    from tp_dialect.runtime.dtypes import BF16

    return BF16 if name == "bf16" else np.dtype({"f32": np.float32, "f64": np.float64}[name])


def entry_function(module: ModuleOp) -> FuncOp:
    """The function a host calls: ``@decode`` if present, else the module's only function."""
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    for f in funcs:
        if f.sym_name.data == "decode":
            return f
    if len(funcs) != 1:
        raise BindError(
            f"cannot pick an entry function among {len(funcs)}: name one @decode"
        )
    return funcs[0]


def _port(attrs: Attribute | None, t: Attribute, index: int, kind: str) -> Port:
    name = f"{kind}{index}"
    if isinstance(attrs, DictionaryAttr) and isinstance(
        n := attrs.data.get(NAME_ATTR), StringAttr
    ):
        name = n.data
    if isinstance(t, TensorType):
        return Port(name, tuple(t.get_shape()), dtype_name(t.element_type))
    return Port(name, (), dtype_name(t))


def ports(func: FuncOp) -> tuple[list[Port], list[Port]]:
    """The named arguments and results of ``func``, in order."""
    arg_attrs = func.arg_attrs.data if isinstance(func.arg_attrs, ArrayAttr) else ()
    res_attrs = func.res_attrs.data if isinstance(func.res_attrs, ArrayAttr) else ()
    ins = [
        _port(arg_attrs[i] if i < len(arg_attrs) else None, t, i, "arg")
        for i, t in enumerate(func.function_type.inputs.data)
    ]
    outs = [
        _port(res_attrs[i] if i < len(res_attrs) else None, t, i, "result")
        for i, t in enumerate(func.function_type.outputs.data)
    ]
    return ins, outs


def bind(ins: list[Port], values: Mapping[str, Any]) -> list[Any]:
    """Values for ``ins`` in order, checked: every name present, shapes and dtypes right."""
    bound = []
    for port in ins:
        if port.name not in values:
            raise BindError(f"missing argument '{port.name}' (expected {_describe(port)})")
        value = np.asarray(values[port.name])
        if tuple(value.shape) != port.shape:
            raise BindError(
                f"argument '{port.name}': expected shape {list(port.shape)}, "
                f"found {list(value.shape)}"
            )
        bound.append(value.astype(port.numpy_dtype, copy=False) if port.shape else
                     port.numpy_dtype.type(value))
    return bound


def _describe(port: Port) -> str:
    return f"{port.dtype} of shape {list(port.shape)}" if port.shape else port.dtype


def run_program(
    module: ModuleOp,
    values: Mapping[str, Any],
    placed: dict[ShardOp, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """The entry function of ``module`` run on ``values``; its results by name."""
    func = entry_function(module)
    ins, outs = ports(func)
    args = bind(ins, values)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(NumpyFunctions(placed))
    results = interpreter.call_op(func, tuple(args))
    return {
        port.name: np.asarray(r, dtype=numpy_dtype_of(port))
        for port, r in zip(outs, results, strict=True)
    }


def numpy_dtype_of(port: Port) -> np.dtype:
    return port.numpy_dtype


__all__ = ["BindError", "Port", "bind", "entry_function", "numpy_dtype", "ports", "run_program"]
