"""arith and math ops as numpy kernels: plain functions of their operand values.

One table serves both the interpreter's op implementations and the compiled bodies of
``linalg.generic`` (where the same kernels run on whole arrays), so an op means the same
thing wherever it appears. Floats follow IEEE as numpy computes them (``maximumf`` and
``minimumf`` propagate NaN, ``maxnumf`` and ``minnumf`` ignore it; ``cmpf``'s unordered
predicates hold where either operand is NaN); integers follow arith's two's complement
(`tp_dialect.runtime.int_ops`).
"""

from __future__ import annotations

import math as pymath
import weakref
from typing import Any

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Operation

from tp_dialect.dtypes import numpy_dtype
from tp_dialect.runtime.int_ops import INT_OPS, Kernel, element_type, int_kernel, width, wrap


def _out(value: Any, like: tuple[Any, ...]) -> Any:
    """``value``, a numpy scalar when every operand was one."""
    if any(isinstance(a, np.ndarray) for a in like):
        return np.asarray(value)
    return value[()] if isinstance(value, np.ndarray) else value


def _erf(x: Any) -> Any:
    dtype = np.asarray(x).dtype
    return _out(
        np.asarray(np.frompyfunc(pymath.erf, 1, 1)(x), dtype=np.float64).astype(dtype), (x,)
    )


def _round_half_away(x: Any) -> Any:
    """math.round: to the nearest integer, halves away from zero (numpy rounds them to even)."""
    t = np.trunc(x)
    return _out(np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(np.asarray(x).dtype), (x,))


def _rsqrt(x: Any) -> Any:
    return 1 / np.sqrt(x)


FLOAT_UNARY: dict[str, Kernel] = {
    "arith.negf": np.negative,
    "math.absf": np.abs,
    "math.acos": np.arccos,
    "math.acosh": np.arccosh,
    "math.asin": np.arcsin,
    "math.asinh": np.arcsinh,
    "math.atan": np.arctan,
    "math.atanh": np.arctanh,
    "math.cbrt": np.cbrt,
    "math.ceil": np.ceil,
    "math.cos": np.cos,
    "math.cosh": np.cosh,
    "math.erf": _erf,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.expm1": np.expm1,
    "math.floor": np.floor,
    "math.log": np.log,
    "math.log10": np.log10,
    "math.log1p": np.log1p,
    "math.log2": np.log2,
    "math.round": _round_half_away,
    "math.roundeven": np.rint,
    "math.rsqrt": _rsqrt,
    "math.sin": np.sin,
    "math.sinh": np.sinh,
    "math.sqrt": np.sqrt,
    "math.tan": np.tan,
    "math.tanh": np.tanh,
    "math.trunc": np.trunc,
}
FLOAT_BINARY: dict[str, Kernel] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "math.atan2": np.arctan2,
    "math.copysign": np.copysign,
    "math.powf": np.power,
}
# cmpf: (ordered comparison, holds where unordered): false, oeq, ogt, oge, olt, ole, one, ord,
# ueq, ugt, uge, ult, ule, une, uno, true.
_COMPARE = (np.equal, np.greater, np.greater_equal, np.less, np.less_equal, np.not_equal)


def _cmpf(op: arith.CmpfOp) -> Kernel:
    pred = op.predicate.value.data

    def kernel(a: Any, b: Any) -> Any:
        unordered = np.isnan(a) | np.isnan(b)
        if pred in (0, 15):
            value = np.broadcast_to(pred == 15, np.broadcast(a, b).shape)
        elif pred == 7:
            value = ~unordered
        elif pred == 14:
            value = unordered
        elif pred < 7:
            value = ~unordered & _COMPARE[pred - 1](a, b)
        else:
            value = unordered | _COMPARE[pred - 8](a, b)
        return _out(np.asarray(value), (a, b))

    return kernel


def result_dtype(op: Operation) -> np.dtype:
    """The numpy dtype of ``op``'s first result's elements."""
    return numpy_dtype(element_type(op.results[0].type))


def _astype(op: Operation) -> Kernel:
    dtype = result_dtype(op)

    def kernel(x: Any) -> Any:
        with np.errstate(over="ignore"):  # beyond the narrower type: inf, as IEEE rounds
            return _out(np.asarray(x).astype(dtype), (x,))

    return kernel


def _bitcast(op: Operation) -> Kernel:
    dtype = result_dtype(op)
    return lambda x: _out(np.asarray(x).view(dtype), (x,))


def _fma(op: Operation) -> Kernel:
    dtype = result_dtype(op)

    def kernel(a: Any, b: Any, c: Any) -> Any:
        wide = np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
        return _out(wide.astype(dtype), (a, b, c))

    return kernel


def _fpowi(op: Operation) -> Kernel:
    dtype = result_dtype(op)
    return lambda x, n: _out(np.power(np.asarray(x), np.asarray(n).astype(dtype)), (x, n))


def _select(c: Any, a: Any, b: Any) -> Any:
    return _out(np.where(c, a, b), (c, a, b))


def _constant(op: arith.ConstantOp) -> Kernel | None:
    value = op.value
    dtype = result_dtype(op)
    if isinstance(value, FloatAttr):
        held = dtype.type(value.value.data)
    elif isinstance(value, IntegerAttr) and not isinstance(op.result.type, TensorType):
        held = wrap(value.value.data, width(op.result.type), dtype)[()]
    else:
        return None
    return lambda: held


_KERNELS: weakref.WeakKeyDictionary[Operation, Kernel | None] = weakref.WeakKeyDictionary()


def cached_kernel(op: Operation) -> Kernel | None:
    """`kernel_for` ``op``, made once and kept while the op lives (a kernel closes over its
    types' widths and dtypes)."""
    try:
        return _KERNELS[op]
    except KeyError:
        kernel = _KERNELS[op] = kernel_for(op)
        return kernel


def kernel_for(op: Operation) -> Kernel | None:
    """The numpy function computing ``op``'s result (a tuple of them for an op of several
    results) from its operands, or None when ``op`` is no arith or math op of a kernel."""
    name = op.name
    if name in FLOAT_UNARY:
        return FLOAT_UNARY[name]
    if name in FLOAT_BINARY:
        return FLOAT_BINARY[name]
    if isinstance(op, arith.CmpfOp):
        return _cmpf(op)
    if isinstance(op, arith.SelectOp):
        return _select
    if isinstance(op, arith.ExtFOp | arith.TruncFOp):
        return _astype(op)
    if isinstance(op, arith.BitcastOp):
        return _bitcast(op)
    if isinstance(op, math.FmaOp):
        return _fma(op)
    if isinstance(op, math.FPowIOp):
        return _fpowi(op)
    if isinstance(op, arith.ConstantOp):
        return _constant(op)
    if op.dialect_name() in ("arith", "math"):
        return int_kernel(op)
    return None


_OTHER_FLOAT_OPS = frozenset(
    {
        "arith.cmpf",
        "arith.select",
        "arith.extf",
        "arith.truncf",
        "arith.bitcast",
        "arith.constant",
        "math.fma",
        "math.fpowi",
    }
)
KERNEL_OPS: tuple[type[Operation], ...] = tuple(
    op
    for dialect in (arith.Arith, math.Math)
    for op in dialect.operations
    if op.name in (FLOAT_UNARY.keys() | FLOAT_BINARY.keys() | _OTHER_FLOAT_OPS | INT_OPS)
)
"""Every arith and math op class with a kernel (the interpreter runs each through it)."""
