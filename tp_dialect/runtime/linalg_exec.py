"""Structured linalg ops run vectorised: ``linalg.generic``, every named op (``matmul``,
``conv_2d_*``, ``add`` ...) and ``linalg.reduce``, each read as its indexing maps and body.

An op means its loop nest: for every point of its iteration domain, in lexicographic order
(``d0`` outermost), the body reads each input at its map of the point and each output's
current element at its map, and its yield becomes that element. Each operand is viewed on
the iteration domain through its indexing map — a transpose and reshape when the map
projects distinct loop dims, else (a diagonal ``(d0, d1) -> (d1, d1)``, a window
``d2 + d5``) a gather by the map's values — so the body's scalar ops run once on whole
arrays. Four plans, the first that fits:

- contraction (`tp_dialect.linalg_kinds.contraction`: ``yield acc + a*b``, a sum of squares
  included, the factors read through dims only) -> transpose, reshape, one ``np.matmul``
  (BLAS) and back (``np.einsum`` when the factors make no batched matmul: a letter summed
  over one factor alone, a diagonal). The factors are multiplied in the multiply's own type,
  widened to at least f32 (numpy has no fast bf16/f16 product): f32 and f64 stay what they
  are, bf16 is read as f32 exactly as its ``arith.extf`` says;
- reduction: one output, ``yield acc ⊕ f(args)`` with ⊕ in {addf, maximumf, minimumf,
  mulf} -> f on the whole domain, then one ``ufunc.reduce`` over the loops the output does
  not follow (``linalg.pooling_nchw_max`` too, as MLIR defines it: the max of the output
  and its window, where xDSL 0.75's body leaves the output out);
- map (every output follows every loop): the body on the domain, into each output's layout;
- loop (anything else: a reduction of several outputs, an integer one, a body ⊕ is not the
  last step of): the loops some output does not follow run one by one, in order, the body
  vectorised over the rest. A body that cannot run on arrays (an op with regions, an op
  without a numpy kernel) runs point by point through the interpreter.

An output's map must name distinct loop dims (a projected permutation): where two points
would write one element in no stated order, the op has no meaning here (the load-time
verifier refuses it: `tp_dialect.tools.source.upstream_guard`).

A plan is worked out once per op and kept as long as the op lives (`_PLANS`, keyed weakly
by the op; a plan refers to IR only through weak references, so it never keeps its module
alive and a dropped module's plans go with it).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.abstract_ops import LinalgStructuredOperation
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.linalg_kinds import Argmax, argmax, contraction, loop_maps
from tp_dialect.runtime.int_ops import element_type
from tp_dialect.runtime.scalar_ops import Kernel, kernel_for

Structured = LinalgStructuredOperation | linalg.ReduceOp

_REDUCERS: dict[type[Operation], np.ufunc] = {
    arith.AddfOp: np.add,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MulfOp: np.multiply,
}


def _ins_outs(op: Structured) -> tuple[int, int]:
    if isinstance(op, linalg.ReduceOp):
        return 1, 1
    return len(op.inputs), len(op.outputs)


def output_dims(m: AffineMap) -> list[int] | None:
    """The loop dims an output's map names, or None unless they are distinct dims."""
    dims = [e.position for e in m.results if isinstance(e, AffineDimExpr)]
    return dims if len(dims) == len(m.results) == len(set(dims)) else None


def _dim_list(m: AffineMap) -> list[int] | None:
    """The loop dim of each result of ``m`` (repeats allowed: a diagonal), or None if a
    result is not a dim."""
    dims = [e.position for e in m.results if isinstance(e, AffineDimExpr)]
    return dims if len(dims) == len(m.results) else None


@dataclass(frozen=True)
class _Outside:
    """A body op's operand defined outside the op, read from the interpreter. Held as the
    body op (weakly) and the operand's index, not the value: a pass that moves the op and
    rewires what it captures (tp-relocate putting it in a section) leaves the plan valid."""

    op: weakref.ref[Operation]
    index: int

    def value(self) -> SSAValue:
        return _deref(self.op).operands[self.index]


# Where a body op's operand lives: a slot of the body's frame, or outside the op.
_Ref = int | _Outside
Index = Callable[[int], Any] | None  # a loop dim -> its values on the domain (linalg.index)


