"""A program's interface: its entry function and named ports (arguments and results).

Function arguments and results carry their names in ``{tp.name = "..."}`` attributes
(Hugging Face checkpoint names for weights; ``hidden_states``, ``position``,
``past_key.{i}`` ... for decode inputs), so a caller binds by name and never by position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute

from tp_dialect.dtypes import BF16, dtype_name


class BindError(ValueError):
    """An argument missing, or of the wrong shape or dtype: names expected and found."""


NAME_ATTR = "tp.name"


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
    return BF16 if name == "bf16" else np.dtype({"f32": np.float32, "f64": np.float64}[name])


def entry_function(module: ModuleOp) -> FuncOp:
    """The function a host calls: ``@decode`` if present, else the module's only function."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]  # functions are top level
    for f in funcs:
        if f.sym_name.data == "decode":
            return f
    if len(funcs) != 1:
        raise BindError(f"cannot pick an entry function among {len(funcs)}: name one @decode")
    return funcs[0]


def _port(attrs: Attribute | None, t: Attribute, index: int, kind: str) -> Port:
    name = f"{kind}{index}"
    if isinstance(attrs, DictionaryAttr) and isinstance(n := attrs.data.get(NAME_ATTR), StringAttr):
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
