"""An int8 wire's scale, recognised exactly: the one reduction over a block's rows the
all-gather rule lets through (`blocks`), since it only sets how finely each element is
rounded.

The form is `passes.quantize`'s, op by op: ``amax = max(0, |b|)`` over every element of a
block ``b`` (a ``linalg.generic`` of reductions from a fill of 0), read only by

- the block's rounding: ``fptosi(min(max(roundeven(b / scale(amax)), -127), 127))`` to i8,
  element by element (``b`` by the identity, ``amax`` whole), and
- its rows' scales: ``scale(amax)`` broadcast over a vector,

where ``scale(a) = select(a > 0, a / 127, 1)``. Each element of the gathered tensor is then
``b`` at the same position rounded to a step of ``scale`` — within half a step, as a bf16
wire is within its rounding — whatever the other rows hold.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerType, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from tp_dialect.linalg_kinds import filled_with
from tp_dialect.ops import SectionOp, TransferOp, YieldOp

STEPS = 127.0

Exact = Callable[[SSAValue], SSAValue]
"""The value another hands on unchanged (through sections, copies, calls: the tracer's)."""


def _const(value: SSAValue, want: float) -> bool:
    op = value.owner
    return (
        isinstance(op, arith.ConstantOp)
        and isinstance(op.value, FloatAttr)
        and float(op.value.value.data) == want
    )


def _op(value: SSAValue, kind: type[Operation]) -> Operation | None:
    return value.owner if isinstance(value.owner, kind) else None


def _scale(value: SSAValue, arg: SSAValue) -> bool:
    """Whether ``value`` is ``select(arg > 0, arg / 127, 1)``."""
    pick = _op(value, arith.SelectOp)
    if not isinstance(pick, arith.SelectOp):
        return False
    test, step = _op(pick.cond, arith.CmpfOp), _op(pick.lhs, arith.DivfOp)
    return (
        isinstance(test, arith.CmpfOp)
        and test.predicate.value.data == 2  # ogt
        and test.lhs is arg
        and _const(test.rhs, 0.0)
        and isinstance(step, arith.DivfOp)
        and step.lhs is arg
        and _const(step.rhs, STEPS)
        and _const(pick.rhs, 1.0)
    )


def _yielded(op: linalg.GenericOp) -> SSAValue | None:
    last = op.body.block.last_op
    return (
        last.operands[0] if isinstance(last, linalg.YieldOp) and len(last.operands) == 1 else None
    )


def _maps(op: linalg.GenericOp) -> list[AffineMap]:
    return [m.data for m in op.indexing_maps]


def amax_of(value: SSAValue, exact: Exact) -> SSAValue | None:
    """The block ``value`` is ``max(0, |b|)`` of, over every element; else None."""
    op = value.owner
    if not isinstance(op, linalg.GenericOp) or len(op.inputs) != 1 or len(op.outputs) != 1:
        return None
    if any(str(it.data) != "reduction" for it in op.iterator_types.data):
        return None
    maps = _maps(op)
    if maps[1].results or filled_with(exact(op.outputs[0])) != 0.0:
        return None
    body = op.body.block
    top = _op(_yielded(op) or body.args[0], arith.MaximumfOp)
    if not isinstance(top, arith.MaximumfOp) or top.lhs is not body.args[1]:
        return None
    absf = _op(top.rhs, math.AbsFOp)
    if not isinstance(absf, math.AbsFOp) or absf.operand is not body.args[0]:
        return None
    if maps[0] != AffineMap.identity(maps[0].num_dims):
        return None
    return op.inputs[0]


def _rounds(op: Operation, block: SSAValue, amax: SSAValue, exact: Exact) -> bool:
    """Whether ``op`` is ``block``'s int8 rounding by ``scale(amax)``."""
    if not isinstance(op, linalg.GenericOp) or [exact(v) for v in op.inputs] != [block, amax]:
        return False
    out = op.outputs[0].type
    if not isinstance(out, TensorType) or out.element_type != IntegerType(8):
        return False
    maps = _maps(op)
    ident = AffineMap.identity(maps[0].num_dims)
    if maps[0] != ident or maps[1].results or maps[2] != ident:
        return False
    x, a = op.body.block.args[0], op.body.block.args[1]
    cast = _op(_yielded(op) or x, arith.FPToSIOp)
    hi = _op(cast.operands[0], arith.MinimumfOp) if cast else None
    lo = _op(hi.operands[0], arith.MaximumfOp) if hi else None
    rounded = _op(lo.operands[0], math.RoundEvenOp) if lo else None
    ratio = _op(rounded.operands[0], arith.DivfOp) if rounded else None
    return (
        isinstance(hi, arith.MinimumfOp)
        and _const(hi.operands[1], STEPS)
        and isinstance(lo, arith.MaximumfOp)
        and _const(lo.operands[1], -STEPS)
        and isinstance(ratio, arith.DivfOp)
        and ratio.lhs is x
        and _scale(ratio.rhs, a)
    )


def _spreads(op: Operation, amax: SSAValue, exact: Exact) -> bool:
    """Whether ``op`` is ``scale(amax)`` broadcast over a vector."""
    if not isinstance(op, linalg.GenericOp) or [exact(v) for v in op.inputs] != [amax]:
        return False
    maps = _maps(op)
    if maps[0].results or maps[1] != AffineMap.identity(maps[1].num_dims):
        return False
    arg = op.body.block.args[0]
    value = _yielded(op)
    return isinstance(arg, BlockArgument) and value is not None and _scale(value, arg)


def _readers(value: SSAValue) -> list[Operation]:
    """What computes with ``value``: its users, a section's yield followed to the section's
    result's users, a copy onto another chip (no computing) left out."""
    found: list[Operation] = []
    todo = [value]
    while todo:
        for use in todo.pop().uses:
            user = use.operation
            if isinstance(user, YieldOp) and isinstance(section := user.parent_op(), SectionOp):
                todo.append(section.results[use.index])
            elif not isinstance(user, TransferOp):
                found.append(user)
    return found


def is_int8_scale(amax: SSAValue, exact: Exact) -> bool:
    """Whether ``amax`` is a block's int8 scale in the module docstring's form, read by
    nothing else (``exact``: the tracer's, so a section or a copy between is seen through)."""
    block = amax_of(amax, exact)
    if block is None:
        return False
    block = exact(block)
    return all(
        _rounds(op, block, amax, exact) or _spreads(op, amax, exact) for op in _readers(amax)
    )
