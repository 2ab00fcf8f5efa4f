"""numpy-valued implementations, on xDSL's interpreter framework, of every op tp programs use.

Tensors are numpy arrays and scalars numpy scalars, so the same arith/math impls serve a
scalar statement and a ``linalg.generic`` body evaluated on whole arrays. tp's source ops
mean what docs/design.md §2 says: ``tp.shard`` cuts a slice (or returns the one the host already
placed on the chip), ``tp.unshard`` stores the chips' slices back, ``tp.allreduce`` is the
left fold of its partials in chip order.

Two semantics for in-place updates. *Value* semantics (the default): ``tensor.insert_slice``
returns an updated copy, so every SSA value keeps its contents forever and the order of
statements only matters through their operands. *Storage* semantics (``storage=True``): an
in-place update really overwrites the storage of its destination, as a chip holding a KV cache
in its memory does, so a reader of that storage that runs after the writer sees the new data —
which is how a wrong phase order shows in the numbers. Nothing else changes meaning: in
storage mode no result shares memory with an operand except an in-place update's with its
destination (extract_slice, reshapes, an all-reduce of one partial and ``tp.shard`` copy — a
shard is the host loading a slice into the chip's own memory), so only an in-place update
writes what another value reads; and linalg ``outs`` stay values in both (the generator
shares init tensors between ops).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
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

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.dtypes import numpy_dtype
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.linalg_exec import run_generic
from tp_dialect.runtime.progress import tick
from tp_dialect.runtime.scalar_ops import KERNEL_OPS, kernel_for, result_dtype

_DYNAMIC = -(2**63)


def own_storage(value: Any) -> Any:
    """``value`` in storage of its own (an array copied; a scalar is already a value)."""
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


def _run_kernel(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    kernel = kernel_for(op)
    assert kernel is not None
    return (kernel(*args),)


@register_impls
class NumpyFunctions(InterpreterFunctions):
    """arith, math, tensor, linalg and tp source ops on numpy values, with value semantics
    or (``storage=True``) storage semantics for in-place updates (see the module docstring)."""

    def __init__(
        self, placed: dict[ShardOp, np.ndarray] | None = None, storage: bool = False
    ) -> None:
        # Slices the host already loaded onto chips: tp.shard returns these, uncut.
        self.placed = placed if placed is not None else {}
        self.storage = storage

    def _fresh(self, value: Any) -> Any:
        """A result that may be a view of an operand, given storage of its own when in-place
        updates are real (a view would see a later update of the operand)."""
        return own_storage(value) if self.storage else value

    # -- arith / math ------------------------------------------------------------------

    # Every arith/math op with a numpy kernel (scalar_ops) runs through it.
    for _op in KERNEL_OPS:
        if _op is not arith.ConstantOp:
            locals()[f"run_{_op.name}"] = impl(_op)(_run_kernel)
    del _op

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        value = op.value
        if isinstance(value, DenseIntOrFPElementsAttr):
            t = value.type
            dtype = numpy_dtype(t.element_type)
            data = np.asarray(value.get_values(), dtype=dtype)
            shape = tuple(t.get_shape())
            return (np.full(shape, data[0], dtype) if data.size == 1 else data.reshape(shape),)
        kernel = kernel_for(op)
        if kernel is None:
            raise InterpretationError(f"arith.constant of {value} is not supported")
        return (kernel(),)

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
        index = _slice_index(op, args[1:], np.shape(args[0]))
        return (self._fresh(np.ascontiguousarray(args[0][index])),)

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
        index = _slice_index(op, args[2:], dest.shape)
        window = dest[index]
        if np.size(args[0]) != window.size:
            raise InterpretationError(
                f"'{op.name}': the source's {np.size(args[0])} elements do not fill the "
                f"{list(window.shape)} slice they are inserted into"
            )
        dest[index] = np.reshape(args[0], window.shape)
        return (dest,)

    @impl(tensor.ExpandShapeOp)
    def run_expand(self, interpreter: Interpreter, op: tensor.ExpandShapeOp, args: PythonValues):
        return (self._fresh(args[0].reshape(_shape(op))),)

    @impl(tensor.CollapseShapeOp)
    def run_collapse(
        self, interpreter: Interpreter, op: tensor.CollapseShapeOp, args: PythonValues
    ):
        return (self._fresh(args[0].reshape(_shape(op))),)

    @impl(tensor.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: tensor.ConcatOp, args: PythonValues):
        return (np.concatenate(args, axis=op.dim.value.data),)

    @impl(tensor.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        return (args[0][tuple(int(i) for i in args[1:])],)

    @impl(tensor.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tensor.SplatOp, args: PythonValues):
        return (np.full(_shape(op), args[0], result_dtype(op)),)

    # -- linalg ------------------------------------------------------------------------

    @impl(linalg.GenericOp)
    def run_generic(self, interpreter: Interpreter, op: linalg.GenericOp, args: PythonValues):
        results = run_generic(interpreter, op, args)
        tick(ran=1)
        return results

    @impl(linalg.IndexOp)
    def run_index(self, interpreter: Interpreter, op: linalg.IndexOp, args: PythonValues):
        raise InterpretationError("linalg.index outside a linalg.generic body")

    @impl_terminator(linalg.YieldOp)
    def run_linalg_yield(self, interpreter: Interpreter, op: linalg.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(linalg.FillOp)
    def run_fill(self, interpreter: Interpreter, op: linalg.FillOp, args: PythonValues):
        n_in = len(op.inputs)
        return tuple(np.full(out.shape, args[0], out.dtype) for out in args[n_in:])

    @impl(linalg.AddOp)
    def run_linalg_add(self, interpreter: Interpreter, op: linalg.AddOp, args: PythonValues):
        return (np.asarray(args[0] + args[1], dtype=result_dtype(op)),)

    # -- tp source ops -----------------------------------------------------------------

    @impl(ShardOp)
    def run_shard(self, interpreter: Interpreter, op: ShardOp, args: PythonValues):
        # In storage mode the chip gets its own copy (the host loads the slice into chip
        # memory), never a view of the host's array that an in-place update would write.
        if op in self.placed:
            return (self._fresh(self.placed[op]),)
        return (self._fresh(slice_of(args[0], op.slice.axis_index, op.slice.ranges)),)

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

    # -- tp spatial ops: one address space here, so a transfer or barrier changes nothing
    # (the multi-chip model is where memories are separate).

    @impl(SectionOp)
    def run_section(self, interpreter: Interpreter, op: SectionOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, (), "section")

    @impl_terminator(YieldOp)
    def run_yield(self, interpreter: Interpreter, op: YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(TransferOp)
    def run_transfer(self, interpreter: Interpreter, op: TransferOp, args: PythonValues):
        return ()

    @impl(BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: BarrierOp, args: PythonValues):
        return ()

    @impl(AllReduceOp)
    def run_allreduce(self, interpreter: Interpreter, op: AllReduceOp, args: PythonValues):
        total = args[0]
        for partial in args[1:]:
            total = total + partial  # the left fold, in chip order
        if len(args) == 1:
            total = self._fresh(total)  # one partial: the sum is stored apart from it
        return (np.asarray(total, dtype=result_dtype(op)),)


def _shape(op: Operation) -> tuple[int, ...]:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _slice_index(
    op: tensor.ExtractSliceOp | tensor.InsertSliceOp,
    dynamic: Sequence[Any],
    shape: Sequence[int],
) -> tuple[slice, ...]:
    """Offsets/sizes/strides (static, or the dynamic operands in order) as a numpy index
    into a tensor of ``shape``; InterpretationError when the slice leaves it (a dynamic
    offset, say a position, out of range: numpy would wrap a negative one silently)."""
    values = iter(int(v) for v in dynamic)
    offsets = [next(values) if o == _DYNAMIC else o for o in op.static_offsets.get_values()]
    sizes = [next(values) if s == _DYNAMIC else s for s in op.static_sizes.get_values()]
    strides = [next(values) if s == _DYNAMIC else s for s in op.static_strides.get_values()]
    if len(offsets) != len(shape):
        raise InterpretationError(
            f"'{op.name}': {len(offsets)} offsets for a tensor of rank {len(shape)}"
        )
    for axis, (o, s, st, n) in enumerate(zip(offsets, sizes, strides, shape, strict=True)):
        if s < 0 or st < 1 or o < 0 or (s > 0 and o + (s - 1) * st >= n):
            raise InterpretationError(
                f"'{op.name}': offset {o}, size {s}, stride {st} along axis {axis} leave "
                f"its {n} entries"
            )
    return tuple(slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides, strict=True))


class LocatingInterpreter(Interpreter):
    """xDSL's interpreter, whose failures at an op (an `InterpretationError`: a construct
    the runtime refuses, a slice out of range) name the op: a `RunError`."""

    def _run_op(self, op: Operation, inputs: PythonValues):  # noqa: ANN202 - xDSL's type
        try:
            return super()._run_op(op, inputs)
        except RunError:
            raise
        except InterpretationError as err:
            raise RunError(op, " ".join(str(err).split())) from None


class RunError(TpDiagnostic):
    """A program that cannot run at ``op`` (on these inputs): located by the tool."""
