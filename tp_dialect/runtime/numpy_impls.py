"""numpy-valued implementations, on xDSL's interpreter framework, of every op tp programs use.

Tensors are numpy arrays and scalars numpy scalars, so the same arith/math impls serve a
scalar statement and a ``linalg.generic`` body evaluated on whole arrays. tp's source ops
mean what DESIGN §2 says: ``tp.shard`` cuts a slice (or returns the one the host already
placed on the chip), ``tp.unshard`` stores the chips' slices back, ``tp.allreduce`` is the
left fold of its partials in chip order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, math, tensor
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.ops import AllReduceOp, ShardOp, UnshardOp
from tp_dialect.runtime.linalg_exec import loop_index, run_generic

_DYNAMIC = -(2**63)

_CMPI = {
    0: np.equal,
    1: np.not_equal,
    2: np.less,
    3: np.less_equal,
    4: np.greater,
    5: np.greater_equal,
    6: np.less,
    7: np.less_equal,
    8: np.greater,
    9: np.greater_equal,
}
_CMPF = {
    1: np.equal,
    2: np.greater,
    3: np.greater_equal,
    4: np.less,
    5: np.less_equal,
    6: np.not_equal,
    8: np.equal,
    9: np.greater,
    10: np.greater_equal,
    11: np.less,
    12: np.less_equal,
    13: np.not_equal,
}


def _result_dtype(op: Operation) -> np.dtype:
    t = op.results[0].type
    return numpy_dtype(t.element_type if isinstance(t, TensorType) else t)


def _cast(value: Any, dtype: np.dtype) -> Any:
    return value.astype(dtype) if isinstance(value, np.ndarray) else dtype.type(value)


def slice_of(full: np.ndarray, axis: int, ranges: Sequence[tuple[int, int]]) -> np.ndarray:
    """The ranges of ``full`` along ``axis``, concatenated in order (a TpSlice's meaning)."""
    parts = [full[(slice(None),) * axis + (slice(s, s + n),)] for s, n in ranges]
    return parts[0].copy() if len(parts) == 1 else np.concatenate(parts, axis=axis)


def _binary(ufunc: np.ufunc):  # noqa: ANN202 - impl factory
    def run(self: Any, interpreter: Interpreter, op: Operation, args: PythonValues) -> Any:
        return (ufunc(args[0], args[1]),)

    return run


def _unary(fn: Any):  # noqa: ANN202 - impl factory
    def run(self: Any, interpreter: Interpreter, op: Operation, args: PythonValues) -> Any:
        return (fn(args[0]),)

    return run


@register_impls
class NumpyFunctions(InterpreterFunctions):
    """arith, math, tensor, linalg and tp source ops on numpy values."""

    def __init__(self, placed: dict[ShardOp, np.ndarray] | None = None) -> None:
        # Slices the host already loaded onto chips: tp.shard returns these, uncut.
        self.placed = placed if placed is not None else {}

    # -- arith / math ------------------------------------------------------------------

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        value = op.value
        if isinstance(value, DenseIntOrFPElementsAttr):
            t = value.type
            dtype = numpy_dtype(t.element_type)
            data = np.asarray(value.get_values(), dtype=dtype)
            shape = tuple(t.get_shape())
            return (np.full(shape, data[0], dtype) if data.size == 1 else data.reshape(shape),)
        if isinstance(value, FloatAttr | IntegerAttr):
            return (_result_dtype(op).type(value.value.data),)
        raise InterpretationError(f"arith.constant of {value} is not supported")

    run_addf = impl(arith.AddfOp)(_binary(np.add))
    run_subf = impl(arith.SubfOp)(_binary(np.subtract))
    run_mulf = impl(arith.MulfOp)(_binary(np.multiply))
    run_divf = impl(arith.DivfOp)(_binary(np.divide))
    run_maxf = impl(arith.MaximumfOp)(_binary(np.maximum))
    run_minf = impl(arith.MinimumfOp)(_binary(np.minimum))
    run_addi = impl(arith.AddiOp)(_binary(np.add))
    run_subi = impl(arith.SubiOp)(_binary(np.subtract))
    run_muli = impl(arith.MuliOp)(_binary(np.multiply))
    run_negf = impl(arith.NegfOp)(_unary(np.negative))
    run_exp = impl(math.ExpOp)(_unary(np.exp))
    run_sqrt = impl(math.SqrtOp)(_unary(np.sqrt))
    run_rsqrt = impl(math.RsqrtOp)(_unary(lambda x: 1 / np.sqrt(x)))
    run_cos = impl(math.CosOp)(_unary(np.cos))
    run_sin = impl(math.SinOp)(_unary(np.sin))
    run_tanh = impl(math.TanhOp)(_unary(np.tanh))
    run_log = impl(math.LogOp)(_unary(np.log))
    run_powf = impl(math.PowFOp)(_binary(np.power))

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues):
        return (_CMPI[op.predicate.value.data](args[0], args[1]),)

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues):
        pred = op.predicate.value.data
        if pred not in _CMPF:
            raise InterpretationError(f"arith.cmpf predicate {pred} is not supported")
        return (_CMPF[pred](args[0], args[1]),)

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues):
        return (np.where(args[0], args[1], args[2]),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues):
        return (_cast(args[0], _result_dtype(op)),)

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues):
        return (_cast(args[0], _result_dtype(op)),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues):
        return (_cast(args[0], _result_dtype(op)),)

    @impl(arith.IndexCastOp)
    def run_index_cast(self, interpreter: Interpreter, op: arith.IndexCastOp, args: PythonValues):
        return (_cast(args[0], _result_dtype(op)),)

    # -- tensor ------------------------------------------------------------------------

    @impl(tensor.EmptyOp)
    def run_empty(self, interpreter: Interpreter, op: tensor.EmptyOp, args: PythonValues):
        t = op.tensor.type
        assert isinstance(t, TensorType)
        return (np.zeros(tuple(t.get_shape()), numpy_dtype(t.element_type)),)

    @impl(tensor.ExtractSliceOp)
    def run_extract_slice(
        self, interpreter: Interpreter, op: tensor.ExtractSliceOp, args: PythonValues
    ):
        index = _slice_index(op, args[1:])
        return (np.ascontiguousarray(args[0][index]),)

    @impl(tensor.InsertSliceOp)
    def run_insert_slice(
        self, interpreter: Interpreter, op: tensor.InsertSliceOp, args: PythonValues
    ):
        dest = args[1].copy()
        dest[_slice_index(op, args[2:])] = np.reshape(
            args[0], dest[_slice_index(op, args[2:])].shape
        )
        return (dest,)

    @impl(tensor.ExpandShapeOp)
    def run_expand(self, interpreter: Interpreter, op: tensor.ExpandShapeOp, args: PythonValues):
        return (args[0].reshape(_shape(op)),)

    @impl(tensor.CollapseShapeOp)
    def run_collapse(
        self, interpreter: Interpreter, op: tensor.CollapseShapeOp, args: PythonValues
    ):
        return (args[0].reshape(_shape(op)),)

    @impl(tensor.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: tensor.ConcatOp, args: PythonValues):
        return (np.concatenate(args, axis=op.dim.value.data),)

    @impl(tensor.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        return (args[0][tuple(int(i) for i in args[1:])],)

    @impl(tensor.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tensor.SplatOp, args: PythonValues):
        return (np.full(_shape(op), args[0], _result_dtype(op)),)

    # -- linalg ------------------------------------------------------------------------

    @impl(linalg.GenericOp)
    def run_generic(self, interpreter: Interpreter, op: linalg.GenericOp, args: PythonValues):
        def eval_body(values: list[Any], stop: Operation | None) -> list[Any]:
            return _eval_block(interpreter, op, values, stop)

        return run_generic(interpreter, op, args, eval_body)

    @impl(linalg.IndexOp)
    def run_index(self, interpreter: Interpreter, op: linalg.IndexOp, args: PythonValues):
        return (loop_index(interpreter, op.dim.value.data),)

    @impl_terminator(linalg.YieldOp)
    def run_linalg_yield(self, interpreter: Interpreter, op: linalg.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(linalg.FillOp)
    def run_fill(self, interpreter: Interpreter, op: linalg.FillOp, args: PythonValues):
        n_in = len(op.inputs)
        return tuple(np.full(out.shape, args[0], out.dtype) for out in args[n_in:])

    @impl(linalg.AddOp)
    def run_linalg_add(self, interpreter: Interpreter, op: linalg.AddOp, args: PythonValues):
        return (np.asarray(args[0] + args[1], dtype=_result_dtype(op)),)

    # -- tp source ops -----------------------------------------------------------------

    @impl(ShardOp)
    def run_shard(self, interpreter: Interpreter, op: ShardOp, args: PythonValues):
        if op in self.placed:
            return (self.placed[op],)
        return (slice_of(args[0], op.slice.axis_index, op.slice.ranges),)

    @impl(UnshardOp)
    def run_unshard(self, interpreter: Interpreter, op: UnshardOp, args: PythonValues):
        t = op.result.type
        assert isinstance(t, TensorType)
        full = np.empty(tuple(t.get_shape()), numpy_dtype(t.element_type))
        for part, sl in zip(args, op.slices.data, strict=True):
            index = [slice(None)] * len(full.shape)
            index[sl.axis_index] = sl.indices()  # type: ignore[call-overload]
            full[tuple(index)] = part
        return (full,)

    @impl(AllReduceOp)
    def run_allreduce(self, interpreter: Interpreter, op: AllReduceOp, args: PythonValues):
        total = args[0]
        for partial in args[1:]:
            total = total + partial  # the left fold, in chip order
        return (np.asarray(total, dtype=_result_dtype(op)),)


def _shape(op: Operation) -> tuple[int, ...]:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _slice_index(
    op: tensor.ExtractSliceOp | tensor.InsertSliceOp, dynamic: Sequence[Any]
) -> tuple[slice, ...]:
    """Offsets/sizes/strides (static, or the dynamic operands in order) as a numpy index."""
    values = iter(int(v) for v in dynamic)
    offsets = [next(values) if o == _DYNAMIC else o for o in op.static_offsets.get_values()]
    sizes = [next(values) if s == _DYNAMIC else s for s in op.static_sizes.get_values()]
    strides = [next(values) if s == _DYNAMIC else s for s in op.static_strides.get_values()]
    return tuple(slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides, strict=True))


def _eval_block(
    interpreter: Interpreter,
    op: linalg.GenericOp,
    values: list[Any],
    stop: Operation | None,
) -> list[Any]:
    """Run ``op``'s body on whole arrays; with ``stop``, return its non-accumulator operand."""
    block = op.body.block
    interpreter.push_scope("generic")
    try:
        interpreter.set_values(zip(block.args, values, strict=False))
        for body_op in block.ops:
            if body_op is stop:
                acc = block.args[len(op.inputs)]
                other = body_op.operands[1] if body_op.operands[0] is acc else body_op.operands[0]
                return [interpreter.get_values([other])[0]]
            if isinstance(body_op, linalg.YieldOp):
                return list(interpreter.get_values(body_op.operands))
            results = interpreter.run_op(body_op, interpreter.get_values(body_op.operands))
            interpreter.set_values(zip(body_op.results, results, strict=True))
    finally:
        interpreter.pop_scope()
    raise InterpretationError("linalg.generic body has no linalg.yield")