@dataclass(frozen=True)
class _Step:
    """One body op: how it is computed and where its operands live."""

    kernel: Kernel | None  # None: a linalg.index of ``index_dim``
    index_dim: int | None
    operands: tuple[_Ref, ...]
    slots: tuple[int, ...]


def _deref(ref: weakref.ref[Any]) -> Any:
    target = ref()
    if target is None:
        raise InterpretationError("linalg: IR its plan refers to no longer exists")
    return target


@dataclass(frozen=True)
class _Body:
    """An op's body as straight-line numpy calls over a frame of slots."""

    steps: tuple[_Step, ...]
    results: tuple[_Ref, ...]
    frame: int

    def run(self, interpreter: Interpreter, args: Sequence[Any], index: Index) -> list[Any]:
        """The body's yielded values (or a reduction's combined value) on whole arrays."""
        frame: list[Any] = [*args, *([None] * (self.frame - len(args)))]

        def get(ref: _Ref) -> Any:
            return frame[ref] if isinstance(ref, int) else interpreter.get_values([ref.value()])[0]

        for step in self.steps:
            if step.index_dim is not None:
                if index is None:
                    raise InterpretationError("linalg.index outside a linalg op's body")
                frame[step.slots[0]] = index(step.index_dim)
                continue
            assert step.kernel is not None
            value = step.kernel(*(get(r) for r in step.operands))
            if len(step.slots) == 1:
                frame[step.slots[0]] = value
            else:
                for slot, v in zip(step.slots, value, strict=True):
                    frame[slot] = v
        return [get(r) for r in self.results]


def _gather_kernel(t: Any, *indices: Any) -> Any:
    """``tensor.extract`` on arrays of indices (each element reads its own)."""
    idx = tuple(np.asarray(i, dtype=np.int64) for i in indices)
    for axis, (i, n) in enumerate(zip(idx, np.shape(t), strict=True)):
        if np.any((i < 0) | (i >= n)):
            raise InterpretationError(
                f"tensor.extract: an index along axis {axis} leaves 0..{n - 1}"
            )
    return np.asarray(t)[idx]


def _vector_kernel(op: Operation) -> Kernel | None:
    """The kernel of a body op on whole arrays, or None if it has none."""
    if op.regions:
        return None
    if isinstance(op, tensor.ExtractOp):
        return _gather_kernel
    return kernel_for(op)


def _compile_body(block: Block, n_in: int, stop: Operation | None) -> _Body | None:
    """The body up to its yield (or, for a reduction, up to ``stop``, returning the value
    ``stop`` combines with the accumulator); None when an op in it has no array kernel."""
    slots: dict[SSAValue, int] = {arg: i for i, arg in enumerate(block.args)}

    def ref(user: Operation, index: int) -> _Ref:
        slot = slots.get(user.operands[index])
        return _Outside(weakref.ref(user), index) if slot is None else slot

    steps = []
    for body_op in block.ops:
        if body_op is stop:
            acc = block.args[n_in]
            other = 1 if body_op.operands[0] is acc else 0
            return _Body(tuple(steps), (ref(body_op, other),), len(slots))
        if body_op is block.last_op and body_op.has_trait(IsTerminator):
            refs = tuple(ref(body_op, i) for i in range(len(body_op.operands)))
            return _Body(tuple(steps), refs, len(slots))
        index_dim = body_op.dim.value.data if isinstance(body_op, linalg.IndexOp) else None
        kernel = None if index_dim is not None else _vector_kernel(body_op)
        if kernel is None and index_dim is None:
            return None
        first = len(slots)
        for r in body_op.results:
            slots[r] = len(slots)
        operands = tuple(ref(body_op, i) for i in range(len(body_op.operands)))
        slot_range = tuple(range(first, len(slots)))
        steps.append(_Step(kernel, index_dim, operands, slot_range))
    raise InterpretationError("a body without a terminator")


def compile_region(block: Block) -> _Body | None:
    """``block`` (its arguments in, what its terminator hands on out) as numpy calls on
    whole arrays, or None when an op in it has no array kernel."""
    return _compile_body(block, 0, None)


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
        return None  # a diagonal: einsum reads it
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


