"""The interpreter runs the greedy argmax on whole arrays, and that equals its body folded
logit by logit: the start replaced only by a strictly greater value (a NaN never), the first
index of ties, the index offset by the body's constant — checked against a plain Python fold
written here, on values with ties, NaNs and starts that win."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

TEXT = """func.func @f(%l: tensor<{b}x{v}xf32> {{tp.name = "l"}},
    %m0: tensor<{b}xf32> {{tp.name = "m0"}},
    %i0: tensor<{b}xi64> {{tp.name = "i0"}}) -> (tensor<{b}xf32> {{tp.name = "m"}},
    tensor<{b}xi64> {{tp.name = "i"}}) {{
  %off = arith.constant {offset} : i64
  %m, %i = linalg.generic {{doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>,
      affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>],
      iterator_types = ["parallel", "reduction"]}}
      ins(%l : tensor<{b}x{v}xf32>) outs(%m0, %i0 : tensor<{b}xf32>, tensor<{b}xi64>) {{
  ^bb0(%x: f32, %mx: f32, %ix: i64):
    %j = linalg.index 1 : index
    %g = arith.index_cast %j : index to i64
    %g2 = arith.addi %g, %off : i64
    %gt = arith.cmpf ogt, %x, %mx : f32
    %nm = arith.select %gt, %x, %mx : f32
    %ni = arith.select %gt, %g2, %ix : i64
    linalg.yield %nm, %ni : f32, i64
  }} -> (tensor<{b}xf32>, tensor<{b}xi64>)
  func.return %m, %i : tensor<{b}xf32>, tensor<{b}xi64>
}}"""


def folded(logits: np.ndarray, m0: np.ndarray, i0: np.ndarray, offset: int) -> tuple:
    """The body, one logit at a time (Python floats: ``>`` is false for NaN, as ogt)."""
    ms, ids = [], []
    for row, m, i in zip(logits.tolist(), m0.tolist(), i0.tolist(), strict=True):
        for j, x in enumerate(row):
            if x > m:
                m, i = x, j + offset
        ms.append(m)
        ids.append(i)
    return np.array(ms, np.float32), np.array(ids, np.int64)


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 3),
    v=st.integers(1, 9),
    offset=st.integers(0, 50),
    data=st.data(),
)
def test_whole_array_argmax_is_the_fold(b: int, v: int, offset: int, data: st.DataObject) -> None:
    pick = st.sampled_from([-np.inf, -1.0, 0.0, 1.0, 2.0, np.nan])  # ties and NaNs likely
    logits = np.array(data.draw(st.lists(pick, min_size=b * v, max_size=b * v)), np.float32)
    logits = logits.reshape(b, v)
    m0 = np.array(data.draw(st.lists(pick, min_size=b, max_size=b)), np.float32)
    i0 = np.array(data.draw(st.lists(st.integers(-5, 5), min_size=b, max_size=b)), np.int64)
    module, _ = parse_module(tp_context(), TEXT.format(b=b, v=v, offset=offset), "<t>")
    got = run_program(module, {"l": logits, "m0": m0, "i0": i0})
    want_m, want_i = folded(logits, m0, i0, offset)
    np.testing.assert_array_equal(got["i"], want_i)
    np.testing.assert_array_equal(got["m"], want_m)
