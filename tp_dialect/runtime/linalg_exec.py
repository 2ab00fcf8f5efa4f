"""``linalg.generic`` run vectorised: einsum for contractions, ufuncs over the iteration space.

Each operand is viewed on the iteration domain through its indexing map (a transpose and
reshape, no copy), so the body's scalar ops run once on whole arrays. Three body shapes
cover what the programs use, and anything else is refused by name rather than run slowly:

- contraction: ``yield acc + a*b`` (a, b block args, optionally through ``arith.extf``) ->
  one ``np.einsum`` (BLAS for matrix products);
- reduction: ``yield acc ⊕ f(args)`` with ⊕ in {addf, maximumf, minimumf, mulf} -> f on the
  whole domain, then one ``ufunc.reduce`` over the reduction dims;
- map (all dims parallel): the body on the domain, transposed into the output's layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.interpreter import Interpreter
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype

_REDUCERS: dict[type[Operation], np.ufunc] = {
    arith.AddfOp: np.add,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MulfOp: np.multiply,
}


@dataclass(frozen=True)
class _Contraction:
    subscripts: str
    operands: tuple[int, int]  # block-arg indices of the two factors


@dataclass(frozen=True)
class _Reduction:
    combine: Operation
    ufunc: np.ufunc


@dataclass(frozen=True)
class _Map:
    pass


_Plan = _Contraction | _Reduction | _Map
_PLANS: dict[int, tuple[Operation, _Plan]] = {}


def _dims_of(m: AffineMap, op: Operation) -> list[int]:
    dims = []
    for expr in m.results:
        if not isinstance(expr, AffineDimExpr):
            raise InterpretationError(
                f"{op.name}: indexing map {m} is not a projection of loop dims"
            )
        dims.append(expr.position)
    return dims


def _arg_through_extf(value: SSAValue) -> BlockArgument | None:
    if isinstance(value, BlockArgument):
        return value
    owner = value.owner
    if isinstance(owner, arith.ExtFOp) and isinstance(owner.input, BlockArgument):
        return owner.input
    return None


def _plan(op: linalg.GenericOp) -> _Plan:
    cached = _PLANS.get(id(op))
    if cached is not None and cached[0] is op:
        return cached[1]
    plan = _make_plan(op)
    _PLANS[id(op)] = (op, plan)
    return plan


def _make_plan(op: linalg.GenericOp) -> _Plan:
    block = op.body.block
    iters = [str(it.data) for it in op.iterator_types.data]
    yield_op = block.last_op
    assert isinstance(yield_op, linalg.YieldOp)
    if "reduction" not in iters:
        return _Map()
    if len(op.outputs) != 1 or len(yield_op.operands) != 1:
        raise InterpretationError("linalg.generic: a reduction with several outputs")
    acc = block.args[len(op.inputs)]
    combine = yield_op.operands[0].owner
    if type(combine) not in _REDUCERS or acc not in combine.operands:
        raise InterpretationError(
            "linalg.generic: reduction body is not `yield acc ⊕ f(...)` with ⊕ in "
            "addf/maximumf/minimumf/mulf"
        )
    if any(use.operation is not combine for use in acc.uses):
        raise InterpretationError("linalg.generic: the accumulator is used beyond ⊕")
    other = combine.operands[1] if combine.operands[0] is acc else combine.operands[0]
    if isinstance(combine, arith.AddfOp) and isinstance(other.owner, arith.MulfOp):
        factors = [_arg_through_extf(v) for v in other.owner.operands]
        body_ops = [o for o in block.ops if o not in (combine, yield_op, other.owner)]
        only_extf = all(isinstance(o, arith.ExtFOp) for o in body_ops)
        if all(f is not None for f in factors) and only_extf and len(list(other.uses)) == 1:
            letters = "abcdefghijklmnopqrstuvwxyz"
            maps = [m.data for m in op.indexing_maps.data]
            idx = [f.index for f in factors if f is not None]
            subs = ["".join(letters[d] for d in _dims_of(maps[i], op)) for i in idx]
            out = "".join(letters[d] for d in _dims_of(maps[len(op.inputs)], op))
            return _Contraction(f"{subs[0]},{subs[1]}->{out}", (idx[0], idx[1]))
    return _Reduction(combine, _REDUCERS[type(combine)])


def _on_domain(arr: Any, dims: Sequence[int], rank: int) -> Any:
    """``arr`` (axes = loop dims ``dims``) viewed with one axis per loop dim (size 1 if absent)."""
    if not isinstance(arr, np.ndarray):
        return arr
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    view = arr.transpose(order) if order != list(range(len(dims))) else arr
    shape = [1] * rank
    for i in order:
        shape[dims[i]] = arr.shape[i]
    return view.reshape(shape)


def _from_domain(arr: np.ndarray, dims: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Domain-shaped ``arr`` (kept dims only, ascending) into an output laid out as ``dims``."""
    kept = sorted(dims)
    perm = [kept.index(d) for d in dims]
    moved = arr.transpose(perm) if perm != list(range(len(perm))) else arr
    return np.broadcast_to(moved, shape)


