"""Structured control flow on the interpreter: scf, affine.apply/if and memref.alloca_scope.

A region op runs its region(s) through the interpreter, as MLIR defines them: ``scf.for``
from its lower bound while below its upper bound by its step (a step that is not positive
is refused: the loop would not end), ``scf.while`` its before region then, while the
condition holds, its after region, ``scf.parallel`` its body at every point in lexicographic
order, each point's ``scf.reduce`` operands folded into the accumulators by the reduction
regions, ``scf.if``/``scf.index_switch``/``affine.if`` the region chosen. Loops spend the
interpreter's iteration budget (`impl_state.MAX_LOOP_ITERATIONS`). Under storage semantics
a region op's results, and each iteration's loop-carried values, are buffers of their own: a
region op is no in-place update, so an update inside it never writes what is outside.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from xdsl.dialects import affine, memref, scf
from xdsl.interpreter import (
    Interpreter,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
)
from xdsl.ir import Region
from xdsl.ir.affine import AffineExpr
from xdsl.ir.affine.affine_set import AffineConstraintKind
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.runtime.impl_state import ImplState, own_storage


def _trips(lb: int, ub: int, step: int, op_name: str) -> range:
    if step <= 0:
        raise InterpretationError(
            f"{op_name}: step {step} is not positive (the loop would not end)"
        )
    return range(lb, ub, step)


def _affine(expr: AffineExpr, dims: list[int], symbols: list[int], op_name: str) -> int:
    try:
        return expr.eval(dims, symbols)
    except ZeroDivisionError:
        raise InterpretationError(f"{op_name}: an affine division by zero") from None


class ControlFunctions(ImplState):
    """scf, affine.apply/if/yield and memref.alloca_scope (see the module docstring)."""

    def _carried(self, values: PythonValues) -> tuple[Any, ...]:
        """Loop-carried values as the next iteration binds them."""
        return tuple(own_storage(v) for v in values) if self.storage else tuple(values)

    def _region(self, interpreter: Interpreter, region: Region, args: PythonValues, name: str):
        if not region.blocks:
            return ()
        results = interpreter.run_ssacfg_region(region, tuple(args), name)
        return tuple(self._fresh(v) for v in results)

    @impl(scf.ForOp)
    def run_for(self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues):
        steps = _trips(int(args[0]), int(args[1]), int(args[2]), op.name)
        self._iterate(op, len(steps))
        iv = numpy_dtype(op.lb.type).type
        values = self._carried(args[3:])
        for i in steps:
            values = interpreter.run_ssacfg_region(op.body, (iv(i), *values), "scf.for")
            values = self._carried(values)
        return values

    @impl(scf.WhileOp)
    def run_while(self, interpreter: Interpreter, op: scf.WhileOp, args: PythonValues):
        values = self._carried(args)
        while True:
            self._iterate(op)
            cond, *forwarded = interpreter.run_ssacfg_region(
                op.before_region, values, "scf.while before"
            )
            if not cond:
                return self._carried(forwarded)
            values = interpreter.run_ssacfg_region(
                op.after_region, self._carried(forwarded), "scf.while after"
            )
            values = self._carried(values)

    @impl(scf.IfOp)
    def run_if(self, interpreter: Interpreter, op: scf.IfOp, args: PythonValues):
        region = op.true_region if bool(args[0]) else op.false_region
        return self._region(interpreter, region, (), "scf.if")

    @impl(scf.ExecuteRegionOp)
    def run_execute_region(
        self, interpreter: Interpreter, op: scf.ExecuteRegionOp, args: PythonValues
    ):
        return self._region(interpreter, op.region, (), "scf.execute_region")

    @impl(scf.IndexSwitchOp)
    def run_index_switch(self, interpreter: Interpreter, op: scf.IndexSwitchOp, args: PythonValues):
        cases = list(op.cases.get_values())
        index = int(args[0])
        region = op.case_regions[cases.index(index)] if index in cases else op.default_region
        return self._region(interpreter, region, (), "scf.index_switch")

    @impl(scf.ParallelOp)
    def run_parallel(self, interpreter: Interpreter, op: scf.ParallelOp, args: PythonValues):
        n = len(op.lowerBound)
        ranges = [
            _trips(int(lb), int(ub), int(st), op.name)
            for lb, ub, st in zip(args[:n], args[n : 2 * n], args[2 * n : 3 * n], strict=True)
        ]
        self._iterate(op, math.prod(len(r) for r in ranges))
        acc = list(self._carried(args[3 * n :]))
        reduce_op = op.body.block.last_op
        for point in itertools.product(*ranges):
            ivs = tuple(np.int64(i) for i in point)
            values = interpreter.run_ssacfg_region(op.body, ivs, "scf.parallel")
            if not isinstance(reduce_op, scf.ReduceOp) or len(values) != len(acc):
                raise InterpretationError("scf.parallel: its body does not reduce every result")
            for k, value in enumerate(values):
                (acc[k],) = interpreter.run_ssacfg_region(
                    reduce_op.reductions[k], (acc[k], value), "scf.reduce"
                )
        return self._carried(acc)

    @impl_terminator(scf.YieldOp)
    def run_scf_yield(self, interpreter: Interpreter, op: scf.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl_terminator(scf.ConditionOp)
    def run_condition(self, interpreter: Interpreter, op: scf.ConditionOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl_terminator(scf.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: scf.ReduceOp, args: PythonValues):
        return ReturnedValues(args), ()  # the parallel op folds them (run_parallel)

    @impl_terminator(scf.ReduceReturnOp)
    def run_reduce_return(
        self, interpreter: Interpreter, op: scf.ReduceReturnOp, args: PythonValues
    ):
        return ReturnedValues(args), ()

    # -- affine --------------------------------------------------------------------------

    @impl(affine.ApplyOp)
    def run_affine_apply(self, interpreter: Interpreter, op: affine.ApplyOp, args: PythonValues):
        m = op.map.data
        values = [int(a) for a in args]
        dims, symbols = values[: m.num_dims], values[m.num_dims :]
        return (np.int64(_affine(m.results[0], dims, symbols, op.name)),)

    @impl(affine.IfOp)
    def run_affine_if(self, interpreter: Interpreter, op: affine.IfOp, args: PythonValues):
        s = op.condition.data
        values = [int(a) for a in args]
        dims, symbols = values[: s.num_dims], values[s.num_dims :]
        holds = True
        for c in s.constraints:
            lhs = _affine(c.lhs, dims, symbols, op.name)
            rhs = _affine(c.rhs, dims, symbols, op.name)
            if c.kind == AffineConstraintKind.eq:
                holds = holds and lhs == rhs
            elif c.kind == AffineConstraintKind.ge:
                holds = holds and lhs >= rhs
            else:
                holds = holds and lhs <= rhs
        region = op.then_region if holds else op.else_region
        return self._region(interpreter, region, (), "affine.if")

    @impl_terminator(affine.YieldOp)
    def run_affine_yield(self, interpreter: Interpreter, op: affine.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    # -- memref.alloca_scope: a region (its allocas are refused, so nothing is freed) -----

    @impl(memref.AllocaScopeOp)
    def run_alloca_scope(
        self, interpreter: Interpreter, op: memref.AllocaScopeOp, args: PythonValues
    ):
        return self._region(interpreter, op.scope, (), "memref.alloca_scope")

    @impl_terminator(memref.AllocaScopeReturnOp)
    def run_alloca_scope_return(
        self, interpreter: Interpreter, op: memref.AllocaScopeReturnOp, args: PythonValues
    ):
        return ReturnedValues(args), ()
