# ruff: noqa: E501  (IR text is written out one op per line)
"""A ``linalg.generic`` means its loop nest, whichever plan the executor picks.

Invariant (Hypothesis): for random generics — inputs read through any dims, repeated (a
diagonal) or permuted; an output following any subset of the loops; a body that reduces
into the output (``+``, ``max``, ``*``), ignores it, or reduces in a form no ``ufunc`` states
— the interpreter's result equals the loop nest run point by point in plain Python, in
lexicographic order, the body's own arithmetic in float64 (results within f32 rounding).
"""

from __future__ import annotations

import itertools

import numpy as np
from helpers import CTX
from hypothesis import given, settings
from hypothesis import strategies as st

from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module, verify_located

BODIES = {
    # name: (MLIR lines over %x0 [%x1] and %acc ending in %out, the same in Python)
    "sum of products": (
        ["%m = arith.mulf %x0, %x1 : f32", "%out = arith.addf %acc, %m : f32"],
        lambda x, acc: acc + x[0] * x[1],
    ),
    "max": (["%out = arith.maximumf %x0, %acc : f32"], lambda x, acc: max(x[0], acc)),
    "product": (["%out = arith.mulf %acc, %x0 : f32"], lambda x, acc: acc * x[0]),
    "last write": (["%out = arith.addf %x0, %x0 : f32"], lambda x, acc: 2 * x[0]),
    "halving sum": (
        [
            "%h = arith.constant 0.5 : f32",
            "%s = arith.addf %acc, %x0 : f32",
            "%out = arith.mulf %s, %h : f32",
        ],
        lambda x, acc: (acc + x[0]) * 0.5,
    ),
}


@st.composite
def generics(draw: st.DrawFn) -> tuple[str, list[int], list[list[int]], list[int]]:
    """A body, loop sizes, each input's dims (repeats allowed), the output's dims."""
    body = draw(st.sampled_from(sorted(BODIES)))
    n_in = 2 if body == "sum of products" else 1
    rank = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 3)) for _ in range(rank)]
    dims = st.lists(st.integers(0, rank - 1), min_size=1, max_size=3)
    ins = [draw(dims) for _ in range(n_in)]
    out = draw(st.permutations(range(rank)).map(list))[: draw(st.integers(0, rank))]
    # xDSL reads each loop's extent off an operand axis it indexes alone: every loop is read
    used = {d for m in [*ins, out] for d in m}
    ins[0] += [d for d in range(rank) if d not in used]
    # a repeated dim indexes equal extents: the sizes are the loops' own
    return body, sizes, ins, out


def _program(body: str, sizes: list[int], ins: list[list[int]], out: list[int]) -> str:
    loops = ", ".join(f"d{d}" for d in range(len(sizes)))

    def tensor(dims: list[int]) -> str:
        return f"tensor<{''.join(f'{sizes[d]}x' for d in dims)}f32>"

    def amap(dims: list[int]) -> str:
        return f"affine_map<({loops}) -> ({', '.join(f'd{d}' for d in dims)})>"

    args = ", ".join(f"%in{i}: {tensor(m)}" for i, m in enumerate(ins))
    maps = ", ".join(amap(m) for m in [*ins, out])
    iterators = ", ".join('"parallel"' if d in out else '"reduction"' for d in range(len(sizes)))
    block = ", ".join(f"%x{i}: f32" for i in range(len(ins)))
    lines = "\n    ".join(BODIES[body][0])
    return f"""
func.func @main({args}, %init: {tensor(out)}) -> {tensor(out)} {{
  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}} ins({", ".join(f"%in{i}" for i in range(len(ins)))} : {", ".join(tensor(m) for m in ins)}) outs(%init : {tensor(out)}) {{
  ^bb0({block}, %acc: f32):
    {lines}
    linalg.yield %out : f32
  }} -> {tensor(out)}
  func.return %r : {tensor(out)}
}}
"""


def _loop_nest(
    body: str, sizes: list[int], ins: list[list[int]], out: list[int], values: dict
) -> np.ndarray:
    """The generic's definition, point by point, in float64."""
    result = values["init"].astype(np.float64)
    fn = BODIES[body][1]
    for point in itertools.product(*(range(n) for n in sizes)):
        xs = [float(values[f"in{i}"][tuple(point[d] for d in m)]) for i, m in enumerate(ins)]
        at = tuple(point[d] for d in out)
        result[at] = fn(xs, result[at])
    return result


@settings(max_examples=80, deadline=None)
@given(generics(), st.integers(0, 2**16))
def test_a_generic_means_its_loop_nest(spec: tuple, seed: int) -> None:
    body, sizes, ins, out = spec
    module, _ = parse_module(CTX, _program(body, sizes, ins, out), "<generic>")
    verify_located(module)
    rng = np.random.default_rng(seed)
    values = {
        f"in{i}": rng.uniform(0.5, 1.5, [sizes[d] for d in m]).astype(np.float32)
        for i, m in enumerate(ins)
    }
    values["init"] = rng.uniform(0.5, 1.5, [sizes[d] for d in out]).astype(np.float32)
    want = _loop_nest(body, sizes, ins, out, values)
    for storage in (False, True):
        got = run_program(module, values, storage=storage)["result0"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
