"""What a ``linalg.generic`` is, said once: its loop domain, its reduction loops, whether it is
a contraction; how many bytes a tensor holds; and any linalg op as a loop nest (`loop_view`:
the named ops, ``linalg.reduce`` and ``linalg.broadcast`` too), whether it adds one term per
point to its accumulator (`sums_each_point`), and whether a value is zeros by construction.

The executor (`runtime.linalg_exec`), the cost model (`analysis.timing.cost`), the chip shims
(`shims`) and the pipeline figures (`analysis.schedule.stats`) all ask here, so they cannot
disagree.

A **contraction** is a generic that sums products of its inputs over its reduction loops::

    out[p] += a[..] * b[..]      (summed over every reduction loop)

Precisely: at least one reduction loop, one output, and a body that is exactly
``yield acc + x * y`` (``arith.addf`` of the accumulator and one ``arith.mulf``, in either
order), where ``x`` and ``y`` are input block arguments, each read directly or through one
``arith.extf``, and nothing else is in the body (no other op, no other use of the
accumulator or of the product). ``x`` and ``y`` may be the same input: a sum of squares
``acc + x * x`` (RMSNorm's) is the contraction of ``x`` with itself — 2 FLOPs a point, one
matrix product to run. A max of products, a sum of ``exp``, or a product behind any other
op is a plain reduction.

This module is IR level: it imports xDSL and tp's IR modules only, never an analysis, a
pass or the runtime.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from tp_dialect.dtypes import numpy_dtype

# -- tensors ---------------------------------------------------------------------------------


def elements(t: Attribute) -> int:
    """The number of elements of a value of type ``t``: its shape's product for a tensor, 1
    for a scalar."""
    return math.prod(t.get_shape()) if isinstance(t, TensorType) else 1


def nbytes(t: Attribute) -> int:
    """The bytes a value of type ``t`` holds: elements times element size for a tensor, 0 for
    a scalar (it lives in a register, not in HBM)."""
    if not isinstance(t, TensorType):
        return 0
    return _tensor_bytes(t)


@functools.lru_cache(maxsize=4096)
def _tensor_bytes(t: TensorType[Any]) -> int:
    # Asked for the same few types again and again (the model, per event): once each.
    return math.prod(t.get_shape()) * numpy_dtype(t.element_type).itemsize


# -- the loop domain -------------------------------------------------------------------------


def loop_ranges(op: linalg.GenericOp) -> tuple[int, ...]:
    """The static extent of each loop of ``op``'s iteration domain, in loop order.

    xDSL's `get_static_loop_ranges`: each loop's extent is read off the first operand axis
    its indexing maps index by that loop alone (the verifier guarantees there is one)."""
    return tuple(op.get_static_loop_ranges())


def domain_size(op: linalg.GenericOp) -> int:
    """The number of points of ``op``'s iteration domain (the product of its loop ranges)."""
    return math.prod(loop_ranges(op))


def reduction_axes(op: linalg.GenericOp) -> tuple[int, ...]:
    """The loops of ``op`` whose iterator type is ``reduction``, ascending."""
    iterators = op.get_iterator_types().data  # a named op states them by its kind
    return tuple(i for i, it in enumerate(iterators) if it.data == IteratorType.REDUCTION)


def reduces(op: linalg.GenericOp) -> bool:
    """Whether ``op`` has at least one reduction loop (it is a reduction or a contraction)."""
    return bool(reduction_axes(op))


def reduced_size(op: linalg.GenericOp) -> int:
    """How many points each output element sums over: the product of ``op``'s reduction
    loop ranges (1 for a map)."""
    ranges = loop_ranges(op)
    return math.prod(ranges[i] for i in reduction_axes(op))


# -- contractions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Contraction:
    """How a contraction reads its factors: ``out += in[factors[0]] * in[factors[1]]``."""

    factors: tuple[int, int]  # input indices of the two factors (equal for a sum of squares)
    product_type: Attribute  # the element type the multiply computes in (after any extf)


def contraction(op: linalg.GenericOp) -> Contraction | None:
    """``op``'s factors if it is a contraction (see the module docstring for the one
    definition), else None."""
    if not reduces(op) or len(op.outputs) != 1 or len(op.results) > 1:
        return None
    block = op.body.block
    n_in = len(op.inputs)
    yield_op = block.last_op
    if not isinstance(yield_op, linalg.YieldOp) or len(yield_op.operands) != 1:
        return None
    add = yield_op.operands[0].owner
    acc = block.args[n_in]
    if not isinstance(add, arith.AddfOp) or acc not in add.operands or not acc.has_one_use():
        return None
    product = add.rhs if add.lhs is acc else add.lhs
    mul = product.owner
    if not isinstance(mul, arith.MulfOp) or not product.has_one_use():
        return None
    a, b = (_input_through_extf(v, op) for v in (mul.lhs, mul.rhs))
    if a is None or b is None:
        return None
    rest = [o for o in block.ops if o not in (add, mul, yield_op)]
    if any(not isinstance(o, arith.ExtFOp) or o.result not in mul.operands for o in rest):
        return None  # other work than widening the factors
    return Contraction((a, b), mul.result.type)


