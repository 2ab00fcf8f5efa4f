"""arith and math ops as numpy kernels: plain functions of their operand values.

One table serves both the interpreter's op implementations and the compiled bodies of
``linalg.generic`` (where the same kernels run on whole arrays), so an op means the same
thing wherever it appears.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype

Kernel = Callable[..., Any]

ELEMENTWISE: dict[type[Operation], Kernel] = {
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.AddiOp: np.add,
    arith.SubiOp: np.subtract,
    arith.MuliOp: np.multiply,
    arith.NegfOp: np.negative,
    arith.SelectOp: np.where,
    math.ExpOp: np.exp,
    math.SqrtOp: np.sqrt,
    math.RsqrtOp: lambda x: 1 / np.sqrt(x),
    math.CosOp: np.cos,
    math.SinOp: np.sin,
    math.TanhOp: np.tanh,
    math.LogOp: np.log,
    math.PowFOp: np.power,
}

_CMPI = {  # signed and unsigned predicates alike: values here are non-negative or signed
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
_CMPF = {  # ordered and unordered alike (the programs compare no NaNs)
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
CASTS = (arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, arith.IndexCastOp)
KERNEL_OPS: tuple[type[Operation], ...] = (
    *ELEMENTWISE,
    arith.CmpiOp,
    arith.CmpfOp,
    *CASTS,
    arith.ConstantOp,
)


def result_dtype(op: Operation) -> np.dtype:
    t = op.results[0].type
    return numpy_dtype(t.element_type if isinstance(t, TensorType) else t)


def kernel_for(op: Operation) -> Kernel | None:
    """The numpy function computing ``op``'s result from its operands, or None."""
    kind = type(op)
    if kind in ELEMENTWISE:
        return ELEMENTWISE[kind]
    if isinstance(op, arith.CmpiOp):
        return _CMPI[op.predicate.value.data]
    if isinstance(op, arith.CmpfOp):
        pred = op.predicate.value.data
        if pred not in _CMPF:
            raise InterpretationError(f"arith.cmpf predicate {pred} is not supported")
        return _CMPF[pred]
    if isinstance(op, CASTS):
        dtype = result_dtype(op)
        return lambda x: x.astype(dtype) if isinstance(x, np.ndarray) else dtype.type(x)
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr | IntegerAttr):
        value = result_dtype(op).type(op.value.value.data)
        return lambda: value
    return None
