"""The tensor dialect on numpy arrays: slices, reshapes, casts, padding, elements.

Shapes are read off the arrays and the op's dynamic operands, not only off the types (a
``tensor.cast`` may make a size dynamic). Under storage semantics ``tensor.insert_slice``
overwrites its destination's storage and its result IS that storage (`touch.storage` says
the same); every other op's result is storage of its own (a view would see a later update
of its operand). What arith leaves undefined is refused, located at the op: an index or a
slice outside its tensor (numpy would wrap a negative one silently), a reshape that changes
the number of elements, a cast to a shape the data does not have.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, ShapedType
from xdsl.interpreter import Interpreter, PythonValues, ReturnedValues, impl, impl_terminator
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.runtime.impl_state import ImplState
from tp_dialect.runtime.linalg_exec import axis_values, compile_region
from tp_dialect.runtime.scalar_ops import result_dtype


def static_shape(op: Operation) -> tuple[int, ...]:
    """``op``'s first result's shape as its type states it (-1 where dynamic)."""
    return tuple(op.results[0].type.get_shape())  # type: ignore[attr-defined]


def filled(op: Operation, shape: Sequence[int], dynamic: Sequence[Any]) -> tuple[int, ...]:
    """``shape`` with each dynamic entry (-1, or xDSL's marker) taken from ``dynamic`` in
    order; a negative size is refused."""
    if not dynamic and all(s >= 0 for s in shape):
        return tuple(shape)
    values = [int(v) for v in dynamic]
    if sum(s < 0 for s in shape) != len(values):
        raise InterpretationError(
            f"'{op.name}': {len(values)} sizes given for the dynamic sizes of {list(shape)}"
        )
    given = iter(values)
    out = tuple(next(given) if s < 0 else s for s in shape)
    if any(s < 0 for s in out):
        raise InterpretationError(f"'{op.name}': a negative size in {list(out)}")
    return out


def reshaped(op: Operation, value: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``value`` as ``shape``, refused when that changes the number of elements."""
    if math.prod(shape) != value.size:
        raise InterpretationError(
            f"'{op.name}': {list(value.shape)} has {value.size} elements, not the "
            f"{math.prod(shape)} of {list(shape)}"
        )
    return value.reshape(shape)


def check_fits(op: Operation, value: np.ndarray, t: Any) -> None:
    """Refuse ``value`` as a ``t`` when a static size of ``t`` is not ``value``'s."""
    if isinstance(t, ShapedType) and hasattr(t, "get_shape"):
        shape = t.get_shape()
        if len(shape) != value.ndim or any(
            s >= 0 and s != n for s, n in zip(shape, value.shape, strict=True)
        ):
            raise InterpretationError(f"'{op.name}': a {list(value.shape)} tensor is no {t}")


def slice_index(
    op: Operation,
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    dynamic: Sequence[Any],
    shape: Sequence[int],
) -> tuple[slice, ...]:
    """Offsets/sizes/strides (static, or the dynamic operands in order) as a numpy index
    into a tensor of ``shape``; InterpretationError when the slice leaves it (a dynamic
    offset, say a position, out of range: numpy would wrap a negative one silently)."""
    values = iter(int(v) for v in dynamic)
    offs = [next(values) if o == DYNAMIC_INDEX else o for o in offsets]
    szs = [next(values) if s == DYNAMIC_INDEX else s for s in sizes]
    sts = [next(values) if s == DYNAMIC_INDEX else s for s in strides]
    if len(offs) != len(shape):
        raise InterpretationError(
            f"'{op.name}': {len(offs)} offsets for a tensor of rank {len(shape)}"
        )
    for axis, (o, s, st, n) in enumerate(zip(offs, szs, sts, shape, strict=True)):
        if s < 0 or st < 1 or o < 0 or (s > 0 and o + (s - 1) * st >= n):
            raise InterpretationError(
                f"'{op.name}': offset {o}, size {s}, stride {st} along axis {axis} leave "
                f"its {n} entries"
            )
    return tuple(slice(o, o + s * st, st) for o, s, st in zip(offs, szs, sts, strict=True))


def rank_reduced(op: Operation, window: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A slice ``window`` as a result of ``shape``: a rank-reducing slice's type drops unit
    axes (which, the data's order does not say: any unit axes dropped give it)."""
    if len(shape) == window.ndim:
        return window
    dims = list(window.shape)
    while len(dims) > len(shape) and 1 in dims:
        dims.remove(1)
    if len(dims) != len(shape):
        raise InterpretationError(f"'{op.name}': a {list(window.shape)} slice is no {list(shape)}")
    return reshaped(op, window, dims)


def element_index(op: Operation, indices: Sequence[Any], shape: Sequence[int]) -> tuple[int, ...]:
    """``indices`` as a numpy index of one element of a tensor of ``shape``, or refused."""
    index = tuple(int(i) for i in indices)
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape, strict=True)):
        raise InterpretationError(f"'{op.name}': index {list(index)} is outside {list(shape)}")
    return index


def dim_of(op: Operation, shape: Sequence[int], index: Any) -> int:
    """The size of axis ``index`` of ``shape``, or refused (``tensor.dim``, ``memref.dim``)."""
    axis = int(index)
    if not 0 <= axis < len(shape):
        raise InterpretationError(f"'{op.name}' of axis {axis} of a rank-{len(shape)} value")
    return shape[axis]


def _slice_of(op: tensor.ExtractSliceOp | tensor.InsertSliceOp, dynamic: Sequence[Any], shape):
    return slice_index(
        op,
        op.static_offsets.get_values(),
        op.static_sizes.get_values(),
        op.static_strides.get_values(),
        dynamic,
        shape,
    )


class TensorFunctions(ImplState):
    """The tensor dialect's ops (see the module docstring)."""

    @impl(tensor.EmptyOp)
    def run_empty(self, interpreter: Interpreter, op: tensor.EmptyOp, args: PythonValues):
        shape = filled(op, static_shape(op), args)
        return (np.zeros(shape, result_dtype(op)),)

    @impl(tensor.ExtractSliceOp)
    def run_extract_slice(
        self, interpreter: Interpreter, op: tensor.ExtractSliceOp, args: PythonValues
    ):
        index = _slice_of(op, args[1:], np.shape(args[0]))
        window = rank_reduced(op, args[0][index], static_shape(op))
        return (self._fresh(np.ascontiguousarray(window)),)

    @impl(tensor.InsertSliceOp)
    def run_insert_slice(
        self, interpreter: Interpreter, op: tensor.InsertSliceOp, args: PythonValues
    ):
        # Storage semantics: the destination's own storage is overwritten, and the result
        # IS that storage (touch.storage says the same); value semantics: an updated copy.
        dest = args[1] if self.storage else args[1].copy()
        if not dest.flags.writeable:
            raise InterpretationError(
                f"tensor.insert_slice into %{op.dest.name_hint or '?'}: its storage is "
                "read-only, so it cannot be updated in place"
            )
        window = dest[_slice_of(op, args[2:], dest.shape)]
        if np.size(args[0]) != window.size:
            raise InterpretationError(
                f"'{op.name}': the source's {np.size(args[0])} elements do not fill the "
                f"{list(window.shape)} slice they are inserted into"
            )
        window[...] = np.reshape(args[0], window.shape)
        return (dest,)

    @impl(tensor.ExpandShapeOp)
    def run_expand(self, interpreter: Interpreter, op: tensor.ExpandShapeOp, args: PythonValues):
        shape = filled(op, op.static_output_shape.get_values(), args[1:])
        return (self._fresh(reshaped(op, args[0], shape)),)

    @impl(tensor.CollapseShapeOp)
    def run_collapse(
        self, interpreter: Interpreter, op: tensor.CollapseShapeOp, args: PythonValues
    ):
        source = args[0]
        groups = [[int(i.value.data) for i in g.data] for g in op.reassociation.data]
        shape = tuple(math.prod(source.shape[i] for i in g) for g in groups)
        return (self._fresh(reshaped(op, source, shape)),)

    @impl(tensor.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: tensor.ReshapeOp, args: PythonValues):
        shape = tuple(int(s) for s in np.asarray(args[1]).ravel())
        if any(s < 0 for s in shape):
            raise InterpretationError(f"'{op.name}': a negative size in {list(shape)}")
        return (self._fresh(reshaped(op, args[0], shape)),)

    @impl(tensor.CastOp)
    def run_cast(self, interpreter: Interpreter, op: tensor.CastOp, args: PythonValues):
        check_fits(op, args[0], op.dest.type)
        return (self._fresh(args[0]),)

    @impl(tensor.DimOp)
    def run_dim(self, interpreter: Interpreter, op: tensor.DimOp, args: PythonValues):
        return (np.int64(dim_of(op, np.shape(args[0]), args[1])),)

    @impl(tensor.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: tensor.ConcatOp, args: PythonValues):
        return (np.concatenate(args, axis=op.dim.value.data),)

    @impl(tensor.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        return (args[0][element_index(op, args[1:], np.shape(args[0]))],)

    @impl(tensor.InsertOp)
    def run_insert(self, interpreter: Interpreter, op: tensor.InsertOp, args: PythonValues):
        dest = np.array(args[1], copy=True)  # no in-place update (only insert_slice is one)
        dest[element_index(op, args[2:], dest.shape)] = args[0]
        return (dest,)

    @impl(tensor.FromElementsOp)
    def run_from_elements(
        self, interpreter: Interpreter, op: tensor.FromElementsOp, args: PythonValues
    ):
        data = np.array(args, dtype=result_dtype(op))
        return (reshaped(op, data, static_shape(op)),)

    @impl(tensor.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tensor.SplatOp, args: PythonValues):
        return (np.full(filled(op, static_shape(op), args[1:]), args[0], result_dtype(op)),)

    @impl(tensor.PadOp)
    def run_pad(self, interpreter: Interpreter, op: tensor.PadOp, args: PythonValues):
        source = args[0]
        rank = source.ndim
        n_low = len(op.low)
        low = filled(op, op.static_low.get_values(), args[1 : 1 + n_low])
        high = filled(op, op.static_high.get_values(), args[1 + n_low :])
        shape = tuple(n + lo + hi for n, lo, hi in zip(source.shape, low, high, strict=True))
        inside = tuple(slice(lo, lo + n) for lo, n in zip(low, source.shape, strict=True))
        out = np.empty(shape, result_dtype(op))
        body = compile_region(op.region.block)
        if body is not None:  # the padding on the whole result at once, as arrays
            (value,) = body.run(interpreter, [axis_values(shape, d) for d in range(rank)], None)
            out[...] = np.broadcast_to(value, shape)
        else:
            for point in itertools.product(*(range(n) for n in shape)):
                if all(s.start <= i < s.stop for i, s in zip(point, inside, strict=True)):
                    continue
                ivs = tuple(np.int64(i) for i in point)
                (out[point],) = interpreter.run_ssacfg_region(op.region, ivs, "tensor.pad")
        out[inside] = source
        return (out,)

    @impl_terminator(tensor.YieldOp)
    def run_tensor_yield(self, interpreter: Interpreter, op: tensor.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()
