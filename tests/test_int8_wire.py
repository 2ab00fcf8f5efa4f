"""tp-narrow-wire{wire=int8}: an all-gather every reader of which takes int8 (sn40l-int8's
matmuls, first operand) carries int8 blocks with a scale per block.

The quantization is checked against a plain numpy spelling of the rule written here (scale
``max|b| / 127``, round half to even, clamp to ±127, dequantize by the row's block scale), the
whole prefill of a tiny Qwen3 and GPT-2 after tp-sequence-parallel against the f32 unsharded
program (logits within 2e-2 of the largest), bitwise the same at every later stage under
storage semantics, certified at each, on MPI ranks and IREE too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import tool
from hf_models import config_for
from ir_helpers import apply, assert_kept_through_lowering, parse

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.registry import Pretrained, entry_for
from tp_dialect.frontend.split import split_text
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program

INT8 = "tp-narrow-wire{wire=int8 shim=sn40l-int8}"


def int8_numpy(block: np.ndarray) -> np.ndarray:
    """What a block is after the wire: quantized by its own scale, dequantized."""
    amax = float(np.max(np.abs(block)))
    scale = np.float32(amax / 127.0) if amax > 0 else np.float32(1.0)
    q = np.clip(np.rint(block / scale), -127, 127).astype(np.int8)
    return q.astype(np.float32) * scale


def _gathered(rows: list[tuple[int, int]]) -> str:
    """Blocks of %x's rows gathered, then each chip's columns of a product with %w."""
    n, s = len(rows), sum(r for _, r in rows)
    full = f"tensor<{s}x8xf32>"
    slices = ", ".join(
        f"#tp.slice<axis = 0, ranges = [({a}, {r})], full = [{s}, 8]>" for a, r in rows
    )
    lines = ["%zero = arith.constant 0.0 : f32"]
    for c, (a, r) in enumerate(rows):
        lines.append(
            f"%b{c} = tp.shard %x at #tp.slice<axis = 0, ranges = [({a}, {r})], full = [{s}, 8]>"
            f" : {full} -> tensor<{r}x8xf32, #tp.chip<{c}>>"
        )
    blocks = ", ".join(f"tensor<{r}x8xf32, #tp.chip<{c}>>" for c, (_, r) in enumerate(rows))
    names = ", ".join(f"%b{c}" for c in range(n))
    lines.append(f"%g = tp.all_gather {names} slices [{slices}] : {blocks} -> {full}")
    cols = 8 // n
    for c in range(n):
        t = f"tensor<{s}x{cols}xf32, #tp.chip<{c}>>"
        lines += [
            f"%w{c} = tp.shard %w at #tp.slice<axis = 1, ranges = [({c * cols}, {cols})], "
            f"full = [8, 8]> : tensor<8x8xf32> -> tensor<8x{cols}xf32, #tp.chip<{c}>>",
            f"%e{c} = tensor.empty() : {t}",
            f"%z{c} = linalg.fill ins(%zero : f32) outs(%e{c} : {t}) -> {t}",
            f"%p{c} = linalg.generic {{indexing_maps = [affine_map<(i, j, k) -> (i, k)>, "
            "affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types "
            f'= ["parallel", "parallel", "reduction"]}} ins(%g, %w{c} : {full}, '
            f"tensor<8x{cols}xf32, #tp.chip<{c}>>) outs(%z{c} : {t}) {{\n"
            "    ^bb0(%a: f32, %b: f32, %acc: f32):\n      %m = arith.mulf %a, %b : f32\n"
            "      %sum = arith.addf %acc, %m : f32\n      linalg.yield %sum : f32\n"
            f"    }} -> {t}",
        ]
    parts = ", ".join(f"%p{c}" for c in range(n))
    types = ", ".join(f"tensor<{s}x{cols}xf32, #tp.chip<{c}>>" for c in range(n))
    col_slices = ", ".join(
        f"#tp.slice<axis = 1, ranges = [({c * cols}, {cols})], full = [{s}, 8]>" for c in range(n)
    )
    lines.append(f"%y = tp.unshard {parts} slices [{col_slices}] : {types} -> {full}")
    body = "\n    ".join(lines)
    return f"""builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @f(%x: {full}, %w: tensor<8x8xf32>) -> {full} {{
    {body}
    func.return %y : {full}
  }}
}}"""


@pytest.mark.parametrize("rows", [[(0, 3), (3, 2)], [(0, 2), (2, 2), (4, 1), (5, 1)]])
def test_each_block_is_quantized_by_its_own_scale(rows: list[tuple[int, int]]) -> None:
    s = sum(r for _, r in rows)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((s, 8)).astype(np.float32)
    x[rows[-1][0] :] *= 40.0  # the last block's scale is far larger than the others'
    x[rows[0][0] : rows[0][0] + rows[0][1]] = 0.0  # an all-zero block: scale 1
    w = rng.standard_normal((8, 8)).astype(np.float32)
    module = parse(_gathered(rows))
    apply(module, "tp-verify," + INT8)
    assert status(module) == "valid" and module.attributes["tp.wire"].data == "int8"  # type: ignore[attr-defined]
    got = run_program(module, {"x": x, "w": w})["result0"]
    wire = np.concatenate([int8_numpy(x[a : a + r]) for a, r in rows])
    np.testing.assert_allclose(got, wire @ w, rtol=1e-5, atol=1e-5)
    assert not np.allclose(got, x @ w, rtol=1e-6, atol=1e-6)  # it did quantize


def _prefill(family: str, chips: int) -> str:
    layers = {"num_hidden_layers": 2} if family == "qwen3" else {"n_layer": 2}
    config = config_for(family, **layers)
    entry = entry_for(family)
    pretrained = Pretrained(entry, entry.read(config), config)
    text = pretrained.write(pretrained.step("prefill", 8, 1, 16, True))
    return split_text(text, chips, entry.plan)


@pytest.mark.parametrize("family", ["qwen3", "gpt2"])
def test_a_prefill_carries_its_gathered_norm_in_int8(family: str) -> None:
    source = parse(_prefill(family, 2))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, f"tp-verify,tp-sequence-parallel{{mode=on}},{INT8}")
    assert status(module) == "valid" and "i8" in str(module)
    narrow = run_program(module, values)
    logits = want["logits"]
    error = np.max(np.abs(narrow["logits"] - logits)) / np.max(np.abs(logits))
    assert 0 < error < 2e-2, error
    assert_kept_through_lowering(module, values, narrow)


@pytest.mark.parametrize("how", [["--mpi", "2"], ["--backend", "iree"]], ids=["mpi", "iree"])
def test_per_chip_programs_carry_int8_on_ranks_and_natively(tmp_path: Path, how: list[str]) -> None:
    rows = [(0, 3), (3, 2)]
    module = parse(_gathered(rows))
    apply(module, f"{INT8},tp-relocate,tp-transfers,tp-link-points,tp-relay")
    (path := tmp_path / "g.mlir").write_text(str(module))
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal((8, 8))
    np.savez(inputs := tmp_path / "in.npz", x=x, w=w.astype(np.float32))
    run = tool("tp-run", path, *how, "--inputs", inputs, "--outputs", tmp_path / "o.npz")
    assert run.returncode == 0, run.stderr
    wire = np.concatenate([int8_numpy(x[a : a + r]) for a, r in rows])
    np.testing.assert_allclose(
        np.load(tmp_path / "o.npz")["result0"], wire @ w.astype(np.float32), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [("-1.270000e+02", "-1.260000e+02"), ("math.absf", "math.sqrt")],
    ids=["clamp", "not-abs"],
)
def test_a_scale_not_in_the_exact_form_is_a_reduction_over_rows(old: str, new: str) -> None:
    """The all-gather rule lets a block's reduction through only as an int8 wire's scale in
    `passes.quantize`'s exact form: changed anywhere, it is a reduction over the block's rows
    like any other, and refused."""
    module = parse(_gathered([(0, 3), (3, 2)]))
    apply(module, INT8)
    check_obligation(module)
    broken = parse(str(module).replace(old, new, 1))
    with pytest.raises(TpDiagnostic, match=r"not row by row: it reduces or mixes over axis 0"):
        check_obligation(broken)
