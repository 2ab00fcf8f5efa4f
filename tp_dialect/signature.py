"""A program's interface: its entry function and named ports (arguments and results).

Function arguments and results carry their names in ``{tp.name = "..."}`` attributes
(checkpoint names for weights, the frontend's names for per-step inputs and caches), so a
caller binds by name and never by position. An argument without ``tp.name`` is named by the
program text's own SSA name (``%x`` is ``x``; xDSL drops a trailing ``_<digits>``, so
``%w_1`` is ``w``); when that name is missing or taken by another argument it is named by
position, ``arg0``, ``arg1`` ..., the name a caller may always use for it. A result without
``tp.name`` is ``result0``, ``result1`` ...

Each argument also has a role, which is what the runtime asks (never the name): ``weight``
(read from a checkpoint), ``input`` (given per step) or ``cache`` (per-step state updated
in place along the sequence axis ``tp.cache_axis``). A generator states it,
``{tp.name = "past_key.0", tp.role = "cache", tp.cache_axis = 2 : i64}``. An argument with
no ``tp.role`` (hand-written programs, older files) gets the role its uses show: a weight
when it is read only through ``tp.shard`` (the host cuts every chip's slice of it from a
file), an input otherwise (read whole, or not read at all).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Attribute, BlockArgument

from tp_dialect.dtypes import dtype_name, numpy_dtype
from tp_dialect.errors import TpError
from tp_dialect.ops import ShardOp
from tp_dialect.program_ops import uses_through_programs


class BindError(ValueError, TpError):
    """An argument missing, or of the wrong shape or dtype: names expected and found."""


NAME_ATTR = "tp.name"
ROLE_ATTR = "tp.role"
CACHE_AXIS_ATTR = "tp.cache_axis"
ROLES = ("weight", "input", "cache")


@dataclass(frozen=True)
class Port:
    """One named argument or result of a program's entry function.

    ``role`` is an argument's role (``weight``, ``input`` or ``cache``; see the module
    docstring for an argument that states none) and is ``None`` for a result.
    ``cache_axis`` is a cache's sequence axis when the program states it. ``alias`` is the
    positional name (``arg0``) an argument named by its SSA text also answers to.
    """

    name: str
    shape: tuple[int, ...]  # () for a scalar
    dtype: str  # f32, bf16, i64, ...
    role: str | None = None
    cache_axis: int | None = None
    alias: str | None = None

    def key_in(self, names: Container[str]) -> str | None:
        """The name (``name``, else ``alias``) under which ``names`` holds this port, if any."""
        for key in (self.name, self.alias):
            if key is not None and key in names:
                return key
        return None

    numpy_dtype: np.dtype = field(default=np.dtype(np.float32), compare=False)


def entry_function(module: ModuleOp) -> FuncOp:
    """The function a host calls: ``@decode`` if present, else ``@prefill`` (a whole model's
    prompt step), else the only function no call in the module reaches (an outlined
    ``@layer`` is called, so it is never the entry)."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]  # functions are top level
    for name in ("decode", "prefill"):
        for f in funcs:
            if f.sym_name.data == name:
                return f
    if len(funcs) == 1:
        return funcs[0]
    called = {
        op.callee.root_reference.data for f in funcs for op in f.walk() if isinstance(op, CallOp)
    }
    roots = [f for f in funcs if f.sym_name.data not in called]
    if len(roots) != 1:
        raise BindError(
            f"cannot pick an entry function among {len(funcs)}: name one @decode or @prefill"
        )
    return roots[0]


def _stated(attrs: Attribute | None, key: str) -> Attribute | None:
    return attrs.data.get(key) if isinstance(attrs, DictionaryAttr) else None


def _shape_dtype(t: Attribute, name: str) -> tuple[tuple[int, ...], str, np.dtype]:
    """A port's shape, dtype name and numpy dtype; BindError for a type numpy cannot hold."""
    element = t.element_type if isinstance(t, TensorType) else t
    try:
        held = numpy_dtype(element)
    except TypeError:
        raise BindError(f"'{name}' is of type {t}, which tp-run cannot hold") from None
    shape = tuple(t.get_shape()) if isinstance(t, TensorType) else ()
    return shape, dtype_name(element), held


def _name(attrs: Attribute | None, index: int) -> str | None:
    stated = _stated(attrs, NAME_ATTR)
    if stated is None or isinstance(stated, StringAttr):
        return None if stated is None else stated.data
    raise BindError(f"argument #{index}: tp.name must be a string, got {stated}")


def _role(attrs: Attribute | None, arg: BlockArgument | None, name: str) -> str:
    stated = _stated(attrs, ROLE_ATTR)
    if stated is not None:
        if not isinstance(stated, StringAttr) or stated.data not in ROLES:
            raise BindError(
                f"argument '{name}': tp.role must be one of {', '.join(ROLES)}, got {stated}"
            )
        return stated.data
    uses = [] if arg is None else uses_through_programs(arg)
    if uses and all(isinstance(use.operation, ShardOp) for use in uses):
        return "weight"
    return "input"


def _cache_axis(attrs: Attribute | None, name: str, rank: int) -> int | None:
    stated = _stated(attrs, CACHE_AXIS_ATTR)
    if stated is None:
        return None
    if not isinstance(stated, IntegerAttr) or not 0 <= stated.value.data < rank:
        raise BindError(
            f"argument '{name}': tp.cache_axis must be an integer axis below its rank {rank}, "
            f"got {stated}"
        )
    return stated.value.data


def ports(func: FuncOp) -> tuple[list[Port], list[Port]]:
    """The named arguments and results of ``func``, in order, each argument with its role
    (stated, or the one its uses show); raises BindError on a malformed ``tp.role`` or
    ``tp.cache_axis``. Names follow the module docstring's rules."""
    arg_attrs = func.arg_attrs.data if isinstance(func.arg_attrs, ArrayAttr) else ()
    res_attrs = func.res_attrs.data if isinstance(func.res_attrs, ArrayAttr) else ()
    types = func.function_type.inputs.data
    block_args = list(func.body.block.args) if func.body.blocks else []
    attrs = [arg_attrs[i] if i < len(arg_attrs) else None for i in range(len(types))]
    stated = [_name(a, i) for i, a in enumerate(attrs)]
    twice = [n for n, k in Counter(n for n in stated if n is not None).items() if k > 1]
    if twice:
        raise BindError(f"tp.name '{twice[0]}' is given to more than one argument")
    hints = [
        block_args[i].name_hint if i < len(block_args) and stated[i] is None else None
        for i in range(len(types))
    ]
    taken = Counter(n for n in (*stated, *hints) if n is not None)
    ins = []
    for i, t in enumerate(types):
        name, alias = f"arg{i}", None
        if stated[i] is not None:
            name = stated[i]
        elif (hint := hints[i]) is not None and taken[hint] == 1:
            name, alias = hint, f"arg{i}"
        shape, dtype, held = _shape_dtype(t, name)
        arg = block_args[i] if i < len(block_args) else None
        role = _role(attrs[i], arg, name)
        axis = _cache_axis(attrs[i], name, len(shape)) if role == "cache" else None
        ins.append(Port(name, shape, dtype, role, axis, alias, held))
    outs = []
    for i, t in enumerate(func.function_type.outputs.data):
        n = _stated(res_attrs[i] if i < len(res_attrs) else None, NAME_ATTR)
        name = n.data if isinstance(n, StringAttr) else f"result{i}"
        shape, dtype, held = _shape_dtype(t, name)
        outs.append(Port(name, shape, dtype, numpy_dtype=held))
    return ins, outs
