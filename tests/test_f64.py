"""f64 stays f64 in the interpreter: a contraction multiplies in its own type (an f64 dot product
is not rounded through f32), while f32 stays f32 and bf16 is read as f32 through its extf.

Each program is run by `run_program` and compared with plain numpy written here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from ir_helpers import parse

from tp_dialect.runtime.reference import run_program


def contraction_program(dtype: str, m: int, k: int, n: int) -> str:
    """``c = a @ b`` for ``a: [m, k]``, ``b: [k, n]`` of element type ``dtype``, as a generic."""
    return f"""builtin.module attributes {{tp.chips = 1 : i64}} {{
  func.func @f(%a: tensor<{m}x{k}x{dtype}> {{tp.name = "a"}},
               %b: tensor<{k}x{n}x{dtype}> {{tp.name = "b"}})
      -> (tensor<{m}x{n}x{dtype}> {{tp.name = "c"}}) {{
    %zero = arith.constant 0.0 : {dtype}
    %e = tensor.empty() : tensor<{m}x{n}x{dtype}>
    %acc = linalg.fill ins(%zero : {dtype}) outs(%e : tensor<{m}x{n}x{dtype}>)
      -> tensor<{m}x{n}x{dtype}>
    %c = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
        affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel", "reduction"]}}
        ins(%a, %b : tensor<{m}x{k}x{dtype}>, tensor<{k}x{n}x{dtype}>)
        outs(%acc : tensor<{m}x{n}x{dtype}>) {{
    ^bb0(%x: {dtype}, %y: {dtype}, %s: {dtype}):
      %p = arith.mulf %x, %y : {dtype}
      %t = arith.addf %s, %p : {dtype}
      linalg.yield %t : {dtype}
    }} -> tensor<{m}x{n}x{dtype}>
    func.return %c : tensor<{m}x{n}x{dtype}>
  }}
}}
"""


F64_STEPS = """builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%x: tensor<2x5xf64> {tp.name = "x"})
      -> (tensor<2xf64> {tp.name = "ss"}, tensor<2xf64> {tp.name = "se"},
          tensor<2x5xf64> {tp.name = "y"}) {
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<2xf64>
    %acc = linalg.fill ins(%zero : f64) outs(%e : tensor<2xf64>) -> tensor<2xf64>
    %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
        affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<2x5xf64>) outs(%acc : tensor<2xf64>) {
    ^bb0(%v: f64, %s: f64):
      %sq = arith.mulf %v, %v : f64
      %t = arith.addf %s, %sq : f64
      linalg.yield %t : f64
    } -> tensor<2xf64>
    %se = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
        affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<2x5xf64>) outs(%acc : tensor<2xf64>) {
    ^bb0(%v: f64, %s: f64):
      %ex = math.exp %v : f64
      %t = arith.addf %s, %ex : f64
      linalg.yield %t : f64
    } -> tensor<2xf64>
    %e2 = tensor.empty() : tensor<2x5xf64>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
        affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%x, %ss : tensor<2x5xf64>, tensor<2xf64>) outs(%e2 : tensor<2x5xf64>) {
    ^bb0(%v: f64, %s: f64, %o: f64):
      %r = math.rsqrt %s : f64
      %w = arith.mulf %v, %r : f64
      linalg.yield %w : f64
    } -> tensor<2x5xf64>
    func.return %ss, %se, %y : tensor<2xf64>, tensor<2xf64>, tensor<2x5xf64>
  }
}
"""

BF16_MATMUL = """builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%a: tensor<3x16xbf16> {tp.name = "a"}, %b: tensor<16x4xbf16> {tp.name = "b"})
      -> (tensor<3x4xf32> {tp.name = "c"}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<3x4xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
    %c = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
        affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<3x16xbf16>, tensor<16x4xbf16>) outs(%acc : tensor<3x4xf32>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %x32 = arith.extf %x : bf16 to f32
      %y32 = arith.extf %y : bf16 to f32
      %p = arith.mulf %x32, %y32 : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    } -> tensor<3x4xf32>
    func.return %c : tensor<3x4xf32>
  }
}
"""


def test_an_f64_dot_product_is_not_rounded_through_f32() -> None:
    """Invariant: [0.1, 0.2, 0.3] . [1, 1, 1] in f64 is numpy's f64 answer (0.6000000000000001),
    not the f32 one (0.6000000238...)."""
    a = np.array([[0.1, 0.2, 0.3]], dtype=np.float64)
    b = np.ones((3, 1), dtype=np.float64)
    got = run_program(parse(contraction_program("f64", 1, 3, 1)), {"a": a, "b": b})["c"]
    want = a @ b
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    f32 = np.float32(0.1) + np.float32(0.2) + np.float32(0.3)
    assert abs(got[0, 0] - np.float64(f32)) > 1e-9  # the old f32 rounding is visible at 1e-8


def test_an_f64_matmul_matches_numpy_in_f64() -> None:
    """Invariant: an f64 [4, 37] @ [37, 5] contraction agrees with numpy's f64 product to
    1e-15 relative (f32 would be off by ~1e-7)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 37))
    b = rng.standard_normal((37, 5))
    got = run_program(parse(contraction_program("f64", 4, 37, 5)), {"a": a, "b": b})["c"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a @ b, rtol=1e-14, atol=1e-15)


def test_f64_reductions_and_maps_stay_f64() -> None:
    """Invariant: an f64 sum of squares (a contraction of x with itself), an f64 sum of exp (a
    reduction) and an f64 map on them compute in f64, as numpy does."""
    x = np.array([[0.1, 0.2, 0.3, 0.4, 0.5], [1e-3, 2.0, -3.0, 0.7, 1.1]])
    got = run_program(parse(F64_STEPS), {"x": x})
    ss = (x * x).sum(axis=1)
    assert all(v.dtype == np.float64 for v in got.values())
    np.testing.assert_allclose(got["ss"], ss, rtol=1e-15, atol=0)
    np.testing.assert_allclose(got["se"], np.exp(x).sum(axis=1), rtol=1e-15, atol=0)
    np.testing.assert_allclose(got["y"], x / np.sqrt(ss)[:, None], rtol=1e-15, atol=0)


def test_f32_contractions_stay_f32() -> None:
    """Invariant: an f32 contraction computes in f32 (the result is numpy's f32 product, not
    an f64 one rounded at the end)."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 64)).astype(np.float32)
    b = rng.standard_normal((64, 5)).astype(np.float32)
    got = run_program(parse(contraction_program("f32", 3, 64, 5)), {"a": a, "b": b})["c"]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_a_bf16_contraction_reads_its_factors_as_f32() -> None:
    """Invariant: bf16 factors widened by ``arith.extf`` to f32 are multiplied and summed in
    f32: the answer is numpy's f32 product of the bf16 values."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 16)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((16, 4)).astype(ml_dtypes.bfloat16)
    got = run_program(parse(BF16_MATMUL), {"a": a, "b": b})["c"]
    want = a.astype(np.float32) @ b.astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