@dataclass
class _Plan:
    """How to run one structured op, worked out once from its IR."""

    kind: str  # "contraction" | "reduction" | "map" | "loop"
    n_in: int
    rank: int
    maps: list[AffineMap]
    views: list[list[int] | None]  # per operand: the distinct loop dims it projects, or None
    out_dims: list[list[int]]  # per output: the loop dim of each of its axes
    out_dtypes: list[np.dtype]
    subscripts: str = ""
    factors: tuple[int, int] = (0, 0)  # input indices of a contraction's factors
    product_dtype: np.dtype | None = None  # what a contraction multiplies in
    matmuls: dict[tuple[tuple[int, ...], ...], _MatmulPlan | None] = field(default_factory=dict)
    ufunc: np.ufunc | None = None
    reduce_axes: tuple[int, ...] = ()
    body: _Body | None = None  # the body on arrays (None: the loop plan runs it by points)
    sizes: list[int] | None = None  # each loop's extent when every operand's type states it


_PLANS: weakref.WeakKeyDictionary[Operation, _Plan] = weakref.WeakKeyDictionary()


def _plan(op: Structured) -> _Plan:
    """``op``'s plan, made on first use and kept while ``op`` lives."""
    plan = _PLANS.get(op)
    if plan is None:
        plan = _PLANS[op] = _make_plan(op)
    return plan


def _body_block(op: Structured) -> Block:
    return op.region.block if isinstance(op, linalg.ReduceOp) else op.body.block


def _make_plan(op: Structured) -> _Plan:
    maps = list(loop_maps(op) or ())
    n_in, n_out = _ins_outs(op)
    rank = maps[0].num_dims if maps else 0
    out_dims = []
    for k, m in enumerate(maps[n_in:]):
        dims = output_dims(m)
        if dims is None:
            raise InterpretationError(
                f"{op.name}: output #{k}'s indexing map {m} is not a projection of distinct "
                "loop dims"
            )
        out_dims.append(dims)
    views = [output_dims(m) for m in maps]
    plan = _Plan(
        "loop",
        n_in,
        rank,
        maps,
        views,
        out_dims,
        [numpy_dtype(element_type(r.type)) for r in op.results],
    )
    shapes = [getattr(v.type, "get_shape", tuple)() for v in op.operands]
    if all(n >= 0 for shape in shapes for n in shape):
        plan.sizes = _static_sizes(plan, shapes)
    block = _body_block(op)
    followed = set.intersection(*(set(d) for d in out_dims)) if out_dims else set(range(rank))
    reduced = tuple(d for d in range(rank) if d not in followed)
    if not reduced:
        plan.kind, plan.body = "map", _compile_body(block, n_in, None)
        if plan.body is None:
            plan.kind = "loop"
        return plan
    plan.reduce_axes = reduced
    if isinstance(op, linalg.PoolingNchwMaxOp):
        # MLIR's meaning, out = max(out, input over the window): xDSL 0.75 builds this op's
        # body as max(input, window element), leaving the accumulator out.
        plan.kind, plan.ufunc, plan.body = "reduction", np.maximum, _Body((), (0,), n_in + 1)
        return plan
    if n_out == 1 and not isinstance(op, linalg.ReduceOp) and _contraction(op, plan):
        return plan
    yield_op = block.last_op
    if n_out == 1 and isinstance(yield_op, linalg.YieldOp) and len(yield_op.operands) == 1:
        acc = block.args[n_in]
        combine = yield_op.operands[0].owner
        if (
            type(combine) in _REDUCERS
            and isinstance(combine, Operation)
            and acc in combine.operands
            and all(use.operation is combine for use in acc.uses)
        ):
            body = _compile_body(block, n_in, combine)
            if body is not None:
                plan.kind, plan.ufunc, plan.body = "reduction", _REDUCERS[type(combine)], body
                return plan
    plan.body = _compile_body(block, n_in, None)
    return plan


