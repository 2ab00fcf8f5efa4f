"""An all-gather carried as int8 with a per-block scale: tp-narrow-wire's ``wire=int8``.

Each chip quantizes the block it sends by its own per-tensor scale and the receivers
dequantize, exactly:

- ``amax_c = max |b_c|`` over the block (a ``linalg.generic`` reduction from 0),
  ``s_c = amax_c / 127`` (``1`` where ``amax_c`` is 0: an all-zero block);
- ``q_c = fptosi(clamp(roundeven(b_c / s_c), -127, 127))``, an ``i8`` block;
- the blocks and, along the gathered axis only, each block's scale (``s_c`` for each of its
  rows: an f32 vector as long as the block's rows) are all-gathered;
- the whole is ``sitofp(q) * s[row]``.

So each element moves as one byte plus a scale per row of the block, and is off by at most
half a step, ``amax_c / 254``, from the value sent. The shim says where a reader takes int8
(`Shim.activation`: sn40l-int8's matmuls, first operand): there it would quantize anyway.
"""

from __future__ import annotations

from xdsl.dialects import arith, math, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    Float32Type,
    FloatAttr,
    IntegerType,
    TensorType,
    f32,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from tp_dialect.attrs import SliceAttr, chip_of, on_chip
from tp_dialect.names import value_hint, value_name
from tp_dialect.scatter_ops import AllGatherOp

I8 = IntegerType(8)
STEPS = 127.0
"""The largest magnitude an int8 element carries (symmetric: -127..127)."""


def _const(value: float) -> arith.ConstantOp:
    return arith.ConstantOp(FloatAttr(value, Float32Type()))


def _generic(
    ins: list[SSAValue],
    outs: list[SSAValue],
    maps: list[AffineMap],
    iterators: list[str],
    body: Block,
) -> linalg.GenericOp:
    return linalg.GenericOp(
        ins,
        outs,
        Region(body),
        [AffineMapAttr(m) for m in maps],
        [
            IteratorTypeAttr.parallel() if i == "p" else IteratorTypeAttr.reduction()
            for i in iterators
        ],
        [o.type for o in outs],
    )


def _scale_of(amax: SSAValue, ops: list[Operation]) -> SSAValue:
    """``amax / 127``, or 1 where ``amax`` is 0 (ops appended to ``ops``)."""
    steps, zero, one = _const(STEPS), _const(0.0), _const(1.0)
    step = arith.DivfOp(amax, steps.result)
    some = arith.CmpfOp(amax, zero.result, "ogt")
    scale = arith.SelectOp(some.result, step.result, one.result)
    ops += [steps, zero, one, step, some, scale]
    return scale.result


def quantize(block: SSAValue, axis: int, ops: list[Operation]) -> tuple[SSAValue, SSAValue]:
    """Chip c's ``block``: its int8 block and its rows' scales (ops appended to ``ops``)."""
    t = block.type
    assert isinstance(t, TensorType)
    chip = chip_of(t)
    shape = list(t.get_shape())
    rank = len(shape)
    ident = AffineMap.identity(rank)
    scalar_t = on_chip(TensorType(f32, []), chip)
    # amax: every element of the block, into a 0-d tensor from 0.
    empty = tensor.EmptyOp([], scalar_t)
    zero = _const(0.0)
    start = linalg.FillOp((zero.result,), (empty.results[0],), (scalar_t,))
    body = Block(arg_types=[f32, f32])
    absf = math.AbsFOp(body.args[0])
    biggest = arith.MaximumfOp(body.args[1], absf.result)
    body.add_ops([absf, biggest, linalg.YieldOp(biggest.result)])
    amax = _generic(
        [block], [start.results[0]], [ident, AffineMap(rank, 0, ())], ["r"] * rank, body
    )
    amax.results[0].name_hint = value_hint(f"{value_name(block)}_amax")
    ops += [empty, zero, start, amax]
    # q = clamp(roundeven(b / s)), as i8.
    q_t = on_chip(TensorType(I8, shape), chip)
    q_empty = tensor.EmptyOp([], q_t)
    body = Block(arg_types=[f32, f32, I8])
    inner: list[Operation] = []
    scale = _scale_of(body.args[1], inner)
    lo, hi = _const(-STEPS), _const(STEPS)
    ratio = arith.DivfOp(body.args[0], scale)
    rounded = math.RoundEvenOp(ratio.result)
    low = arith.MaximumfOp(rounded.result, lo.result)
    clamped = arith.MinimumfOp(low.result, hi.result)
    cast = arith.FPToSIOp(clamped.result, I8)
    inner += [lo, hi, ratio, rounded, low, clamped, cast, linalg.YieldOp(cast.result)]
    body.add_ops(inner)
    quantized = _generic(
        [block, amax.results[0]],
        [q_empty.results[0]],
        [ident, AffineMap(rank, 0, ()), ident],
        ["p"] * rank,
        body,
    )
    ops += [q_empty, quantized]
    # The scale of each of the block's rows along the gathered axis.
    s_t = on_chip(TensorType(f32, [shape[axis]]), chip)
    s_empty = tensor.EmptyOp([], s_t)
    body = Block(arg_types=[f32, f32])
    inner = []
    rows_scale = _scale_of(body.args[0], inner)
    body.add_ops([*inner, linalg.YieldOp(rows_scale)])
    rows = _generic(
        [amax.results[0]],
        [s_empty.results[0]],
        [AffineMap(1, 0, ()), AffineMap.identity(1)],
        ["p"],
        body,
    )
    ops += [s_empty, rows]
    return quantized.results[0], rows.results[0]


def int8_gather(op: AllGatherOp) -> tuple[list[Operation], SSAValue]:
    """The statements replacing the f32 all-gather ``op`` (built, not inserted) and the value
    standing for its result: each block quantized on its chip, the int8 blocks and the
    rows' scales gathered, the whole dequantized."""
    axis = op.axis
    ops: list[Operation] = []
    blocks, scales = [], []
    for part in op.parts:
        q, s = quantize(part, axis, ops)
        q.name_hint = value_hint(f"{value_name(part)}_i8")
        s.name_hint = value_hint(f"{value_name(part)}_scale")
        blocks.append(q)
        scales.append(s)
    name = value_name(op.result)
    gathered = AllGatherOp(blocks, op.slices.data)
    gathered.result.name_hint = value_hint(f"{name}_i8")
    full = op.slices.data[0].full_shape
    row_slices = [SliceAttr(0, sl.ranges, [full[axis]]) for sl in op.slices.data]
    row_scales = AllGatherOp(scales, row_slices)
    row_scales.result.name_hint = value_hint(f"{name}_scale")
    ops += [gathered, row_scales]
    # The whole: each element times its row's scale.
    t = op.result.type
    assert isinstance(t, TensorType)
    rank = len(full)
    out = tensor.EmptyOp([], t)
    body = Block(arg_types=[I8, f32, f32])
    wide = arith.SIToFPOp(body.args[0], f32)
    value = arith.MulfOp(wide.result, body.args[1])
    body.add_ops([wide, value, linalg.YieldOp(value.result)])
    row: tuple[AffineExpr, ...] = (AffineExpr.dimension(axis),)
    dequantized = _generic(
        [gathered.result, row_scales.result],
        [out.results[0]],
        [AffineMap.identity(rank), AffineMap(rank, 0, row), AffineMap.identity(rank)],
        ["p"] * rank,
        body,
    )
    dequantized.results[0].name_hint = op.result.name_hint
    ops += [out, dequantized]
    return ops, dequantized.results[0]