def is_contraction(op: linalg.GenericOp) -> bool:
    """Whether ``op`` is a contraction (see the module docstring for the one definition)."""
    return contraction(op) is not None


def _input_through_extf(value: SSAValue, op: linalg.GenericOp) -> int | None:
    """The index of the input ``value`` reads, directly or through one ``arith.extf``."""
    if isinstance(value.owner, arith.ExtFOp):
        value = value.owner.input
    block = op.body.block
    if isinstance(value, BlockArgument) and value.block is block and value.index < len(op.inputs):
        return value.index
    return None


# -- any linalg op as loops ------------------------------------------------------------------


@dataclass(frozen=True)
class LoopView:
    """A linalg op as a loop nest: one indexing map per operand (inputs, then outputs), which
    loops reduce, each loop's static extent, and the body run at each point."""

    maps: tuple[AffineMap, ...]
    reduced: frozenset[int]
    extents: tuple[int, ...]
    n_inputs: int
    body: Block


def loop_view(op: Operation) -> LoopView | None:
    """``op`` as loops if it is a linalg op over static tensors with a body: every structured
    op (``linalg.generic`` and the named ops, whose bodies xDSL writes out), and
    ``linalg.reduce`` and ``linalg.broadcast``, which xDSL 0.75 does not make structured
    (their maps are read off their ``dimensions``); None for anything else."""
    if isinstance(op, linalg.LinalgStructuredOperation):
        maps = tuple(m.data for m in op.get_indexing_maps().data)
        iterators = op.get_iterator_types().data
        reduced = frozenset(
            i for i, it in enumerate(iterators) if it.data == IteratorType.REDUCTION
        )
        try:
            extents = tuple(op.get_static_loop_ranges())
        except Exception:  # a dynamic or inconsistent shape: no static loop nest
            return None
        if not op.regions or not op.regions[0].blocks:
            return None
        return LoopView(maps, reduced, extents, len(op.inputs), op.regions[0].block)
    if isinstance(op, linalg.ReduceOp | linalg.BroadcastOp):
        maps = loop_maps(op)
        source, target = op.operands[0].type, op.operands[1].type
        if maps is None or not isinstance(source, TensorType):
            return None
        assert isinstance(target, TensorType)
        loops = source if isinstance(op, linalg.ReduceOp) else target
        reducing = isinstance(op, linalg.ReduceOp)
        body = op.regions[0].block if op.regions and op.regions[0].blocks else Block()
        return LoopView(
            maps,
            frozenset(op.dimensions.get_values()) if reducing else frozenset(),
            tuple(loops.get_shape()),
            1,
            body,
        )
    return None


def loop_maps(op: Operation) -> tuple[AffineMap, ...] | None:
    """The indexing map of each operand of a linalg op (inputs, then outputs), whatever its
    shapes: a structured op's own; ``linalg.reduce``'s and ``linalg.broadcast``'s read off
    their ``dimensions`` (reduce: the loops are the input's axes, ``dimensions`` summed away
    from the output; broadcast: the output's axes, ``dimensions`` added to the input); None
    for anything else."""
    if isinstance(op, linalg.LinalgStructuredOperation):
        return tuple(m.data for m in op.get_indexing_maps().data)
    if isinstance(op, linalg.ReduceOp | linalg.BroadcastOp):
        source, target = op.operands[0].type, op.operands[1].type
        if not isinstance(source, TensorType) or not isinstance(target, TensorType):
            return None
        dims = set(op.dimensions.get_values())
        loops = source if isinstance(op, linalg.ReduceOp) else target
        rank = len(loops.get_shape())
        whole = AffineMap.identity(rank)
        part = AffineMap(
            rank, 0, tuple(AffineExpr.dimension(i) for i in range(rank) if i not in dims)
        )
        return (whole, part) if isinstance(op, linalg.ReduceOp) else (part, whole)
    return None


def sums_each_point(view: LoopView) -> bool:
    """Whether the op adds one term per point of its reduction loops to its accumulator and
    does nothing else with it: one output, and a body ending ``yield acc + t`` (``arith.addf``
    or ``addi``, in either order) where ``acc`` is used only there and ``t`` does not depend
    on it. Then the output is ``init + Σ t`` over the reduced points, so the sum over chips of
    partials over disjoint parts of the reduced domain is the sum over their union. A max, a
    product, or a body that overwrites the accumulator is not such a sum."""
    block = view.body
    yield_op = block.last_op
    n_out = len(view.maps) - view.n_inputs
    if n_out != 1 or not isinstance(yield_op, linalg.YieldOp) or len(yield_op.operands) != 1:
        return False
    if len(block.args) <= view.n_inputs:
        return False
    acc = block.args[view.n_inputs]
    add = yield_op.operands[0].owner
    if not isinstance(add, arith.AddfOp | arith.AddiOp) or acc not in add.operands:
        return False
    if not acc.has_one_use() or add.lhs is add.rhs:
        return False
    term = add.rhs if add.lhs is acc else add.lhs
    return acc not in _reaching(term, block)