def _contraction(op: LinalgStructuredOperation, plan: _Plan) -> bool:
    """Make ``plan`` a contraction's if ``op`` is one einsum can state: its factors read
    through dims, and every loop read by a factor."""
    kind = contraction(op)  # type: ignore[arg-type]
    if kind is None:
        return False
    factor_dims = [_dim_list(plan.maps[i]) for i in kind.factors]
    if any(d is None for d in factor_dims):
        return False
    covered = {d for dims in factor_dims for d in dims}  # type: ignore[union-attr]
    if covered != set(range(plan.rank)):
        return False
    letters = "abcdefghijklmnopqrstuvwxyz"
    if plan.rank > len(letters):
        return False
    subs = ["".join(letters[d] for d in dims) for dims in factor_dims]  # type: ignore[union-attr]
    out = "".join(letters[d] for d in plan.out_dims[0])
    plan.kind, plan.factors = "contraction", kind.factors
    plan.subscripts = f"{subs[0]},{subs[1]}->{out}"
    product = numpy_dtype(kind.product_type)
    plan.product_dtype = product if product.itemsize >= 4 else np.dtype(np.float32)
    return True


# -- running a plan --------------------------------------------------------------------------


def _static_sizes(plan: _Plan, shapes: Sequence[Sequence[int]]) -> list[int] | None:
    """Each loop's extent from the operands' static shapes, or None if they disagree."""
    sizes: list[int | None] = [None] * plan.rank
    for shape, m in zip(shapes, plan.maps, strict=True):
        for axis, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr) and axis < len(shape):
                d = e.position
                if sizes[d] not in (None, shape[axis]):
                    return None
                sizes[d] = shape[axis]
    return None if None in sizes else sizes  # type: ignore[return-value]


def _sizes(plan: _Plan, args: Sequence[Any], op: Operation) -> list[int]:
    """Each loop's extent, read off the operands' axes its maps name alone (the arrays':
    a type may leave a size dynamic, so only a plan of static types knows them); they
    must agree."""
    if plan.sizes is not None:
        return plan.sizes
    sizes: list[int | None] = [None] * plan.rank
    for k, (arr, m) in enumerate(zip(args, plan.maps, strict=True)):
        if not isinstance(arr, np.ndarray):
            continue
        for axis, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr):
                n, d = arr.shape[axis], e.position
                if sizes[d] is None:
                    sizes[d] = n
                elif sizes[d] != n:
                    raise InterpretationError(
                        f"{op.name}: loop d{d} runs {sizes[d]} times by one operand and {n} "
                        f"by operand #{k}"
                    )
    missing = [d for d, n in enumerate(sizes) if n is None]
    if missing:
        raise InterpretationError(f"{op.name}: no operand axis gives loop d{missing[0]}'s extent")
    return sizes  # type: ignore[return-value]


def axis_values(sizes: Sequence[int], dim: int) -> np.ndarray:
    """The values of loop ``dim`` on the domain: an arange along that axis, broadcastable."""
    shape = [1] * len(sizes)
    shape[dim] = sizes[dim]
    return np.arange(sizes[dim], dtype=np.int64).reshape(shape)


def _gather(arr: np.ndarray, m: AffineMap, sizes: Sequence[int], op: Operation) -> np.ndarray:
    """``arr`` read at ``m`` of every domain point (a map of repeated dims or expressions)."""
    loops = [axis_values(sizes, d) for d in range(len(sizes))]
    index = []
    for axis, e in enumerate(m.results):
        i = np.asarray(e.eval(loops, []), dtype=np.int64)
        n = arr.shape[axis]
        if i.size and (i.min() < 0 or i.max() >= n):
            raise InterpretationError(
                f"{op.name}: indexing map {m} reads axis {axis} outside 0..{n - 1}"
            )
        index.append(i)
    return arr[tuple(index)]


def _on_domain(
    arr: Any, dims: Sequence[int] | None, m: AffineMap, sizes: Sequence[int], op: Operation
) -> Any:
    """``arr`` viewed with one axis per loop dim (size 1 where it does not vary): a transpose
    and a reshape inserting unit axes, which numpy does without copying."""
    if not isinstance(arr, np.ndarray):
        return arr
    if dims is None:
        return _gather(arr, m, sizes, op)
    order = sorted(range(len(dims)), key=dims.__getitem__)
    view = arr.transpose(order) if order != list(range(len(dims))) else arr
    shape = [1] * len(sizes)
    for i in order:
        shape[dims[i]] = arr.shape[i]
    return view.reshape(shape)


