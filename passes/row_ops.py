"""Ops made for some rows of what a statement computes, shared by tp-sequence-parallel's
rewrites (`row_pieces`, `tile_readers`): the same op on other operands, a window of a value's
rows, an accumulator's init made afresh for fewer rows."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import tensor
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from tp_dialect.attrs import on_chip


def same_op(op: Operation, operands: Sequence[SSAValue], types: Sequence[Attribute]) -> Operation:
    """``op`` again (its properties, attributes and a copy of its body) on ``operands``,
    making ``types``: each element computed as ``op`` computes it."""
    return type(op).create(
        operands=list(operands),
        result_types=list(types),
        properties=dict(op.properties),
        attributes=dict(op.attributes),
        regions=[r.clone() for r in op.regions],
    )


def loop_axes(op: linalg.GenericOp, d: int) -> list[int | None] | None:
    """Per operand of ``op``, the one axis it reads loop ``d`` by (None: it does not read
    it), or None when some operand reads it otherwise (in a compound index, or by two
    axes): the operands a window of ``d``'s range cuts, and where."""
    axes: list[int | None] = []
    for m in op.indexing_maps:
        results = m.data.results
        at = [i for i, r in enumerate(results) if d in r.used_dims()]
        if len(at) > 1 or (at and not isinstance(results[at[0]], AffineDimExpr)):
            return None
        axes.append(at[0] if at else None)
    return axes


def window(v: SSAValue, axis: int, start: int, rows: int, chip: int | None) -> Operation:
    """Rows ``[start, start + rows)`` of ``v`` along ``axis`` (typed as chip ``chip``'s)."""
    t = v.type
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    offsets = [0] * len(shape)
    offsets[axis], shape[axis] = start, rows
    return tensor.ExtractSliceOp.build(
        operands=[v, [], [], []],
        result_types=[on_chip(TensorType(t.element_type, shape), chip)],
        properties={
            "static_offsets": DenseArrayBase.from_list(i64, offsets),
            "static_sizes": DenseArrayBase.from_list(i64, shape),
            "static_strides": DenseArrayBase.from_list(i64, [1] * len(shape)),
        },
    )


def fresh_init(v: SSAValue, axis: int, rows: int, chip: int | None) -> list[Operation] | None:
    """The ops making an init of ``rows`` rows afresh, the last one's result the init, where
    ``v`` is an empty tensor or the fill of one (the init starts as ``v`` did); else None."""
    t = v.type
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    shape[axis] = rows
    fresh_t = on_chip(TensorType(t.element_type, shape), chip)
    owner = v.owner
    if isinstance(owner, tensor.EmptyOp):
        return [tensor.EmptyOp([], fresh_t)]
    if isinstance(owner, linalg.FillOp) and isinstance(owner.outputs[0].owner, tensor.EmptyOp):
        empty = tensor.EmptyOp([], fresh_t)
        return [empty, linalg.FillOp(tuple(owner.inputs), (empty.results[0],), (fresh_t,))]
    return None
