"""numpy-valued implementations, on xDSL's interpreter framework, of every op tp programs use.

Tensors are numpy arrays and scalars numpy scalars, so the same arith/math impls serve a
scalar statement and a ``linalg.generic`` body evaluated on whole arrays. tp's source ops
mean what docs/design.md §2 says: ``tp.shard`` cuts a slice (or returns the one the host already
placed on the chip), ``tp.unshard`` stores the chips' slices back, ``tp.allreduce`` is the
left fold of its partials in chip order, ``tp.reduce_scatter`` each chip's block of that fold,
``tp.all_gather`` its blocks concatenated.

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

from collections.abc import Collection

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.abstract_ops import LinalgStructuredOperation
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
    MaxLocOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.control_impls import ControlFunctions
from tp_dialect.runtime.impl_state import MAX_LOOP_ITERATIONS, own_storage
from tp_dialect.runtime.linalg_exec import points_of, run_structured
from tp_dialect.runtime.progress import tick
from tp_dialect.runtime.scalar_ops import KERNEL_OPS, cached_kernel, kernel_for, result_dtype
from tp_dialect.runtime.tensor_impls import TensorFunctions
from tp_dialect.runtime.view_impls import ViewFunctions
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp

# Every structured linalg op xDSL defines (generic and the named ops), run by its maps and
# body; linalg.reduce too, which xDSL does not make one.
STRUCTURED_OPS: tuple[type[Operation], ...] = (
    *(
        op
        for op in Linalg.operations
        if isinstance(op, type) and issubclass(op, LinalgStructuredOperation)
    ),
    linalg.ReduceOp,
)


def _run_kernel(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    kernel = cached_kernel(op)
    if kernel is None:
        raise InterpretationError(f"{op.name} of this type has no numpy kernel")
    value = kernel(*args)
    return tuple(value) if len(op.results) > 1 else (value,)


def _run_structured(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    results = run_structured(interpreter, op, args)  # type: ignore[arg-type]
    tick(ran=1)
    return results


@register_impls
class NumpyFunctions(ControlFunctions, TensorFunctions, ViewFunctions):
    """Every op the certificate admits (`tp_dialect.analysis.certify.provenance.admitted_kinds`) on
    numpy values — arith, math, tensor, linalg, scf, affine, bufferization, memref views,
    vector and tp's own ops — with value semantics or (``storage=True``) storage semantics
    for in-place updates (see the module docstring)."""

    def __init__(
        self,
        placed: dict[ShardOp, np.ndarray] | None = None,
        storage: bool = False,
        resident: bool = False,
        skipped: Collection[UnshardOp] = (),
    ) -> None:
        # Slices the host already loaded onto chips: tp.shard returns these, uncut. With
        # ``resident`` (a serving session) they ARE the chips' memory: returned as they are,
        # so an in-place cache update lands in the session's buffer; the host stores in
        # ``skipped`` are not run (the caches stay on their chips).
        self.placed = placed if placed is not None else {}
        self.storage = storage
        self.resident = resident
        self.skipped = frozenset(skipped)
        self.iterations_left = MAX_LOOP_ITERATIONS

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

    # -- linalg ------------------------------------------------------------------------

    for _op in STRUCTURED_OPS:
        if _op is not linalg.FillOp:
            locals()[f"run_{_op.name}"] = impl(_op)(_run_structured)
    del _op

    @impl(linalg.FillOp)  # its plan's answer, without running a body at every element
    def run_fill(self, interpreter: Interpreter, op: linalg.FillOp, args: PythonValues):
        n_in = len(op.inputs)
        return tuple(np.full(np.shape(out), args[0], out.dtype) for out in args[n_in:])

    @impl(linalg.BroadcastOp)
    def run_linalg_broadcast(
        self, interpreter: Interpreter, op: linalg.BroadcastOp, args: PythonValues
    ):
        source, init = args
        added = sorted(op.dimensions.get_values())
        expanded = np.expand_dims(source, tuple(added))
        return (np.array(np.broadcast_to(expanded, np.shape(init)), dtype=init.dtype),)

    @impl(linalg.IndexOp)
    def run_index(self, interpreter: Interpreter, op: linalg.IndexOp, args: PythonValues):
        points = points_of(interpreter)
        if not points:
            raise InterpretationError("linalg.index outside a linalg op's body")
        return (np.int64(points[-1][op.dim.value.data]),)

    @impl_terminator(linalg.YieldOp)
    def run_linalg_yield(self, interpreter: Interpreter, op: linalg.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    # -- tp source ops -----------------------------------------------------------------

    @impl(ShardOp)
    def run_shard(self, interpreter: Interpreter, op: ShardOp, args: PythonValues):
        # In storage mode the chip gets its own copy (the host loads the slice into chip
        # memory), never a view of the host's array that an in-place update would write.
        if op in self.placed:
            placed = self.placed[op]
            return (placed if self.resident else self._fresh(placed),)
        return (self._fresh(slice_of(args[0], op.slice.axis_index, op.slice.ranges)),)

    @impl(UnshardOp)
    def run_unshard(self, interpreter: Interpreter, op: UnshardOp, args: PythonValues):
        t = op.result.type
        assert isinstance(t, TensorType)
        if op in self.skipped:  # a cache handed back that the session keeps on the chips
            return (np.broadcast_to(np.zeros((), numpy_dtype(t.element_type)), t.get_shape()),)
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

    @impl(ReduceScatterOp)
    def run_reduce_scatter(self, interpreter: Interpreter, op: ReduceScatterOp, args: PythonValues):
        total = args[0]
        for partial in args[1:]:
            total = total + partial  # the left fold, in chip order, as tp.allreduce
        dtype = numpy_dtype(op.parts[0].type.element_type)  # type: ignore[attr-defined]
        total = np.asarray(total, dtype=dtype)
        # Each block stored apart: it lives on its own chip.
        return tuple(
            own_storage(slice_of(total, sl.axis_index, sl.ranges)) for sl in op.slices.data
        )

    @impl(AllGatherOp)
    def run_all_gather(self, interpreter: Interpreter, op: AllGatherOp, args: PythonValues):
        # The blocks are one run each, in chip order: the whole is their concatenation.
        return (np.concatenate([np.asarray(a) for a in args], axis=op.axis),)

    @impl(MaxLocOp)
    def run_maxloc(self, interpreter: Interpreter, op: MaxLocOp, args: PythonValues):
        n = len(op.values)
        best_value = np.array(args[0], copy=True)
        best_index = np.array(args[n], copy=True)
        for value, index in zip(args[1:n], args[n + 1 :], strict=True):
            # a larger value wins; an equal one only with a smaller index (MAXLOC)
            take = (value > best_value) | ((value == best_value) & (index < best_index))
            best_value = np.where(take, value, best_value)
            best_index = np.where(take, index, best_index)
        return (
            np.asarray(best_value, dtype=numpy_dtype(op.value.type.element_type)),  # type: ignore[attr-defined]
            np.asarray(best_index, dtype=numpy_dtype(op.index.type.element_type)),  # type: ignore[attr-defined]
        )


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


__all__ = ["LocatingInterpreter", "NumpyFunctions", "RunError", "own_storage"]