def _from_domain(arr: np.ndarray, dims: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Domain-shaped ``arr`` (kept dims only, ascending) into an output laid out as ``dims``."""
    kept = sorted(dims)
    perm = [kept.index(d) for d in dims]
    moved = arr.transpose(perm) if perm != list(range(len(perm))) else arr
    return np.broadcast_to(moved, shape)


def _contract(plan: _Plan, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    key = (a.shape, b.shape)
    if key not in plan.matmuls:
        plan.matmuls[key] = _matmul_plan(plan.subscripts, a, b)
    mm = plan.matmuls[key]
    if mm is None:
        return np.einsum(plan.subscripts, a, b)
    product = np.matmul(
        a.transpose(mm.perm_a).reshape(mm.shape_a), b.transpose(mm.perm_b).reshape(mm.shape_b)
    )
    return product.reshape(mm.shape_out).transpose(mm.perm_out)


def run_structured(
    interpreter: Interpreter, op: Structured, args: Sequence[Any]
) -> tuple[np.ndarray, ...]:
    """The results of ``op`` on ``args`` (ins then outs), each in storage of its own."""
    plan = _plan(op)
    n_in = plan.n_in
    if plan.kind == "contraction":
        i, j = plan.factors
        a, b = (np.asarray(args[k], dtype=plan.product_dtype) for k in (i, j))
        product = _contract(plan, a, b)
        return (np.asarray(args[n_in] + product, dtype=plan.out_dtypes[0]),)
    sizes = _sizes(plan, args, op)
    if plan.body is None:
        return _run_points(interpreter, op, plan, args, sizes)
    views = [
        _on_domain(a, d, m, sizes, op) for a, d, m in zip(args, plan.views, plan.maps, strict=True)
    ]
    if plan.kind == "reduction":
        assert plan.ufunc is not None
        out = args[n_in]
        if any(sizes[d] == 0 for d in plan.reduce_axes):
            return (np.array(out, dtype=plan.out_dtypes[0]),)  # nothing to combine
        (value,) = plan.body.run(interpreter, views[:n_in], lambda d: axis_values(sizes, d))
        reduced = plan.ufunc.reduce(np.broadcast_to(value, sizes), axis=plan.reduce_axes)
        shaped = _from_domain(reduced, plan.out_dims[0], out.shape)
        return (np.asarray(plan.ufunc(out, shaped), dtype=plan.out_dtypes[0]),)
    if plan.kind == "map":
        values = plan.body.run(interpreter, views, lambda d: axis_values(sizes, d))
        values = _yielded(values, plan, op)
        return tuple(
            np.array(_from_domain(np.broadcast_to(v, sizes), dims, out.shape), dtype=dtype)
            for v, dims, out, dtype in zip(
                values, plan.out_dims, args[n_in:], plan.out_dtypes, strict=True
            )
        )
    found = argmax(op)
    if found is not None and _whole_array_argmax(plan, found, sizes):
        return _run_argmax(plan, found, args, sizes, views)
    return _run_loop(interpreter, op, plan, args, sizes, views)


def _whole_array_argmax(plan: _Plan, found: Argmax, sizes: Sequence[int]) -> bool:
    """Whether the greedy argmax ``found`` can run on whole arrays (`_run_argmax`): a constant
    offset, a non-empty reduced loop, and both outputs laid out alike."""
    dims = plan.out_dims
    return found.offset is not None and sizes[found.loop] > 0 and dims[0] == dims[1]


def _run_argmax(
    plan: _Plan, found: Argmax, args: Sequence[Any], sizes: list[int], views: list[Any]
) -> tuple[np.ndarray, ...]:
    """The greedy argmax on whole arrays, equal to its body folded point by point (the
    loop over a vocabulary would be one body run per logit): the largest value replaces the
    start only where it is strictly greater (``ogt``: a NaN never replaces, so NaNs count as
    -inf), with the first index of it (``argmax`` keeps the first of ties)."""
    assert found.offset is not None
    values = np.broadcast_to(views[0], sizes)
    if values.dtype.kind == "f":
        values = np.where(np.isnan(values), -np.inf, values)
    best = values.max(axis=found.loop)
    first = values.argmax(axis=found.loop) + found.offset
    start, index = args[plan.n_in], args[plan.n_in + 1]
    best_out = _from_domain(best, plan.out_dims[0], start.shape)
    first_out = _from_domain(first, plan.out_dims[1], index.shape)
    take = best_out > start
    return (
        np.where(take, best_out, start).astype(plan.out_dtypes[0]),
        np.where(take, first_out, index).astype(plan.out_dtypes[1]),
    )


def _yielded(values: list[Any], plan: _Plan, op: Operation) -> list[Any]:
    if len(values) != len(plan.out_dims):
        raise InterpretationError(
            f"{op.name}: its body yields {len(values)} values for {len(plan.out_dims)} outputs"
        )
    return values


def _at(view: Any, fixed: dict[int, int]) -> Any:
    """``view`` (one axis per loop dim) at the fixed loops, keeping every axis."""
    if not isinstance(view, np.ndarray):
        return view
    index = tuple(
        slice(fixed[d], fixed[d] + 1) if d in fixed and n > 1 else slice(None)
        for d, n in enumerate(view.shape)
    )
    return view[index]


def _fresh_outputs(plan: _Plan, args: Sequence[Any]) -> list[np.ndarray]:
    return [
        np.array(a, dtype=dtype, copy=True)
        for a, dtype in zip(args[plan.n_in :], plan.out_dtypes, strict=True)
    ]


def _run_loop(
    interpreter: Interpreter,
    op: Operation,
    plan: _Plan,
    args: Sequence[Any],
    sizes: list[int],
    views: list[Any],
) -> tuple[np.ndarray, ...]:
    """The loops some output does not follow one by one, in order; the body on arrays over
    the others (each output follows them all, so no two of their points meet)."""
    assert plan.body is not None
    outs = _fresh_outputs(plan, args)
    out_views = [
        _on_domain(o, d, m, sizes, op)
        for o, d, m in zip(outs, plan.out_dims, plan.maps[plan.n_in :], strict=True)
    ]
    followed = set.intersection(*(set(d) for d in plan.out_dims))
    seq = [d for d in range(plan.rank) if d not in followed]
    for point in itertools.product(*(range(sizes[d]) for d in seq)):
        fixed = dict(zip(seq, point, strict=True))
        current = [_at(v, fixed) for v in out_views]

        def index(d: int, fixed: dict[int, int] = fixed) -> Any:
            return np.int64(fixed[d]) if d in fixed else axis_values(sizes, d)

        ins = [_at(v, fixed) for v in views[: plan.n_in]]
        values = _yielded(plan.body.run(interpreter, [*ins, *current], index), plan, op)
        for cur, value in zip(current, values, strict=True):
            cur[...] = np.broadcast_to(value, cur.shape)
    return tuple(outs)


def points_of(interpreter: Interpreter) -> list[tuple[int, ...]]:
    """The stack of domain points a body is being run at, point by point (innermost last):
    what ``linalg.index`` reads there."""
    return vars(interpreter).setdefault("_tp_linalg_points", [])


def _run_points(
    interpreter: Interpreter, op: Structured, plan: _Plan, args: Sequence[Any], sizes: list[int]
) -> tuple[np.ndarray, ...]:
    """The loop nest as written: the body through the interpreter at every point, in order."""
    outs = _fresh_outputs(plan, args)
    stack = points_of(interpreter)
    region = op.region if isinstance(op, linalg.ReduceOp) else op.body
    for point in itertools.product(*(range(n) for n in sizes)):
        ins = []
        for arr, m in zip(args[: plan.n_in], plan.maps[: plan.n_in], strict=True):
            ins.append(arr[_element(arr, m, point, op)] if isinstance(arr, np.ndarray) else arr)
        where = [tuple(point[d] for d in dims) for dims in plan.out_dims]
        current = [o[w] for o, w in zip(outs, where, strict=True)]
        stack.append(point)
        try:
            values = interpreter.run_ssacfg_region(region, (*ins, *current), "linalg body")
        finally:
            stack.pop()
        for o, w, v in zip(outs, where, _yielded(list(values), plan, op), strict=True):
            o[w] = v
    return tuple(outs)


def _element(
    arr: np.ndarray, m: AffineMap, point: tuple[int, ...], op: Operation
) -> tuple[int, ...]:
    index = m.eval(point, [])
    for axis, (i, n) in enumerate(zip(index, arr.shape, strict=True)):
        if not 0 <= i < n:
            raise InterpretationError(
                f"{op.name}: indexing map {m} reads axis {axis} outside 0..{n - 1}"
            )
    return index