def index_loops(view: LoopView) -> frozenset[int]:
    """The loops whose index the body reads (``linalg.index d``)."""
    return frozenset(op.dim.value.data for op in view.body.ops if isinstance(op, linalg.IndexOp))


def _reaching(value: SSAValue, block: Block) -> set[SSAValue]:
    """Every value of ``block`` that ``value`` is computed from (``value`` included)."""
    seen: set[SSAValue] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, Operation) and owner.parent_block() is block:
            todo.extend(owner.operands)
            for inner in owner.walk():
                todo.extend(inner.operands)  # what a nested region reads
    return seen


def is_zeros(value: SSAValue) -> bool:
    """Whether ``value`` is all zeros by how it is made: a ``linalg.fill`` of the constant 0,
    or a dense constant of zeros (``tensor.empty`` is not: its contents are undefined)."""
    owner = value.owner
    if isinstance(owner, linalg.FillOp):
        scalar = owner.inputs[0].owner
        return (
            isinstance(scalar, arith.ConstantOp)
            and isinstance(scalar.value, FloatAttr | IntegerAttr)
            and float(scalar.value.value.data) == 0.0
        )
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        return all(float(x) == 0.0 for x in owner.value.get_values())
    return False


def filled_with(value: SSAValue) -> float | None:
    """The one number every element of ``value`` holds by how it is made — a ``linalg.fill``
    of an ``arith.constant``, or a splat dense constant — else None (``tensor.empty``: its
    contents are undefined)."""
    owner = value.owner
    if isinstance(owner, linalg.FillOp):
        scalar = owner.inputs[0].owner
        constant = isinstance(scalar, arith.ConstantOp)
        if constant and isinstance(scalar.value, FloatAttr | IntegerAttr):
            return float(scalar.value.value.data)
        return None
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        if owner.value.is_splat():
            return float(owner.value.get_values()[0])
    return None


# -- argmax ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Argmax:
    """How an argmax reads: ``out = (max, index)`` over the reduced ``loop`` of input 0, the
    index being the loop index plus ``offset`` (an integer constant; 0 when none is added).
    Ties keep the first (smallest) index: the body replaces only on a strictly greater value."""

    loop: int
    offset: int | None  # None: an offset that is not a constant


def argmax(op: Operation) -> Argmax | None:
    """``op``'s argmax reading if it is the greedy head's argmax (the one form tp writes and
    recognises), else None: a ``linalg.generic`` with one input and two outputs (values, an
    integer index), one reduction loop, and a body that is exactly::

        %j = linalg.index <loop> ; %g = arith.index_cast %j [; %g2 = arith.addi %g, %off]
        %gt = arith.cmpf ogt, %v, %m
        linalg.yield select(%gt, %v, %m), select(%gt, %g, %i)
    """
    view = loop_view(op)
    if view is None or view.n_inputs != 1 or len(view.maps) != 3 or len(view.reduced) != 1:
        return None
    block = view.body
    if len(block.args) != 3:
        return None
    v, m, i = block.args
    yield_op = block.last_op
    if not isinstance(yield_op, linalg.YieldOp) or len(yield_op.operands) != 2:
        return None
    new_max, new_index = (x.owner for x in yield_op.operands)
    if not isinstance(new_max, arith.SelectOp) or not isinstance(new_index, arith.SelectOp):
        return None
    gt = new_max.cond.owner
    if (
        new_index.cond is not new_max.cond
        or not isinstance(gt, arith.CmpfOp)
        or gt.predicate.value.data != 2  # ogt
        or (gt.lhs, gt.rhs) != (v, m)
        or (new_max.lhs, new_max.rhs) != (v, m)
        or new_index.rhs is not i
    ):
        return None
    index, offset = new_index.lhs, 0
    if isinstance(index.owner, arith.AddiOp):
        add = index.owner
        index, other = add.lhs, add.rhs
        offset = _constant_int(other)
    cast = index.owner
    if not isinstance(cast, arith.IndexCastOp) or not isinstance(cast.input.owner, linalg.IndexOp):
        return None
    loop = cast.input.owner.dim.value.data
    if loop not in view.reduced:
        return None
    allowed = {yield_op, new_max, new_index, gt, cast, cast.input.owner}
    if isinstance(new_index.lhs.owner, arith.AddiOp):
        allowed.add(new_index.lhs.owner)
        if isinstance(new_index.lhs.owner.rhs.owner, arith.ConstantOp):
            allowed.add(new_index.lhs.owner.rhs.owner)
    if any(o not in allowed for o in block.ops):
        return None
    return Argmax(loop, offset)


def _constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None
