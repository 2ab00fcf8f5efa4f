"""What each op costs on a chip, from shapes alone: FLOPs and HBM bytes, timed by a roofline.

A ``linalg.generic`` runs over its iteration domain: a contraction is 2 FLOPs per point, a map
or reduction one per arith op of its body per point; its bytes are its tensor operands read
and its results written (a weight is read once per step, which is what bounds decode). Views
(reshapes, a chip's slice of a resident weight or cache) cost nothing; an in-place cache
update writes only its slice. All-reduce data movement is costed by the model (transfers or
the ring's alpha-beta), its adds here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.ops import AllReduceOp, SectionOp, ShardOp, UnshardOp, YieldOp
from tp_dialect.runtime.machine import Machine


@dataclass(frozen=True)
class Cost:
    """FLOPs and HBM bytes of some work."""

    flops: float = 0.0
    bytes: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes)

    def time(self, machine: Machine) -> float:
        """Roofline: bound by compute or by HBM bandwidth, whichever is slower."""
        return max(self.flops / machine.peak_flops, self.bytes / machine.hbm_bandwidth)


def nbytes(t: Attribute) -> int:
    """Bytes of a value of type ``t`` (0 for scalars)."""
    if not isinstance(t, TensorType):
        return 0
    return math.prod(t.get_shape()) * numpy_dtype(t.element_type).itemsize


def _elements(t: Attribute) -> int:
    return math.prod(t.get_shape()) if isinstance(t, TensorType) else 1


# No work of their own: views, allocations, terminators, host-side stores.
_VIEWS = (
    tensor.ExpandShapeOp,
    tensor.CollapseShapeOp,
    tensor.EmptyOp,
    ShardOp,
    UnshardOp,
    arith.ConstantOp,
    YieldOp,
)


def op_cost(op: Operation) -> Cost:
    """The cost of one statement-level op (inside a section, or a whole section)."""
    if isinstance(op, SectionOp):
        total = Cost()
        for inner in op.body.block.ops:
            total = total + op_cost(inner)
        return total
    if isinstance(op, _VIEWS):
        return Cost()
    if isinstance(op, linalg.GenericOp):
        domain = _domain(op)
        reads = sum(nbytes(v.type) for v in op.inputs)
        writes = sum(nbytes(r.type) for r in op.results)
        body = [o for o in op.body.block.ops if not isinstance(o, linalg.YieldOp)]
        arith_ops = sum(1 for o in body if not isinstance(o, arith.ExtFOp | arith.ConstantOp))
        per_point = 2 if _is_contraction(op) else max(arith_ops, 1)
        return Cost(per_point * domain, reads + writes)
    if isinstance(op, tensor.InsertSliceOp):
        return Cost(0, 2 * nbytes(op.source.type))
    if isinstance(op, AllReduceOp):
        n = len(op.partials)
        return Cost((n - 1) * _elements(op.result.type), (n + 1) * nbytes(op.result.type))
    if isinstance(op, linalg.FillOp):
        return Cost(0, sum(nbytes(r.type) for r in op.results))
    reads = sum(nbytes(v.type) for v in op.operands)
    writes = sum(nbytes(r.type) for r in op.results)
    elements = max((_elements(r.type) for r in op.results), default=0)
    return Cost(elements, reads + writes)


def _domain(op: linalg.GenericOp) -> int:
    maps = [m.data for m in op.indexing_maps.data]
    sizes = [1] * maps[0].num_dims
    for value, m in zip(op.operands, maps, strict=True):
        if isinstance(value.type, TensorType):
            for axis, expr in enumerate(m.results):
                position = getattr(expr, "position", None)
                if position is not None:
                    sizes[position] = value.type.get_shape()[axis]
    return math.prod(sizes)


def _is_contraction(op: linalg.GenericOp) -> bool:
    return (
        any(str(it.data) == "reduction" for it in op.iterator_types.data)
        and any(isinstance(o, arith.MulfOp) for o in op.body.block.ops)
        and len(op.inputs) == 2
        and not any(isinstance(o, arith.MaximumfOp) for o in op.body.block.ops)
    )
