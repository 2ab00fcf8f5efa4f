"""One vocabulary for linalg ops (`tp_dialect.linalg_kinds`): what a contraction is, a
generic's loop domain and reduction loops, a tensor's bytes — and the executor, the cost
model and the shims all answering by it; the executor's plan cache freeing with its module;
and the IR-level modules importing nothing above them.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest
from helpers import program, tiny
from ir_helpers import parse
from xdsl.dialects.builtin import BFloat16Type, Float32Type, Float64Type, StringAttr, TensorType
from xdsl.dialects.linalg import ops as linalg

from tp_dialect.analysis.timing.cost import op_cost
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.linalg_kinds import (
    Argmax,
    argmax,
    contraction,
    domain_size,
    elements,
    is_contraction,
    loop_ranges,
    nbytes,
    reduced_size,
    reduction_axes,
)
from tp_dialect.op_tags import tag_of
from tp_dialect.runtime import linalg_exec
from tp_dialect.runtime.reference import run_program
from tp_dialect.shims import SHIMS, OpClass, classify

MATMUL_MAPS = (
    "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
    "affine_map<(d0, d1, d2) -> (d0, d1)>]"
)
ROWS_MAPS = "[affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>]"


def two_inputs(body: str, dtype: str = "f32") -> str:
    """A [4, 8] x [8, 3] -> [4, 3] generic over (i, j, k), k reduced, with ``body``."""
    return f"""builtin.module attributes {{tp.chips = 1 : i64}} {{
  func.func @f(%a: tensor<4x8x{dtype}> {{tp.name = "a"}}, %b: tensor<8x3x{dtype}> {{tp.name = "b"}})
      -> (tensor<4x3xf32> {{tp.name = "c"}}) {{
    %zero = arith.constant 0.0 : f32
    %half = arith.constant 0.5 : f32
    %e = tensor.empty() : tensor<4x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
    %c = linalg.generic {{indexing_maps = {MATMUL_MAPS},
        iterator_types = ["parallel", "parallel", "reduction"]}}
        ins(%a, %b : tensor<4x8x{dtype}>, tensor<8x3x{dtype}>) outs(%acc : tensor<4x3xf32>) {{
    ^bb0(%x: {dtype}, %y: {dtype}, %s: f32):
{body}
    }} -> tensor<4x3xf32>
    func.return %c : tensor<4x3xf32>
  }}
}}
"""


def one_input(body: str) -> str:
    """A [4, 8] -> [4] generic over (i, k), k reduced, with ``body``."""
    return f"""builtin.module attributes {{tp.chips = 1 : i64}} {{
  func.func @f(%a: tensor<4x8xf32> {{tp.name = "a"}}) -> (tensor<4xf32> {{tp.name = "c"}}) {{
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %c = linalg.generic {{indexing_maps = {ROWS_MAPS}, iterator_types = ["parallel", "reduction"]}}
        ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {{
    ^bb0(%x: f32, %s: f32):
{body}
    }} -> tensor<4xf32>
    func.return %c : tensor<4xf32>
  }}
}}
"""


# (name, program, factors if a contraction else None)
CASES: list[tuple[str, str, tuple[int, int] | None]] = [
    (
        "matmul",
        two_inputs(
            "%p = arith.mulf %x, %y : f32\n%t = arith.addf %s, %p : f32\nlinalg.yield %t : f32"
        ),
        (0, 1),
    ),
    (
        "matmul, product first",
        two_inputs(
            "%p = arith.mulf %y, %x : f32\n%t = arith.addf %p, %s : f32\nlinalg.yield %t : f32"
        ),
        (1, 0),
    ),
    (
        "bf16 matmul through extf",
        two_inputs(
            "%x32 = arith.extf %x : bf16 to f32\n%y32 = arith.extf %y : bf16 to f32\n"
            "%p = arith.mulf %x32, %y32 : f32\n%t = arith.addf %s, %p : f32\n"
            "linalg.yield %t : f32",
            "bf16",
        ),
        (0, 1),
    ),
    (
        "sum of squares",
        one_input(
            "%p = arith.mulf %x, %x : f32\n%t = arith.addf %s, %p : f32\nlinalg.yield %t : f32"
        ),
        (0, 0),
    ),
    (
        "max of products",
        two_inputs(
            "%p = arith.mulf %x, %y : f32\n%t = arith.maximumf %s, %p : f32\nlinalg.yield %t : f32"
        ),
        None,
    ),
    (
        "sum of exp of products",
        two_inputs(
            "%p = arith.mulf %x, %y : f32\n%q = math.exp %p : f32\n"
            "%t = arith.addf %s, %q : f32\nlinalg.yield %t : f32"
        ),
        None,
    ),
    (
        "scaled products",
        two_inputs(
            "%p = arith.mulf %x, %y : f32\n%q = arith.mulf %p, %half : f32\n"
            "%t = arith.addf %s, %q : f32\nlinalg.yield %t : f32"
        ),
        None,
    ),
    (
        "product with a value from outside",
        one_input(
            "%p = arith.mulf %x, %zero : f32\n%t = arith.addf %s, %p : f32\nlinalg.yield %t : f32"
        ),
        None,
    ),
    (
        "plain sum",
        one_input("%t = arith.addf %s, %x : f32\nlinalg.yield %t : f32"),
        None,
    ),
]


def the_generic(text: str) -> linalg.GenericOp:
    return next(op for op in parse(text).walk() if isinstance(op, linalg.GenericOp))


@pytest.mark.parametrize("name,text,factors", CASES, ids=[c[0] for c in CASES])
def test_one_definition_of_a_contraction(
    name: str, text: str, factors: tuple[int, int] | None
) -> None:
    """Invariant: `contraction` finds exactly ``yield acc + x*y`` over inputs (through extf,
    x = y allowed), and the executor, the cost model and the shim classify by it: a
    contraction runs as a matrix product, costs 2 FLOPs a point and is a matmul; anything
    else is a reduction that costs one FLOP per arith op a point."""
    op = the_generic(text)
    found = contraction(op)
    assert (found.factors if found else None) == factors, name
    assert is_contraction(op) is (factors is not None)
    assert (linalg_exec._make_plan(op).kind == "contraction") is (factors is not None)
    assert (classify(op) is OpClass.MATMUL) is (factors is not None)
    if factors is None:
        assert classify(op) is OpClass.REDUCTION
    body = [o for o in op.body.block.ops if not isinstance(o, linalg.YieldOp)]
    arith_ops = sum(1 for o in body if o.name not in ("arith.extf", "arith.constant"))
    per_point = 2 if factors is not None else arith_ops
    assert op_cost(op).flops == per_point * domain_size(op)


def test_a_contraction_multiplies_in_the_type_after_extf() -> None:
    """Invariant: a bf16 contraction widened by extf multiplies in f32; an f32 one in f32."""
    bf16 = contraction(the_generic(CASES[2][1]))
    f32 = contraction(the_generic(CASES[0][1]))
    assert bf16 is not None and f32 is not None
    assert isinstance(bf16.product_type, Float32Type)
    assert isinstance(f32.product_type, Float32Type)


def test_loop_domain_of_a_matmul_and_a_row_reduction() -> None:
    """Invariant: a [4, 8] x [8, 3] generic over (i, j, k) has loop ranges (4, 3, 8), reduces
    loop 2 over 8 points and has 96 points; a [4, 8] -> [4] one ranges (4, 8), reduces loop 1."""
    mm = the_generic(CASES[0][1])
    assert loop_ranges(mm) == (4, 3, 8)
    assert reduction_axes(mm) == (2,)
    assert reduced_size(mm) == 8
    assert domain_size(mm) == 4 * 3 * 8
    rows = the_generic(CASES[3][1])
    assert loop_ranges(rows) == (4, 8)
    assert reduction_axes(rows) == (1,)
    assert reduced_size(rows) == 8


def test_nbytes_and_elements() -> None:
    """Invariant: a tensor's bytes are its elements times its element size; a scalar has none."""
    f32, bf16, f64 = Float32Type(), BFloat16Type(), Float64Type()
    assert nbytes(TensorType(f32, [2, 3])) == 24
    assert nbytes(TensorType(bf16, [2, 3])) == 12
    assert nbytes(TensorType(f64, [2, 3])) == 48
    assert nbytes(f32) == 0
    assert elements(TensorType(f32, [2, 3, 5])) == 30
    assert elements(f32) == 1


