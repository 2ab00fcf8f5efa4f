"""What the interpreter's op implementations share: the storage mode and the loop budget.

`NumpyFunctions` (and the op groups it is made of: `control_impls`, `tensor_impls`,
`view_impls`) run under one `ImplState`: whether in-place updates overwrite storage, and how
many more loop iterations the interpreter may run. The budget bounds work the input states:
a loop's trip count is a number in the program, and ``scf.while`` may never end, so an
interpreter runs at most `MAX_LOOP_ITERATIONS` iterations of ``scf.for``, ``scf.while`` and
``scf.parallel`` in all, refusing the loop that would run past it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import InterpreterFunctions
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

MAX_LOOP_ITERATIONS = 1 << 18
"""Loop iterations an interpreter runs in all (scf.for, scf.while, scf.parallel)."""


def own_storage(value: Any) -> Any:
    """``value`` in storage of its own (an array copied; a scalar is already a value)."""
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


class ImplState(InterpreterFunctions):
    """The storage mode and loop budget every op implementation of one interpreter reads."""

    storage: bool = False
    iterations_left: int = MAX_LOOP_ITERATIONS

    def _fresh(self, value: Any) -> Any:
        """A result that may be a view of an operand, given storage of its own when in-place
        updates are real (a view would see a later update of the operand)."""
        return own_storage(value) if self.storage else value

    def _iterate(self, op: Operation, count: int = 1) -> None:
        """Spend ``count`` loop iterations of the budget on ``op``, or refuse it."""
        if count > self.iterations_left:
            raise InterpretationError(
                f"{op.name} would run the interpreter past {MAX_LOOP_ITERATIONS} loop "
                "iterations in all (tp-run's bound on the work a program states)"
            )
        self.iterations_left -= count
