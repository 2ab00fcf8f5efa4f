"""``linalg.generic`` run vectorised: one batched ``np.matmul`` for a contraction, the body's
numpy kernels over the iteration domain for the rest.

Each operand is viewed on the iteration domain through its indexing map (a transpose and
reshape, no copy), so the body's scalar ops run once on whole arrays. Three body shapes
cover what the programs use, and anything else is refused by name rather than run slowly:

- contraction (`tp_dialect.linalg_kinds.contraction`: ``yield acc + a*b``, a sum of squares
  included) -> transpose, reshape, one ``np.matmul`` (BLAS) and back (``np.einsum`` only
  when the factors make no batched matmul, e.g. a letter summed over one factor alone). The
  factors are multiplied in the multiply's own type, widened to at least f32 (numpy has no
  fast bf16/f16 product): f32 and f64 stay what they are, bf16 is read as f32 exactly as
  its ``arith.extf`` says;
- reduction: ``yield acc ⊕ f(args)`` with ⊕ in {addf, maximumf, minimumf, mulf} -> f on the
  whole domain, then one ``ufunc.reduce`` over the reduction loops;
- map (all loops parallel): the body on the domain, transposed into the output's layout.

A generic's plan is worked out once and cached for as long as the op lives (`_PLANS`, keyed
weakly by the op; a plan refers to IR only through weak references, so it never keeps its
module alive and a dropped module's plans go with it).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.linalg_kinds import contraction, reduction_axes
from tp_dialect.runtime.scalar_ops import Kernel, kernel_for

_REDUCERS: dict[type[Operation], np.ufunc] = {
    arith.AddfOp: np.add,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MulfOp: np.multiply,
}


@dataclass
class _Plan:
    """How to run one generic, worked out once from its IR (shapes are static)."""

    kind: str  # "contraction" | "reduction" | "map"
    n_in: int
    rank: int
    dims: list[list[int]]  # per operand, the loop dim of each of its axes
    out_dtypes: list[np.dtype]
    subscripts: str = ""
    factors: tuple[int, int] = (0, 0)  # input indices of a contraction's factors
    product_dtype: np.dtype | None = None  # what a contraction multiplies in
    ufunc: np.ufunc | None = None
    reduce_axes: tuple[int, ...] = ()
    matmul: _MatmulPlan | None = None  # a contraction as one batched matmul, or None
    body: _Body | None = None  # the body compiled to numpy kernels (maps and reductions)


# Where a body op's operand lives: a slot of the body's frame, or (held weakly) a value
# defined outside the generic, read from the interpreter.
_Ref = int | weakref.ref[SSAValue]


@dataclass(frozen=True)
class _Step:
    """One body op: how it is computed and where its operands live."""

    kernel: Kernel | None  # None: a linalg.index (``index_dim``) or ask the interpreter
    index_dim: int | None  # the loop dim of a ``linalg.index``
    op: weakref.ref[Operation]  # the op, for the interpreter
    operands: tuple[_Ref, ...]
    slot: int


def _deref(ref: weakref.ref[Any]) -> Any:
    target = ref()
    if target is None:
        raise InterpretationError("linalg.generic: IR its plan refers to no longer exists")
    return target


@dataclass(frozen=True)
class _Body:
    """A generic's body as straight-line numpy calls over a frame of slots."""

    steps: tuple[_Step, ...]
    results: tuple[_Ref, ...]
    frame: int

    def run(self, interpreter: Interpreter, args: Sequence[Any], sizes: list[int]) -> list[Any]:
        """The body's yielded values (or a reduction's combined value) on whole arrays."""
        frame: list[Any] = [*args, *([None] * (self.frame - len(args)))]

        def get(ref: _Ref) -> Any:
            return frame[ref] if isinstance(ref, int) else interpreter.get_values([_deref(ref)])[0]

        for step in self.steps:
            values = [get(r) for r in step.operands]
            if step.index_dim is not None:
                frame[step.slot] = _loop_index(sizes, step.index_dim)
            elif step.kernel is not None:
                frame[step.slot] = step.kernel(*values)
            else:
                frame[step.slot] = interpreter.run_op(_deref(step.op), tuple(values))[0]
        return [get(r) for r in self.results]