def test_cost_still_exports_nbytes() -> None:
    """Invariant: ``from tp_dialect.analysis.timing.cost import nbytes`` is the one definition."""
    from tp_dialect.analysis.timing import cost

    assert cost.nbytes is nbytes


@pytest.mark.parametrize("cfg", [tiny(), tiny(dtype="bf16"), tiny(chips=2)], ids=str)
def test_the_generated_program_agrees_everywhere(cfg: Qwen3Config) -> None:
    """Invariant: on every generic of a generated Qwen3 layer, the executor runs a matrix
    product exactly where `is_contraction` says, the cost model charges a contraction 2 FLOPs
    a point of `domain_size` (the loop ranges read off the operands' shapes), and an untagged
    generic is a matmul exactly when it is a contraction. RMSNorm's sum of squares is one."""
    module = program(cfg)
    generics = [op for op in module.walk() if isinstance(op, linalg.GenericOp)]
    assert generics
    squares = []
    for op in generics:
        kind = linalg_exec._make_plan(op).kind
        assert (kind == "contraction") is is_contraction(op), op
        if is_contraction(op):
            assert op_cost(op).flops == 2 * domain_size(op)
        if tag_of(op) is None:
            assert (classify(op) is OpClass.MATMUL) is is_contraction(op)
        found = contraction(op)
        if found is not None and found.factors[0] == found.factors[1]:
            squares.append(op)
    assert squares and all(
        isinstance(op.doc, StringAttr) and op.doc.data == "rms_norm" for op in squares
    )


