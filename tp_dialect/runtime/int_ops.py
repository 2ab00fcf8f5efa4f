"""Integer arith semantics on numpy: an ``iN`` is N bits, signless, wrapping; ``i1`` is bool.

A value of ``iN`` is held in the narrowest numpy integer of at least N bits (`dtypes`),
sign-extended from bit N-1, ``i1`` as a bool. Each op reads its operands signed or unsigned
as the op says (`signed`, `unsigned`: ``i1`` true is -1 signed and 1 unsigned), computes
exactly (int64 and uint64, Python integers where 128 bits are needed) and wraps the result
to its width (`wrap`): two's complement, as arith defines it. Division by zero (and the
signed division overflowing, MIN / -1) is undefined behaviour in arith: refused
(`InterpretationError`, located by the interpreter), never an arbitrary number. A shift by
the width or more is poison in arith; here it is the value shifting one bit at a time would
give (0, or the sign for an arithmetic right shift), one of the values poison may be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IndexType, IntegerType, TensorType, VectorType
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.dtypes import numpy_dtype

Kernel = Callable[..., Any]


def element_type(t: Attribute) -> Attribute:
    """The element type of a shaped type, or ``t`` itself."""
    return t.element_type if isinstance(t, TensorType | VectorType) else t  # type: ignore[union-attr]


def width(t: Attribute) -> int:
    """The bit width of an integer (or index: 64) element type of ``t``."""
    e = element_type(t)
    if isinstance(e, IndexType):
        return 64
    if isinstance(e, IntegerType):
        return e.width.data
    raise InterpretationError(f"{e} is not an integer type")


def _out(value: np.ndarray, like: tuple[Any, ...]) -> Any:
    """``value``, a numpy scalar when every operand was one (a 0-d array otherwise leaks)."""
    if any(isinstance(a, np.ndarray) for a in like):
        return value
    return value[()] if isinstance(value, np.ndarray) else value


def signed(x: Any, bits: int) -> np.ndarray:
    """``x`` (an ``i<bits>``) read as signed, in int64."""
    a = np.asarray(x)
    if a.dtype == np.bool_:
        return -a.astype(np.int64)
    v = a.astype(np.int64)
    if bits >= 64 or bits == 8 * a.dtype.itemsize:
        return v
    sign = 1 << (bits - 1)  # held in a wider integer: sign-extend from bit N-1
    return ((v & ((1 << bits) - 1)) ^ sign) - sign


def unsigned(x: Any, bits: int) -> np.ndarray:
    """``x`` (an ``i<bits>``) read as unsigned, in uint64."""
    a = np.asarray(x)
    if a.dtype == np.bool_:
        return a.astype(np.uint64)
    with np.errstate(over="ignore"):
        u = a.astype(np.int64).astype(np.uint64)
    return u if bits >= 64 else u & np.uint64((1 << bits) - 1)


def wrap(x: Any, bits: int, dtype: np.dtype) -> np.ndarray:
    """The exact integer(s) ``x`` taken modulo 2**bits, held as ``dtype`` (sign-extended)."""
    a = np.asarray(x)
    if a.dtype == object:  # exact products beyond 64 bits
        mask = (1 << bits) - 1
        a = np.vectorize(lambda v: ((int(v) & mask) ^ (1 << (bits - 1))) - (1 << (bits - 1)))(a)
        a = np.asarray(a, dtype=np.int64)
    if bits == 1:
        return (a.astype(np.int64) & 1).astype(np.bool_)
    with np.errstate(over="ignore"):
        if bits >= 64 or bits in (8, 16, 32):
            return a.astype(np.uint64 if a.dtype == np.uint64 else np.int64).astype(dtype)
        v = a.astype(np.int64) & ((1 << bits) - 1)
        sign = 1 << (bits - 1)
        return ((v ^ sign) - sign).astype(dtype)


def _nonzero(b: np.ndarray, name: str) -> None:
    if np.any(b == 0):
        raise InterpretationError(f"{name}: division by zero (undefined behaviour)")


def _binary(op: Operation, f: Callable[[np.ndarray, np.ndarray], Any], view: str) -> Kernel:
    """A two-operand op computing ``f`` on its operands read ``view`` (signed or unsigned),
    wrapped to its result's width."""
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))
    read = signed if view == "s" else unsigned

    def kernel(a: Any, b: Any) -> Any:
        with np.errstate(over="ignore"):
            return _out(wrap(f(read(a, bits), read(b, bits)), bits, dtype), (a, b))

    return kernel