def _compile_body(op: linalg.GenericOp, stop: Operation | None) -> _Body:
    """The body up to its yield (or, for a reduction, up to ``stop``, returning the value
    ``stop`` combines with the accumulator)."""
    block = op.body.block
    slots: dict[SSAValue, int] = {arg: i for i, arg in enumerate(block.args)}

    def ref(value: SSAValue) -> _Ref:
        slot = slots.get(value)
        return weakref.ref(value) if slot is None else slot

    steps = []
    for body_op in block.ops:
        if body_op is stop:
            acc = block.args[len(op.inputs)]
            other = body_op.operands[1] if body_op.operands[0] is acc else body_op.operands[0]
            return _Body(tuple(steps), (ref(other),), len(slots))
        if isinstance(body_op, linalg.YieldOp):
            return _Body(tuple(steps), tuple(ref(v) for v in body_op.operands), len(slots))
        if len(body_op.results) != 1:
            raise InterpretationError(f"{body_op.name} in a linalg.generic body")
        slot = len(slots)
        index_dim = body_op.dim.value.data if isinstance(body_op, linalg.IndexOp) else None
        kernel = None if index_dim is not None else kernel_for(body_op)
        operands = tuple(ref(v) for v in body_op.operands)
        steps.append(_Step(kernel, index_dim, weakref.ref(body_op), operands, slot))
        slots[body_op.results[0]] = slot
    raise InterpretationError("linalg.generic body has no linalg.yield")


@dataclass(frozen=True)
class _MatmulPlan:
    """A two-operand contraction as transpose -> reshape -> ``np.matmul`` -> transpose.

    BLAS reads transposed operands in place, so a weight ``[out, in]`` is never copied.
    """

    perm_a: tuple[int, ...]
    perm_b: tuple[int, ...]
    shape_a: tuple[int, ...]  # (batch, free_a, contracted)
    shape_b: tuple[int, ...]  # (batch, contracted, free_b)
    shape_out: tuple[int, ...]  # batch letters, free_a letters, free_b letters
    perm_out: tuple[int, ...]


def _matmul_plan(subscripts: str, a: np.ndarray, b: np.ndarray) -> _MatmulPlan | None:
    lhs, out = subscripts.split("->")
    sa, sb = lhs.split(",")
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb):
        return None
    batch = [c for c in sa if c in sb and c in out]
    contracted = [c for c in sa if c in sb and c not in out]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    if any(c not in out for c in free_a + free_b):
        return None  # a letter summed over one operand alone: leave it to einsum
    size = {**dict(zip(sa, a.shape, strict=True)), **dict(zip(sb, b.shape, strict=True))}

    def prod(letters: list[str]) -> int:
        return int(np.prod([size[c] for c in letters], dtype=np.int64))

    order = batch + free_a + free_b
    return _MatmulPlan(
        tuple(sa.index(c) for c in batch + free_a + contracted),
        tuple(sb.index(c) for c in batch + contracted + free_b),
        (prod(batch), prod(free_a), prod(contracted)),
        (prod(batch), prod(contracted), prod(free_b)),
        tuple(size[c] for c in order),
        tuple(order.index(c) for c in out),
    )