def test_the_chip_checks_a_contraction_on_its_reduced_size() -> None:
    """Invariant: the SN40L refuses a contraction over a number of points that is not a
    multiple of 8 (`reduced_size`), and builds one over a multiple of 8."""
    sn40l = SHIMS["sn40l"]
    assert sn40l.fits(the_generic(CASES[0][1])) is None  # k = 8
    odd = the_generic(CASES[0][1].replace("4x8x", "4x6x").replace("8x3x", "6x3x"))
    assert reduced_size(odd) == 6
    reason = sn40l.fits(odd)
    assert reason is not None and "6 elements" in reason


# -- the executor's plan cache ----------------------------------------------------------------


def _run(text: str) -> tuple[object, list[weakref.ref[linalg.GenericOp]], np.ndarray]:
    module = parse(text)
    a = np.arange(32, dtype=np.float32).reshape(4, 8) / 7
    b = np.arange(24, dtype=np.float32).reshape(8, 3) / 5
    got = run_program(module, {"a": a, "b": b})["c"]
    np.testing.assert_allclose(got, a @ b, rtol=1e-6)
    ops = [weakref.ref(op) for op in module.walk() if isinstance(op, linalg.GenericOp)]
    return module, ops, got


def test_a_dropped_module_frees_its_plans() -> None:
    """Invariant: running a module caches a plan per generic, and once the module is dropped
    the plans and the module itself are freed (the cache does not keep IR alive)."""
    module, ops, _ = _run(CASES[0][1])
    assert ops and all(linalg_exec._PLANS.get(r()) is not None for r in ops)  # type: ignore[arg-type]
    held = weakref.ref(module)
    del module
    gc.collect()
    assert held() is None, "the plan cache keeps the module alive"
    assert all(r() is None for r in ops)


def test_two_modules_never_share_a_plan() -> None:
    """Invariant: the same text parsed twice gives two modules whose generics get a plan each
    (the cache is keyed by the op itself, not by its text or a recycled id)."""
    first, ops_a, got_a = _run(CASES[0][1])
    second, ops_b, got_b = _run(CASES[0][1])
    np.testing.assert_array_equal(got_a, got_b)
    (a,), (b,) = [r() for r in ops_a], [r() for r in ops_b]
    assert a is not None and b is not None and a is not b
    assert linalg_exec._PLANS[a] is not linalg_exec._PLANS[b]
    assert linalg_exec._plan(a) is linalg_exec._PLANS[a]  # a second run reuses its own plan
    del first, second


# -- layering ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        "tp_dialect.linalg_kinds",
        "tp_dialect.shims",
        "tp_dialect.op_tags",
        "tp_dialect.errors",
        "tp_dialect.machine",
    ],
)
def test_ir_level_modules_import_nothing_above_them(module: str) -> None:
    """Invariant: importing an IR-level module loads no analysis, runtime or pass module."""
    code = (
        f"import sys, {module}\n"
        "up = ('tp_dialect.analysis', 'tp_dialect.runtime', 'tp_dialect.passes')\n"
        "print(sorted(m for m in sys.modules if m.startswith(up)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out


_ARGMAX = """func.func @f(%l: tensor<2x8xf32>) -> (tensor<2xf32>, tensor<2xi64>) {
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0 : i64
  %e = tensor.empty() : tensor<2xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %ei = tensor.empty() : tensor<2xi64>
  %i0 = linalg.fill ins(%z : i64) outs(%ei : tensor<2xi64>) -> tensor<2xi64>
  %m, %i = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>,
      affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%l : tensor<2x8xf32>) outs(%m0, %i0 : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%x: f32, %mx: f32, %ix: i64):
    %j = linalg.index 1 : index
    %g = arith.index_cast %j : index to i64
    OFFSET
    %gt = arith.cmpf CMP, %x, %mx : f32
    %nm = arith.select %gt, %x, %mx : f32
    %ni = arith.select %gt, %G, %ix : i64
    linalg.yield %nm, %ni : f32, i64
  } -> tensor<2xf32>, tensor<2xi64>
  func.return %m, %i : tensor<2xf32>, tensor<2xi64>
}"""


@pytest.mark.parametrize(
    ("offset", "cmp", "want"),
    [
        ("", "ogt", Argmax(1, 0)),
        (
            "%off = arith.constant 16 : i64\n    %G = arith.addi %g, %off : i64",
            "ogt",
            Argmax(1, 16),
        ),
        ("", "oge", None),  # >= keeps the last maximum, not the first
        ("", "olt", None),  # an argmin
    ],
)
def test_argmax_is_the_greedy_heads_form_only(offset: str, cmp: str, want: Argmax | None) -> None:
    text = _ARGMAX.replace("OFFSET", offset).replace("CMP", cmp)
    text = text.replace("%G,", "%G," if offset else "%g,")
    op = the_generic(text)
    assert argmax(op) == want
    if want is not None:  # and it computes the first maximum's index, plus the offset
        logits = np.array([[1, 5, 3, 5, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 9]], np.float32)
        out = run_program(parse(text), {"l": logits})
        np.testing.assert_array_equal(list(out.values())[1], np.argmax(logits, 1) + want.offset)