def _division(op: Operation, kind: str) -> Kernel:
    name = op.name  # kernels keep no IR: a cached kernel must not keep its op alive
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))
    low = -(1 << (bits - 1))

    def kernel(a: Any, b: Any) -> Any:
        if kind.endswith("u"):
            x, y = unsigned(a, bits), unsigned(b, bits)
            _nonzero(y, name)
            q, r = x // y, x % y
            value = q + (r != 0).astype(np.uint64) if kind == "ceilu" else q if kind == "u" else r
        else:
            x, y = signed(a, bits), signed(b, bits)
            _nonzero(y, name)
            if kind != "rem" and np.any((x == low) & (y == -1)):
                raise InterpretationError(f"{name}: {low} / -1 overflows (undefined behaviour)")
            floor, mod = x // y, x % y
            if kind == "floor":
                value = floor
            elif kind == "ceil":
                value = floor + (mod != 0)
            elif kind == "rem":
                value = np.fmod(x, y)
            else:  # towards zero
                value = (x - np.fmod(x, y)) // y
        return _out(wrap(value, bits, dtype), (a, b))

    return kernel


def _shift(op: Operation, kind: str) -> Kernel:
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))

    def kernel(a: Any, b: Any) -> Any:
        n = unsigned(b, bits)
        big = n >= bits
        n = np.where(big, 0, n).astype(np.uint64)
        if kind == "shl":
            value = np.where(big, 0, unsigned(a, bits) << n)
        elif kind == "shrui":
            value = np.where(big, 0, unsigned(a, bits) >> n)
        else:
            x = signed(a, bits)
            value = np.where(big, np.where(x < 0, -1, 0), x >> n.astype(np.int64))
        return _out(wrap(value, bits, dtype), (a, b))

    return kernel


def _extended(op: Operation, kind: str) -> Kernel:
    """addui_extended (sum, carry), mului/mulsi_extended (low, high halves)."""
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))

    def kernel(a: Any, b: Any) -> Any:
        if kind == "add":
            x, y = unsigned(a, bits), unsigned(b, bits)
            with np.errstate(over="ignore"):
                total = x + y
            if bits < 64:
                carry = total >> np.uint64(bits) != 0
            else:
                carry = total < x
            return _out(wrap(total, bits, dtype), (a, b)), _out(carry, (a, b))
        read = unsigned if kind == "u" else signed
        x, y = read(a, bits).astype(object), read(b, bits).astype(object)
        product = x * y
        high = np.vectorize(lambda v: int(v) >> bits, otypes=[object])(product)
        return _out(wrap(product, bits, dtype), (a, b)), _out(wrap(high, bits, dtype), (a, b))

    return kernel


def _cmpi(op: Operation) -> Kernel:
    pred = op.predicate.value.data  # type: ignore[attr-defined]
    bits = width(op.operands[0].type)
    compare = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)
    f = compare[pred] if pred < 6 else compare[pred - 4]
    read = signed if pred < 6 else unsigned

    def kernel(a: Any, b: Any) -> Any:
        return _out(f(read(a, bits), read(b, bits)), (a, b))

    return kernel


def _convert(op: Operation, view: str) -> Kernel:
    """An integer conversion: the operand read ``view`` (s, u), wrapped to the result's
    width (an extension or truncation, an index cast), or converted to the result's float."""
    src_bits = width(op.operands[0].type)
    target = element_type(op.results[0].type)
    dtype = numpy_dtype(target)
    read = signed if view == "s" else unsigned
    is_int = isinstance(target, IntegerType | IndexType)
    bits = width(target) if is_int else 0

    def kernel(a: Any) -> Any:
        value = read(a, src_bits)
        out = wrap(value, bits, dtype) if is_int else value.astype(dtype)
        return _out(out, (a,))

    return kernel


def _float_to_int(op: Operation) -> Kernel:
    """fptosi/fptoui: towards zero; out of range is poison in arith (any value here)."""
    target = element_type(op.results[0].type)
    bits, dtype = width(target), numpy_dtype(target)

    def kernel(a: Any) -> Any:
        with np.errstate(invalid="ignore", over="ignore"):
            value = np.trunc(np.asarray(a, dtype=np.float64))
            value = np.nan_to_num(value, nan=0.0, posinf=0.0, neginf=0.0)
            exact = np.clip(value, -(2.0**63), 2.0**64 - 2**11)
            held = np.where(exact >= 2.0**63, (exact - 2.0**64), exact).astype(np.int64)
        return _out(wrap(held, bits, dtype), (a,))

    return kernel


