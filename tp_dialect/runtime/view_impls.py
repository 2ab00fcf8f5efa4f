"""Buffers and vectors on numpy arrays: bufferization, memref views, vector, casts.

A memref here is only ever a view of a tensor's data (``bufferization.to_buffer``): the
certificate refuses every op that writes memory or allocates it, and tp-run binds no memref
argument, so a memref is read-only data like a tensor and a vector is a small array. Each
result is storage of its own under storage semantics. What is undefined is refused, located
at the op: an index outside its buffer, a cast between types that do not hold the same
elements.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import bufferization, memref, vector
from xdsl.dialects.builtin import UnrealizedConversionCastOp
from xdsl.interpreter import Interpreter, PythonValues, impl
from xdsl.ir import Operation
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.op_guards import cast_meaning
from tp_dialect.runtime.impl_state import ImplState
from tp_dialect.runtime.int_ops import element_type
from tp_dialect.runtime.tensor_impls import (
    check_fits,
    dim_of,
    element_index,
    filled,
    rank_reduced,
    reshaped,
    slice_index,
    static_shape,
)


class ViewFunctions(ImplState):
    """bufferization, memref (read-only views), vector and unrealized casts."""

    # -- bufferization -------------------------------------------------------------------

    @impl(bufferization.ToBufferOp)
    def run_to_buffer(
        self, interpreter: Interpreter, op: bufferization.ToBufferOp, args: PythonValues
    ):
        return (self._fresh(args[0]),)

    @impl(bufferization.ToTensorOp)
    def run_to_tensor(
        self, interpreter: Interpreter, op: bufferization.ToTensorOp, args: PythonValues
    ):
        return (self._fresh(args[0]),)

    @impl(bufferization.AllocTensorOp)
    def run_alloc_tensor(
        self, interpreter: Interpreter, op: bufferization.AllocTensorOp, args: PythonValues
    ):
        if op.copy is not None:
            return (np.array(interpreter.get_values((op.copy,))[0], copy=True),)
        shape = filled(op, static_shape(op), args[: len(op.dynamic_sizes)])
        dtype = numpy_dtype(element_type(op.tensor.type))
        return (np.zeros(shape, dtype),)  # undefined contents, as tensor.empty's: zeros

    @impl(bufferization.MaterializeInDestinationOp)
    def run_materialize(
        self,
        interpreter: Interpreter,
        op: bufferization.MaterializeInDestinationOp,
        args: PythonValues,
    ):
        source, dest = args
        if np.shape(source) != np.shape(dest):
            raise InterpretationError(
                f"'{op.name}': a {list(np.shape(source))} source into a "
                f"{list(np.shape(dest))} destination"
            )
        return (np.array(source, dtype=np.asarray(dest).dtype, copy=True),)

    # -- memref: read-only views of tensors ------------------------------------------------

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues):
        return (args[0][element_index(op, args[1:], np.shape(args[0]))],)

    @impl(memref.DimOp)
    def run_memref_dim(self, interpreter: Interpreter, op: memref.DimOp, args: PythonValues):
        return (np.int64(dim_of(op, np.shape(args[0]), args[1])),)

    @impl(memref.RankOp)
    def run_rank(self, interpreter: Interpreter, op: memref.RankOp, args: PythonValues):
        return (np.int64(np.ndim(args[0])),)

    @impl(memref.CastOp)
    def run_memref_cast(self, interpreter: Interpreter, op: memref.CastOp, args: PythonValues):
        check_fits(op, args[0], op.dest.type)
        return (self._fresh(args[0]),)

    @impl(memref.MemorySpaceCastOp)
    def run_space_cast(
        self, interpreter: Interpreter, op: memref.MemorySpaceCastOp, args: PythonValues
    ):
        return (self._fresh(args[0]),)

    @impl(memref.AssumeAlignmentOp)
    def run_assume_alignment(
        self, interpreter: Interpreter, op: memref.AssumeAlignmentOp, args: PythonValues
    ):
        return (self._fresh(args[0]),)

    @impl(memref.SubviewOp)
    def run_subview(self, interpreter: Interpreter, op: memref.SubviewOp, args: PythonValues):
        index = slice_index(
            op,
            op.static_offsets.get_values(),
            op.static_sizes.get_values(),
            op.static_strides.get_values(),
            args[1:],
            np.shape(args[0]),
        )
        window = rank_reduced(op, args[0][index], static_shape(op))
        return (self._fresh(window),)

    @impl(memref.CollapseShapeOp)
    def run_memref_collapse(
        self, interpreter: Interpreter, op: memref.CollapseShapeOp, args: PythonValues
    ):
        source = args[0]
        groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
        shape = tuple(int(np.prod([source.shape[i] for i in g])) for g in groups)
        return (self._fresh(reshaped(op, source, shape)),)

    @impl(memref.ExpandShapeOp)
    def run_memref_expand(
        self, interpreter: Interpreter, op: memref.ExpandShapeOp, args: PythonValues
    ):
        shape = filled(op, op.static_output_shape.get_values(), args[1:])
        return (self._fresh(reshaped(op, args[0], shape)),)

    # -- vector -------------------------------------------------------------------------

    @impl(vector.BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: vector.BroadcastOp, args: PythonValues):
        shape = static_shape(op)
        return (np.array(np.broadcast_to(args[0], shape), copy=True),)

    @impl(vector.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: vector.ExtractOp, args: PythonValues):
        index = _position(op, op.static_position.get_values(), args[1:], np.shape(args[0]))
        value = args[0][index]
        return (np.array(value, copy=True) if isinstance(value, np.ndarray) else value,)

    @impl(vector.InsertOp)
    def run_insert(self, interpreter: Interpreter, op: vector.InsertOp, args: PythonValues):
        dest = np.array(args[1], copy=True)
        dest[_position(op, op.static_position.get_values(), args[2:], dest.shape)] = args[0]
        return (dest,)

    @impl(vector.FMAOp)
    def run_fma(self, interpreter: Interpreter, op: vector.FMAOp, args: PythonValues):
        a, b, c = (np.asarray(x, np.float64) for x in args)
        return ((a * b + c).astype(np.asarray(args[0]).dtype),)

    @impl(vector.ShuffleOp)
    def run_shuffle(self, interpreter: Interpreter, op: vector.ShuffleOp, args: PythonValues):
        v1, v2 = (np.atleast_1d(a) for a in args)
        both = np.concatenate([v1, v2], axis=0)
        mask = list(op.mask.get_values())
        if any(not 0 <= m < len(both) for m in mask):
            raise InterpretationError(f"'{op.name}': mask {mask} leaves 0..{len(both) - 1}")
        return (both[mask],)

    @impl(vector.TransferReadOp)
    def run_transfer_read(
        self, interpreter: Interpreter, op: vector.TransferReadOp, args: PythonValues
    ):
        source = np.asarray(args[0])
        starts = [int(i) for i in args[1 : 1 + len(op.indices)]]
        padding = args[1 + len(op.indices)]
        shape = static_shape(op)
        # Each source axis read at its start, plus the vector axis the map sends it to.
        index: list[Any] = [np.full([1] * len(shape), start, np.int64) for start in starts]
        for k, expr in enumerate(op.permutation_map.data.results):
            if isinstance(expr, AffineDimExpr):
                steps = np.arange(shape[k], dtype=np.int64).reshape(
                    [shape[k] if j == k else 1 for j in range(len(shape))]
                )
                index[expr.position] = index[expr.position] + steps
            elif not (isinstance(expr, AffineConstantExpr) and expr.value == 0):
                raise InterpretationError(f"'{op.name}': permutation map result {expr}")
        inside = np.ones(shape, bool)
        for axis, i in enumerate(index):
            inside &= (i >= 0) & (i < source.shape[axis])
        clipped = tuple(
            np.clip(i, 0, max(n - 1, 0)) for i, n in zip(index, source.shape, strict=True)
        )
        values = source[clipped] if source.size else np.zeros(shape, source.dtype)
        if op.mask is not None:
            inside &= np.asarray(interpreter.get_values((op.mask,))[0], bool)
        return (np.where(inside, values, padding).astype(source.dtype),)

    # -- builtin ------------------------------------------------------------------------

    @impl(UnrealizedConversionCastOp)
    def run_unrealized_cast(
        self, interpreter: Interpreter, op: UnrealizedConversionCastOp, args: PythonValues
    ):
        if (why := cast_meaning(op)) is not None:
            raise InterpretationError(f"'{op.name}' {why}")
        out = []
        for value, result in zip(args, op.results, strict=True):
            shape = getattr(result.type, "get_shape", None)
            if shape is not None and all(s >= 0 for s in shape()):
                value = reshaped(op, np.asarray(value), shape())
            out.append(self._fresh(value))
        return tuple(out)


def _position(
    op: Operation, static: tuple[int, ...], dynamic: PythonValues, shape: tuple[int, ...]
) -> tuple[int, ...]:
    """A vector.extract/insert position (static entries, dynamic ones in order), checked."""
    values = iter(int(v) for v in dynamic)
    index = tuple(next(values) if p < 0 else p for p in static)
    if len(index) > len(shape) or any(
        not 0 <= i < n for i, n in zip(index, shape[: len(index)], strict=True)
    ):
        raise InterpretationError(f"'{op.name}': position {list(index)} is outside {list(shape)}")
    return index