def run_generic(
    interpreter: Interpreter,
    op: linalg.GenericOp,
    args: Sequence[Any],
    eval_body: Callable[[list[Any], Operation | None], list[Any]],
) -> tuple[np.ndarray, ...]:
    """The results of ``op`` on ``args`` (ins then outs), computed on whole arrays."""
    n_in = len(op.inputs)
    maps = [m.data for m in op.indexing_maps.data]
    rank = maps[0].num_dims
    dims = [_dims_of(m, op) for m in maps]
    sizes = [1] * rank
    for arr, ds in zip(args, dims, strict=True):
        if isinstance(arr, np.ndarray):
            for axis, d in enumerate(ds):
                sizes[d] = arr.shape[axis]
    out_types = [r.type for r in op.results]
    plan = _plan(op)

    if isinstance(plan, _Contraction):
        i, j = plan.operands
        a, b = (np.asarray(args[k], dtype=np.float32) for k in (i, j))
        product = np.einsum(plan.subscripts, a, b, optimize=True)
        return (np.asarray(args[n_in] + product, dtype=_dtype(out_types[0])),)

    views = [_on_domain(a, d, rank) for a, d in zip(args, dims, strict=True)]
    with _domain(interpreter, sizes):
        if isinstance(plan, _Reduction):
            (value,) = eval_body(views[:n_in], plan.combine)
            full = np.broadcast_to(value, sizes)
            out_dims = dims[n_in]
            reduce_axes = tuple(d for d in range(rank) if d not in out_dims)
            reduced = plan.ufunc.reduce(full, axis=reduce_axes)
            shaped = _from_domain(reduced, out_dims, args[n_in].shape)
            return (np.asarray(plan.ufunc(args[n_in], shaped), dtype=_dtype(out_types[0])),)
        values = eval_body(views, None)
    results = []
    for k, value in enumerate(values):
        out_dims = dims[n_in + k]
        domain = np.broadcast_to(value, sizes)
        out = _from_domain(domain, out_dims, args[n_in + k].shape)
        results.append(np.array(out, dtype=_dtype(out_types[k])))
    return tuple(results)


def _dtype(t: Any) -> np.dtype:
    assert isinstance(t, TensorType)
    return numpy_dtype(t.element_type)


class _domain:
    """Makes the loop domain visible to ``linalg.index`` while a body runs."""

    def __init__(self, interpreter: Interpreter, sizes: list[int]) -> None:
        self.interpreter, self.sizes = interpreter, sizes

    def __enter__(self) -> None:
        stack = self.interpreter.get_data(_DomainStack, "domains", list)
        stack.append(self.sizes)

    def __exit__(self, *exc: object) -> None:
        self.interpreter.get_data(_DomainStack, "domains", list).pop()


class _DomainStack:
    """Key under which the interpreter keeps the stack of loop domains."""


def loop_index(interpreter: Interpreter, dim: int) -> np.ndarray:
    """``linalg.index dim`` on the current loop domain: an arange along that dim."""
    stack = interpreter.get_data(_DomainStack, "domains", list)
    if not stack:
        raise InterpretationError("linalg.index outside a linalg.generic body")
    sizes = stack[-1]
    shape = [1] * len(sizes)
    shape[dim] = sizes[dim]
    return np.arange(sizes[dim], dtype=np.int64).reshape(shape)