def _bit_count(op: Operation, kind: str) -> Kernel:
    """math.ctpop / ctlz / cttz on the operand's bits."""
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))

    def kernel(a: Any) -> Any:
        u = unsigned(a, bits)
        set_bits = [(u >> np.uint64(i)) & np.uint64(1) for i in range(bits)]  # bit i
        if kind == "ctpop":
            count = sum(s.astype(np.int64) for s in set_bits)
        else:
            order = set_bits[::-1] if kind == "ctlz" else set_bits
            count = np.full(u.shape, bits, np.int64)
            for i in reversed(range(bits)):
                count = np.where(order[i] != 0, i, count)
        return _out(wrap(count, bits, dtype), (a,))

    return kernel


def _ipowi(op: Operation) -> Kernel:
    """math.ipowi: exact power wrapped; a negative exponent gives 1/x**n rounded towards
    zero (0 but for x = 1 and -1), division by zero refused."""
    name = op.name
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))
    mask = (1 << bits) - 1

    def power(x: int, n: int) -> int:
        if n >= 0:
            return pow(x, n, 1 << bits)
        if x == 0:
            raise InterpretationError(f"{name}: 0 to a negative power (division by zero)")
        return 1 if x == 1 else (1 if n % 2 == 0 else -1) if x == -1 else 0

    def kernel(a: Any, b: Any) -> Any:
        x, n = signed(a, bits), signed(b, bits)
        x, n = np.broadcast_arrays(x, n)
        flat = [power(int(p), int(q)) & mask for p, q in zip(x.ravel(), n.ravel(), strict=True)]
        value = np.array(flat, dtype=object).reshape(x.shape)
        return _out(wrap(value, bits, dtype), (a, b))

    return kernel


def _absi(op: Operation) -> Kernel:
    bits = width(op.operands[0].type)
    dtype = numpy_dtype(element_type(op.results[0].type))
    return lambda a: _out(wrap(np.abs(signed(a, bits)), bits, dtype), (a,))


_SIMPLE = {
    "arith.addi": (np.add, "s"),
    "arith.subi": (np.subtract, "s"),
    "arith.muli": (np.multiply, "s"),
    "arith.andi": (np.bitwise_and, "u"),
    "arith.ori": (np.bitwise_or, "u"),
    "arith.xori": (np.bitwise_xor, "u"),
    "arith.maxsi": (np.maximum, "s"),
    "arith.minsi": (np.minimum, "s"),
    "arith.maxui": (np.maximum, "u"),
    "arith.minui": (np.minimum, "u"),
}
_DIVISION = {
    "arith.divsi": "trunc",
    "arith.divui": "u",
    "arith.floordivsi": "floor",
    "arith.ceildivsi": "ceil",
    "arith.ceildivui": "ceilu",
    "arith.remsi": "rem",
    "arith.remui": "remu",
}
_SHIFTS = {"arith.shli": "shl", "arith.shrui": "shrui", "arith.shrsi": "shrsi"}
_EXTENDED = {
    "arith.addui_extended": "add",
    "arith.mului_extended": "u",
    "arith.mulsi_extended": "s",
}
_CONVERSIONS = {
    "arith.extsi": "s",
    "arith.extui": "u",
    "arith.trunci": "s",
    "arith.index_cast": "s",
    "arith.index_castui": "u",
    "arith.sitofp": "s",
    "arith.uitofp": "u",
}
_OTHERS: dict[str, Callable[[Operation], Kernel]] = {
    "arith.cmpi": _cmpi,
    "arith.fptosi": _float_to_int,
    "arith.fptoui": _float_to_int,
    "math.ctpop": lambda op: _bit_count(op, "ctpop"),
    "math.ctlz": lambda op: _bit_count(op, "ctlz"),
    "math.cttz": lambda op: _bit_count(op, "cttz"),
    "math.ipowi": _ipowi,
    "math.absi": _absi,
}
INT_OPS = frozenset((*_SIMPLE, *_DIVISION, *_SHIFTS, *_EXTENDED, *_CONVERSIONS, *_OTHERS))
"""The names of the ops `int_kernel` computes."""


def int_kernel(op: Operation) -> Kernel | None:
    """The kernel of an integer arith/math op (operands in, result or results out), or None."""
    name = op.name
    if name in _SIMPLE:
        return _binary(op, *_SIMPLE[name])
    if name in _DIVISION:
        return _division(op, _DIVISION[name])
    if name in _SHIFTS:
        return _shift(op, _SHIFTS[name])
    if name in _EXTENDED:
        return _extended(op, _EXTENDED[name])
    if name in _CONVERSIONS:
        return _convert(op, _CONVERSIONS[name])
    if name in _OTHERS:
        return _OTHERS[name](op)
    return None
