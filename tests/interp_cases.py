# ruff: noqa: E501  (IR text is written out one op per line)
"""Programs with their plain-numpy answers: one or more per op class the certificate admits.

A `Case` is a small MLIR program (its entry ``@main``), its inputs by argument name, and the
result each output (``result0``, ``result1`` ...) must have, computed here in plain numpy or
Python integers — never by the interpreter under test. `tests/test_interpreter_ops.py`
runs every case and checks that, together, they contain every op class provenance admits.

This module (arith and math, every op on whole arrays in a ``linalg.generic`` body and on
scalars) and `interp_cases_ops` (the rest) hold the cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes  # noqa: F401 - bf16 for numpy
import numpy as np


@dataclass(frozen=True)
class Case:
    """A program, its inputs, and the plain-numpy result of each of its outputs."""

    name: str
    text: str
    inputs: dict[str, Any]
    expected: list[Any]
    rtol: float = 1e-6
    certified: bool = True  # tp-verify certifies it (else: refused, and said why)
    extra: dict[str, Any] = field(default_factory=dict)


ID1 = "affine_map<(d0) -> (d0)>"
N = 6


def _map_program(op: str, types: list[str], result: str, attrs: str = "") -> str:
    """``@main(xs..., scalars...)``: ``op`` on whole tensors (a generic's body) and on the
    scalars given; returns (tensor result, scalar result)."""
    args = ", ".join(f"%x{i}: tensor<{N}x{t}>" for i, t in enumerate(types))
    scalars = ", ".join(f"%s{i}: {t}" for i, t in enumerate(types))
    ins = ", ".join(f"%x{i}" for i in range(len(types)))
    in_types = ", ".join(f"tensor<{N}x{t}>" for t in types)
    block = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    operands = ", ".join(f"%a{i}" for i in range(len(types)))
    scalar_ops = ", ".join(f"%s{i}" for i in range(len(types)))
    sig = _op_types(op, types, result)
    maps = ", ".join([ID1] * (len(types) + 1))
    return f"""
func.func @main({args}, {scalars}) -> (tensor<{N}x{result}>, {result}) {{
  %e = tensor.empty() : tensor<{N}x{result}>
  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel"]}} ins({ins} : {in_types}) outs(%e : tensor<{N}x{result}>) {{
  ^bb0({block}, %o: {result}):
    %v = {op} {operands}{attrs} : {sig}
    linalg.yield %v : {result}
  }} -> tensor<{N}x{result}>
  %u = {op} {scalar_ops}{attrs} : {sig}
  func.return %r, %u : tensor<{N}x{result}>, {result}
}}
"""


# Ops whose custom syntax names every type (a cast, a select, fpowi) or only the operand's.
_CASTS = {
    "arith.extf",
    "arith.truncf",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fptosi",
    "arith.fptoui",
    "arith.index_cast",
    "arith.trunci",
    "arith.extui",
    "arith.bitcast",
}


def _op_types(op: str, types: list[str], result: str) -> str:
    if op in _CASTS:
        return f"{types[0]} to {result}"
    if op == "arith.select":
        return types[1]
    if op == "math.fpowi":
        return f"{types[0]}, {types[1]}"
    if op.startswith("arith.cmp"):
        return types[0]
    return types[0]


def _elementwise(
    name: str,
    op: str,
    types: list[str],
    result: str,
    inputs: list[np.ndarray],
    reference: Callable[..., Any],
    attrs: str = "",
    rtol: float = 1e-6,
) -> Case:
    """``op`` on N-element tensors and on their first elements, against ``reference`` (a
    plain numpy function of the inputs, elementwise)."""
    values = {f"x{i}": a for i, a in enumerate(inputs)}
    values.update({f"s{i}": a[0] for i, a in enumerate(inputs)})
    want = reference(*inputs)
    return Case(
        name,
        _map_program(op, types, result, attrs),
        values,
        [want, want[0]],
        rtol,
    )


F32 = np.float32
_X = np.array([-2.5, -1.25, -0.5, 0.5, 1.5, 2.5], F32)
_UNIT = np.array([-0.9, -0.5, -0.1, 0.2, 0.6, 0.95], F32)
_POS = np.array([0.25, 0.5, 1.0, 2.0, 3.5, 10.0], F32)
_GE1 = np.array([1.0, 1.25, 2.0, 3.0, 5.0, 9.0], F32)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x], F32)


def _round_away(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(F32)


FLOAT_UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], np.ndarray]] = {
    "arith.negf": (lambda x: -x, _X),
    "math.absf": (np.abs, _X),
    "math.acos": (np.arccos, _UNIT),
    "math.acosh": (np.arccosh, _GE1),
    "math.asin": (np.arcsin, _UNIT),
    "math.asinh": (np.arcsinh, _X),
    "math.atan": (np.arctan, _X),
    "math.atanh": (np.arctanh, _UNIT),
    "math.cbrt": (np.cbrt, _X),
    "math.ceil": (np.ceil, _X),
    "math.cos": (np.cos, _X),
    "math.cosh": (np.cosh, _X),
    "math.erf": (_erf, _X),
    "math.exp": (np.exp, _X),
    "math.exp2": (lambda x: 2.0**x, _X),
    "math.expm1": (np.expm1, _X),
    "math.floor": (np.floor, _X),
    "math.log": (np.log, _POS),
    "math.log10": (np.log10, _POS),
    "math.log1p": (np.log1p, _POS),
    "math.log2": (np.log2, _POS),
    "math.round": (_round_away, _X),
    "math.roundeven": (np.round, _X),  # numpy rounds halves to even
    "math.rsqrt": (lambda x: 1 / np.sqrt(x), _POS),
    "math.sin": (np.sin, _X),
    "math.sinh": (np.sinh, _X),
    "math.sqrt": (np.sqrt, _POS),
    "math.tan": (np.tan, _UNIT),
    "math.tanh": (np.tanh, _X),
    "math.trunc": (np.trunc, _X),
}

_A = np.array([1.5, -2.0, np.nan, 4.0, -0.5, 3.0], F32)
_B = np.array([0.5, 3.0, 1.0, np.nan, -0.25, 3.0], F32)
FLOAT_BINARY: dict[str, tuple[Callable[..., np.ndarray], np.ndarray, np.ndarray]] = {
    "arith.addf": (lambda a, b: a + b, _A, _B),
    "arith.subf": (lambda a, b: a - b, _A, _B),
    "arith.mulf": (lambda a, b: a * b, _A, _B),
    "arith.divf": (lambda a, b: a / b, _A, _B),
    # NaN-propagating max/min, and the ones that take the number over a NaN
    "arith.maximumf": (
        lambda a, b: np.where(np.isnan(a) | np.isnan(b), np.nan, np.maximum(a, b)),
        _A,
        _B,
    ),
    "arith.minimumf": (
        lambda a, b: np.where(np.isnan(a) | np.isnan(b), np.nan, np.minimum(a, b)),
        _A,
        _B,
    ),
    "arith.maxnumf": (
        lambda a, b: np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.maximum(a, b))),
        _A,
        _B,
    ),
    "arith.minnumf": (
        lambda a, b: np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.minimum(a, b))),
        _A,
        _B,
    ),
    "math.atan2": (np.arctan2, _X, _POS),
    "math.copysign": (lambda a, b: np.abs(a) * np.where(np.signbit(b), -1, 1), _X, _UNIT),
    "math.powf": (lambda a, b: a**b, _POS, _X),
}

# -- integers: the reference in Python integers, wrapped to the width by hand -----------------


def wrap(v: int, bits: int) -> int:
    """``v`` modulo 2**bits, as a signed ``i<bits>``."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def unsigned(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def _ints(f: Callable[[int, int], int], bits: int = 32) -> Callable[..., np.ndarray]:
    def ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.array([wrap(f(int(x), int(y)), bits) for x, y in zip(a, b, strict=True)], a.dtype)

    return ref


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