def _contract(plan: _Plan, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    mm = plan.matmul
    if mm is None:
        return np.einsum(plan.subscripts, a, b)
    product = np.matmul(
        a.transpose(mm.perm_a).reshape(mm.shape_a), b.transpose(mm.perm_b).reshape(mm.shape_b)
    )
    return product.reshape(mm.shape_out).transpose(mm.perm_out)


# Each live generic's plan. Keyed weakly by the op (ops hash and compare by identity): an
# entry goes when its op does, so a dropped module's plans are freed and a new op never meets
# an old op's plan. A plan holds IR only weakly, or its entry would keep its own key alive.
_PLANS: weakref.WeakKeyDictionary[linalg.GenericOp, _Plan] = weakref.WeakKeyDictionary()


def _dims_of(m: AffineMap, op: Operation) -> list[int]:
    dims = []
    for expr in m.results:
        if not isinstance(expr, AffineDimExpr):
            raise InterpretationError(
                f"{op.name}: indexing map {m} is not a projection of loop dims"
            )
        dims.append(expr.position)
    return dims


def _plan(op: linalg.GenericOp) -> _Plan:
    """``op``'s plan, made on first use and kept while ``op`` lives."""
    plan = _PLANS.get(op)
    if plan is None:
        plan = _PLANS[op] = _make_plan(op)
    return plan


def _make_plan(op: linalg.GenericOp) -> _Plan:
    block = op.body.block
    maps = [m.data for m in op.indexing_maps.data]
    n_in = len(op.inputs)
    plan = _Plan(
        "map",
        n_in,
        maps[0].num_dims,
        [_dims_of(m, op) for m in maps],
        [_dtype(r.type) for r in op.results],
    )
    reduced = reduction_axes(op)
    yield_op = block.last_op
    assert isinstance(yield_op, linalg.YieldOp)
    if not reduced:
        for k, dims in enumerate(plan.dims[n_in:]):
            missing = sorted(set(range(plan.rank)) - set(dims))
            if missing:  # each of its elements would be written once per value of d
                raise InterpretationError(
                    f"linalg.generic: parallel loop d{missing[0]} does not index output {k}: "
                    "a loop an output does not follow must be a reduction"
                )
        plan.body = _compile_body(op, None)
        return plan
    if len(op.outputs) != 1 or len(yield_op.operands) != 1:
        raise InterpretationError("linalg.generic: a reduction with several outputs")
    if set(plan.dims[n_in]) != set(range(plan.rank)) - set(reduced):
        raise InterpretationError(
            "linalg.generic: the output is not indexed by exactly the parallel loops"
        )
    plan.reduce_axes = reduced
    kind = contraction(op)
    if kind is not None:
        letters = "abcdefghijklmnopqrstuvwxyz"
        subs = ["".join(letters[d] for d in plan.dims[i]) for i in kind.factors]
        out = "".join(letters[d] for d in plan.dims[n_in])
        plan.kind, plan.factors = "contraction", kind.factors
        plan.subscripts = f"{subs[0]},{subs[1]}->{out}"
        product = numpy_dtype(kind.product_type)
        plan.product_dtype = product if product.itemsize >= 4 else np.dtype(np.float32)
        return plan
    acc = block.args[n_in]
    combine = yield_op.operands[0].owner
    if type(combine) not in _REDUCERS or acc not in combine.operands:
        raise InterpretationError(
            "linalg.generic: reduction body is not `yield acc ⊕ f(...)` with ⊕ in "
            "addf/maximumf/minimumf/mulf"
        )
    if any(use.operation is not combine for use in acc.uses):
        raise InterpretationError("linalg.generic: the accumulator is used beyond ⊕")
    plan.kind, plan.ufunc = "reduction", _REDUCERS[type(combine)]
    plan.body = _compile_body(op, combine)
    return plan


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
    interpreter: Interpreter, op: linalg.GenericOp, args: Sequence[Any]
) -> tuple[np.ndarray, ...]:
    """The results of ``op`` on ``args`` (ins then outs), computed on whole arrays."""
    plan = _plan(op)
    n_in = plan.n_in
    if plan.kind == "contraction":
        i, j = plan.factors
        a, b = (np.asarray(args[k], dtype=plan.product_dtype) for k in (i, j))
        if plan.matmul is None:
            plan.matmul = _matmul_plan(plan.subscripts, a, b)
        product = _contract(plan, a, b)
        return (np.asarray(args[n_in] + product, dtype=plan.out_dtypes[0]),)

    sizes = [1] * plan.rank
    for arr, ds in zip(args, plan.dims, strict=True):
        if isinstance(arr, np.ndarray):
            for axis, d in enumerate(ds):
                sizes[d] = arr.shape[axis]
    views = [_on_domain(a, d, plan.rank) for a, d in zip(args, plan.dims, strict=True)]
    assert plan.body is not None
    if plan.kind == "reduction":
        assert plan.ufunc is not None
        (value,) = plan.body.run(interpreter, views[:n_in], sizes)
        full = np.broadcast_to(value, sizes)
        reduced = plan.ufunc.reduce(full, axis=plan.reduce_axes)
        shaped = _from_domain(reduced, plan.dims[n_in], args[n_in].shape)
        return (np.asarray(plan.ufunc(args[n_in], shaped), dtype=plan.out_dtypes[0]),)
    values = plan.body.run(interpreter, views, sizes)
    results = []
    for k, value in enumerate(values):
        domain = np.broadcast_to(value, sizes)
        out = _from_domain(domain, plan.dims[n_in + k], args[n_in + k].shape)
        results.append(np.array(out, dtype=plan.out_dtypes[k]))
    return tuple(results)


def _dtype(t: Any) -> np.dtype:
    assert isinstance(t, TensorType)
    return numpy_dtype(t.element_type)


def _loop_index(sizes: list[int], dim: int) -> np.ndarray:
    """``linalg.index dim`` on a loop domain: an arange along that dim, broadcastable."""
    shape = [1] * len(sizes)
    shape[dim] = sizes[dim]
    return np.arange(sizes[dim], dtype=np.int64).reshape(shape)