I32 = np.int32
_IA = np.array([7, -7, 2**31 - 1, -(2**31), 100, -1], I32)
_IB = np.array([2, 2, 1, 3, -7, 5], I32)
_SH = np.array([1, 3, 31, 4, 0, 40], I32)  # 40: beyond the width
INT_BINARY: dict[str, tuple[Callable[[int, int], int], np.ndarray, np.ndarray]] = {
    "arith.addi": (lambda a, b: a + b, _IA, _IB),
    "arith.subi": (lambda a, b: a - b, _IA, _IB),
    "arith.muli": (lambda a, b: a * b, _IA, _IB),
    "arith.divsi": (_trunc_div, _IA, _IB),
    "arith.divui": (lambda a, b: unsigned(a, 32) // unsigned(b, 32), _IA, _IB),
    "arith.floordivsi": (lambda a, b: a // b, _IA, _IB),
    "arith.ceildivsi": (lambda a, b: -((-a) // b), _IA, _IB),
    "arith.ceildivui": (lambda a, b: -((-unsigned(a, 32)) // unsigned(b, 32)), _IA, _IB),
    "arith.remsi": (lambda a, b: a - _trunc_div(a, b) * b, _IA, _IB),
    "arith.minsi": (min, _IA, _IB),
    "arith.maxsi": (max, _IA, _IB),
    "arith.minui": (lambda a, b: min(unsigned(a, 32), unsigned(b, 32)), _IA, _IB),
    "arith.maxui": (lambda a, b: max(unsigned(a, 32), unsigned(b, 32)), _IA, _IB),
    "arith.andi": (lambda a, b: a & b, _IA, _IB),
    "arith.ori": (lambda a, b: a | b, _IA, _IB),
    "arith.xori": (lambda a, b: a ^ b, _IA, _IB),
    # a shift by the width or more is poison in arith: here, what one-bit steps would give
    "arith.shli": (lambda a, b: a << b if b < 32 else 0, _IA, _SH),
    "arith.shrui": (lambda a, b: unsigned(a, 32) >> b if b < 32 else 0, _IA, _SH),
    "arith.shrsi": (lambda a, b: a >> min(b, 31), _IA, _SH),
    "math.ipowi": (
        lambda a, b: a**b,
        np.array([3, -2, 5, 2, -1, 7], I32),
        np.array([2, 3, 0, 31, 5, 3], I32),
    ),
}


def _bits(v: int, bits: int = 32) -> list[int]:
    u = unsigned(v, bits)
    return [(u >> i) & 1 for i in range(bits)]


def _ctlz(v: int) -> int:
    b = _bits(v)[::-1]
    return b.index(1) if 1 in b else 32


def _cttz(v: int) -> int:
    b = _bits(v)
    return b.index(1) if 1 in b else 32


INT_UNARY: dict[str, tuple[Callable[[int], int], np.ndarray]] = {
    "math.absi": (abs, _IA),
    "math.ctlz": (_ctlz, np.array([1, 0, -1, 256, 2**30, 7], I32)),
    "math.cttz": (_cttz, np.array([1, 0, -1, 256, 2**30, 12], I32)),
    "math.ctpop": (lambda v: sum(_bits(v)), np.array([1, 0, -1, 255, 2**30, 7], I32)),
}


def arith_cases() -> list[Case]:
    """Every arith and math op, on a generic's whole arrays and on scalars."""
    cases = []
    for op, (fn, x) in FLOAT_UNARY.items():
        cases.append(
            _elementwise(op, op, ["f32"], "f32", [x], lambda a, fn=fn: fn(a).astype(F32), rtol=2e-6)
        )
    for op, (fn, a, b) in FLOAT_BINARY.items():
        cases.append(
            _elementwise(
                op,
                op,
                ["f32", "f32"],
                "f32",
                [a, b],
                lambda x, y, fn=fn: fn(x, y).astype(F32),
                rtol=2e-6,
            )
        )
    for op, (fn, a, b) in INT_BINARY.items():
        cases.append(_elementwise(op, op, ["i32", "i32"], "i32", [a, b], _ints(fn)))
    for op, (fn, a) in INT_UNARY.items():
        ref = lambda x, fn=fn: np.array([wrap(fn(int(v)), 32) for v in x], I32)  # noqa: E731
        cases.append(_elementwise(op, op, ["i32"], "i32", [a], ref))
    cases += _more_arith()
    return cases


def _narrow(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # -1e40 is -inf in f32
        return a.astype(F32)


def _more_arith() -> list[Case]:
    cond = np.array([True, False, True, True, False, False])
    half = np.array([0.5, -1.0, 2.0, 65504.0, 1e-3, -3.25], np.float16)
    wide = np.array([0.1, -1e40, 2.0, 1 / 3, 1e-50, -7.75], np.float64)
    i8 = np.array([-1, -128, 127, 0, 5, -7], np.int8)
    big = np.array([300, -129, 2**31 - 1, 255, -1, 128], I32)
    f = np.array([3.7, -3.7, 0.0, 1e5, -0.5, 2.5], F32)
    fpos = np.array([3.7, 0.2, 0.0, 1e5, 9.5, 2.5], F32)
    idx = np.array([3, -4, 0, 2**31 - 1, 17, -1], I32)
    return [
        _elementwise(
            "arith.select",
            "arith.select",
            ["i1", "f32", "f32"],
            "f32",
            [cond, _X, _POS],
            lambda c, a, b: np.where(c, a, b),
        ),
        _elementwise(
            "math.fma",
            "math.fma",
            ["f32", "f32", "f32"],
            "f32",
            [_X, _POS, _UNIT],
            lambda a, b, c: (a.astype(np.float64) * b + c).astype(F32),
        ),
        _elementwise(
            "math.fpowi",
            "math.fpowi",
            ["f32", "i32"],
            "f32",
            [_X, np.array([2, 3, 0, -1, 5, -2], I32)],
            lambda a, n: (a.astype(np.float64) ** n).astype(F32),
        ),
        _elementwise("arith.extf", "arith.extf", ["f16"], "f32", [half], lambda a: a.astype(F32)),
        _elementwise("arith.truncf", "arith.truncf", ["f64"], "f32", [wide], _narrow),
        _elementwise(
            "arith.sitofp",
            "arith.sitofp",
            ["i8"],
            "f32",
            [i8],
            lambda a: np.array([float(v) for v in a], F32),
        ),
        _elementwise(
            "arith.uitofp",
            "arith.uitofp",
            ["i8"],
            "f32",
            [i8],
            lambda a: np.array([float(unsigned(int(v), 8)) for v in a], F32),
        ),
        _elementwise(
            "arith.fptosi",
            "arith.fptosi",
            ["f32"],
            "i32",
            [f],
            lambda a: np.array([int(v) for v in a], I32),
        ),
        _elementwise(
            "arith.fptoui",
            "arith.fptoui",
            ["f32"],
            "i32",
            [fpos],
            lambda a: np.array([int(v) for v in a], I32),
        ),
        _elementwise(
            "arith.index_cast",
            "arith.index_cast",
            ["i32"],
            "index",
            [idx],
            lambda a: a.astype(np.int64),
        ),
        _elementwise(
            "arith.trunci",
            "arith.trunci",
            ["i32"],
            "i8",
            [big],
            lambda a: np.array([wrap(int(v), 8) for v in a], np.int8),
        ),
        _elementwise(
            "arith.extui",
            "arith.extui",
            ["i8"],
            "i32",
            [i8],
            lambda a: np.array([unsigned(int(v), 8) for v in a], I32),
        ),
        _elementwise(
            "arith.bitcast",
            "arith.bitcast",
            ["f32"],
            "i32",
            [_X],
            lambda a: np.array(
                [int.from_bytes(np.float32(v).tobytes(), "little", signed=True) for v in a], I32
            ),
        ),
        _cmp_case("arith.cmpi", "i32", _IA, np.array([7, 2, -1, -(2**31), -7, -1], I32)),
        _cmp_case("arith.cmpf", "f32", _A, _B),
        _extended_case(),
        _constant_case(),
    ]


CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF = [
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
]


def _compare(pred: str, a: Any, b: Any, kind: str) -> bool:
    """One comparison as arith defines it, in Python numbers."""
    if kind == "i32":
        if pred[0] == "u":
            a, b, pred = unsigned(int(a), 32), unsigned(int(b), 32), "s" + pred[1:]
        a, b = int(a), int(b)
        return {
            "eq": a == b,
            "ne": a != b,
            "slt": a < b,
            "sle": a <= b,
            "sgt": a > b,
            "sge": a >= b,
        }[pred]
    a, b = float(a), float(b)
    unordered = math.isnan(a) or math.isnan(b)
    if pred in ("false", "true"):
        return pred == "true"
    if pred in ("ord", "uno"):
        return unordered == (pred == "uno")
    held = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}[
        pred[1:]
    ]
    return (not unordered and held) if pred[0] == "o" else (unordered or held)


def _cmp_case(op: str, t: str, a: np.ndarray, b: np.ndarray) -> Case:
    """Every predicate of ``op``, on whole tensors (and on the first elements)."""
    preds = CMPI if op == "arith.cmpi" else CMPF
    lines, outs, types = [], [], []
    for p in preds:
        lines.append(f"""
  %e_{p} = tensor.empty() : tensor<{N}xi1>
  %r_{p} = linalg.generic {{indexing_maps = [{ID1}, {ID1}, {ID1}], iterator_types = ["parallel"]}} ins(%x0, %x1 : tensor<{N}x{t}>, tensor<{N}x{t}>) outs(%e_{p} : tensor<{N}xi1>) {{
  ^bb0(%a: {t}, %b: {t}, %o: i1):
    %v = {op} {p}, %a, %b : {t}
    linalg.yield %v : i1
  }} -> tensor<{N}xi1>
  %u_{p} = {op} {p}, %s0, %s1 : {t}""")
        outs += [f"%r_{p}", f"%u_{p}"]
        types += [f"tensor<{N}xi1>", "i1"]
    text = f"""
func.func @main(%x0: tensor<{N}x{t}>, %x1: tensor<{N}x{t}>, %s0: {t}, %s1: {t}) -> ({", ".join(types)}) {{{"".join(lines)}
  func.return {", ".join(outs)} : {", ".join(types)}
}}
"""
    expected = []
    for p in preds:
        row = np.array([_compare(p, x, y, t) for x, y in zip(a, b, strict=True)])
        expected += [row, row[0]]
    return Case(op, text, {"x0": a, "x1": b, "s0": a[0], "s1": b[0]}, expected)


def _extended_case() -> Case:
    """addui_extended (sum, carry), mului_extended and mulsi_extended (low, high halves)."""
    a = np.array([-1, 2**31 - 1, 5, -(2**31), 12345, -3], I32)
    b = np.array([1, 2**31 - 1, -2, -1, 54321, -3], I32)
    rows = []
    for op in ("arith.addui_extended", "arith.mului_extended", "arith.mulsi_extended"):
        second = "i1" if op == "arith.addui_extended" else "i32"
        rows.append((op, second))
    body, outs, types = [], [], []
    for k, (op, second) in enumerate(rows):
        body.append(f"""
  %e{k} = tensor.empty() : tensor<{N}xi32>
  %f{k} = tensor.empty() : tensor<{N}x{second}>
  %r{k}:2 = linalg.generic {{indexing_maps = [{ID1}, {ID1}, {ID1}, {ID1}], iterator_types = ["parallel"]}} ins(%x0, %x1 : tensor<{N}xi32>, tensor<{N}xi32>) outs(%e{k}, %f{k} : tensor<{N}xi32>, tensor<{N}x{second}>) {{
  ^bb0(%a: i32, %b: i32, %o: i32, %p: {second}):
    %v, %w = "{op}"(%a, %b) : (i32, i32) -> (i32, {second})
    linalg.yield %v, %w : i32, {second}
  }} -> tensor<{N}xi32>, tensor<{N}x{second}>
  %u{k}, %t{k} = "{op}"(%s0, %s1) : (i32, i32) -> (i32, {second})""")
        outs += [f"%r{k}#0", f"%r{k}#1", f"%u{k}", f"%t{k}"]
        types += [f"tensor<{N}xi32>", f"tensor<{N}x{second}>", "i32", second]
    text = f"""
func.func @main(%x0: tensor<{N}xi32>, %x1: tensor<{N}xi32>, %s0: i32, %s1: i32) -> ({", ".join(types)}) {{{"".join(body)}
  func.return {", ".join(outs)} : {", ".join(types)}
}}
"""
    expected = []
    pairs = [(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    add = [unsigned(x, 32) + unsigned(y, 32) for x, y in pairs]
    lo_hi = {
        "add": ([wrap(s, 32) for s in add], [s >= 2**32 for s in add]),
        "u": (
            [wrap(unsigned(x, 32) * unsigned(y, 32), 32) for x, y in pairs],
            [wrap((unsigned(x, 32) * unsigned(y, 32)) >> 32, 32) for x, y in pairs],
        ),
        "s": ([wrap(x * y, 32) for x, y in pairs], [wrap((x * y) >> 32, 32) for x, y in pairs]),
    }
    for key, second in (("add", bool), ("u", I32), ("s", I32)):
        low, high = lo_hi[key]
        low_a, high_a = np.array(low, I32), np.array(high, second)
        expected += [low_a, high_a, low_a[0], high_a[0]]
    return Case("arith extended", text, {"x0": a, "x1": b, "s0": a[0], "s1": b[0]}, expected)


def _constant_case() -> Case:
    text = """
func.func @main() -> (f32, i8, i1, index, tensor<2x2xf32>, tensor<3xi32>) {
  %a = arith.constant 1.5 : f32
  %b = arith.constant -3 : i8
  %c = arith.constant true
  %d = arith.constant 42 : index
  %e = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %f = arith.constant dense<7> : tensor<3xi32>
  func.return %a, %b, %c, %d, %e, %f : f32, i8, i1, index, tensor<2x2xf32>, tensor<3xi32>
}
"""
    return Case(
        "arith.constant",
        text,
        {},
        [
            F32(1.5),
            np.int8(-3),
            np.True_,
            np.int64(42),
            np.array([[1, 2], [3, 4]], F32),
            np.full(3, 7, I32),
        ],
    )
