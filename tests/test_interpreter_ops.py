# ruff: noqa: E501  (IR text is written out one op per line)
"""Every op the certificate admits runs on tp's interpreter and means what numpy says.

The op classes are enumerated from the rule tp-verify applies
(`tp_dialect.analysis.certify.provenance.admitted_kinds`, over every dialect tp-opt parses): each
must occur in a case of `interp_cases` / `interp_cases_ops` or of the two-chip programs
below, so an op newly admitted without a kernel and a case fails here. Each case is loaded
as tp-run loads it (parsed, verified with tp's checks), certified by the obligation (or, if
marked, refused), run on the interpreter with value and with storage semantics, and
compared with its plain-numpy answer.
"""

from __future__ import annotations

import functools
import gc
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import CTX, tool
from interp_cases import Case, arith_cases
from interp_cases_ops import op_cases
from qwen3_numpy_reference import qwen3_decode, random_qwen3_inputs, random_qwen3_weights
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.certify.provenance import admitted_kinds, kind_opacity
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module, verify_located

CASES = [*arith_cases(), *op_cases()]
BIN = Path(sys.executable).parent


def load(text: str, name: str = "<case>") -> ModuleOp:
    """``text`` parsed and verified as tp-run loads a program."""
    module, _ = parse_module(CTX, text, name)
    verify_located(module)
    return module


def check(got: dict[str, np.ndarray], expected: list[Any], rtol: float) -> None:
    assert len(got) == len(expected)
    for i, want in enumerate(expected):
        value, want = np.asarray(got[f"result{i}"]), np.asarray(want)
        assert value.shape == want.shape, f"result{i}"
        if want.dtype.kind == "f" or want.dtype == np.dtype("bfloat16"):
            np.testing.assert_allclose(
                value.astype(np.float64),
                want.astype(np.float64),
                rtol=rtol,
                atol=rtol,
                equal_nan=True,
                err_msg=f"result{i}",
            )
        else:
            np.testing.assert_array_equal(value, want, err_msg=f"result{i}")


@pytest.mark.parametrize("storage", [False, True], ids=["value", "storage"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_is_certified_and_runs_as_numpy_says(case: Case, storage: bool) -> None:
    module = load(case.text, case.name)
    if case.certified:
        check_obligation(module)
    else:
        with pytest.raises(TpDiagnostic, match=case.extra["refused"]):
            check_obligation(module)
    check(run_program(module, case.inputs, storage=storage), case.expected, case.rtol)


def _ops_in(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


def test_every_op_class_the_certificate_admits_has_a_case() -> None:
    covered = set().union(*(_ops_in(load(c.text, c.name)) for c in CASES))
    covered |= set().union(*(_ops_in(m) for m in two_chip_stages().values()))
    covered |= _ops_in(outlined_qwen3())
    kinds = admitted_kinds(CTX)
    assert len(kinds) > 150  # arith, math, tensor, linalg, scf, ... (not an empty rule)
    missing = sorted(k.name for k in kinds if k.name not in covered)
    assert not missing, f"admitted ops with no case (and perhaps no kernel): {missing}"


def test_ops_without_a_meaning_in_tp_are_refused() -> None:
    """Ops of dialects tp gives no meaning (an ISA's, LLVM's), and memref ops reading raw
    memory, are refused by class, so no certificate holds them."""
    by_name = {
        op.name: op
        for name in CTX.registered_dialect_names
        for op in CTX.get_dialect(name).operations
    }
    for name in ("riscv.add", "llvm.add", "memref.alloc", "ub.poison", "shard.all_reduce"):
        why = kind_opacity(by_name[name])
        assert why is not None and why[0].value == "opaque-op", name
    assert by_name["riscv.add"] not in admitted_kinds(CTX)


# -- tp's own ops: a two-chip program at each stage, with chip-local control flow and named ops

TWO_CHIP = """
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%x: tensor<2x8xf32>, %wa: tensor<8x8xf32>, %wb: tensor<8x6xf32>) -> (tensor<2x8xf32>, tensor<2x6xf32>, tensor<3xf32>) {
    %w0 = tp.shard %wa at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %w1 = tp.shard %wa at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 8]> : tensor<2x8xf32> -> tensor<2x4xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [2, 8]> : tensor<2x8xf32> -> tensor<2x4xf32, #tp.chip<1>>
    %zero = arith.constant 0.0 : f32
    %u0 = tensor.empty() : tensor<2x8xf32, #tp.chip<0>>
    %u1 = tensor.empty() : tensor<2x8xf32, #tp.chip<1>>
    %e0 = linalg.fill ins(%zero : f32) outs(%u0 : tensor<2x8xf32, #tp.chip<0>>) -> tensor<2x8xf32, #tp.chip<0>>
    %e1 = linalg.fill ins(%zero : f32) outs(%u1 : tensor<2x8xf32, #tp.chip<1>>) -> tensor<2x8xf32, #tp.chip<1>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<2x4xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%e0 : tensor<2x8xf32, #tp.chip<0>>) -> tensor<2x8xf32, #tp.chip<0>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<2x4xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%e1 : tensor<2x8xf32, #tp.chip<1>>) -> tensor<2x8xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<2x8xf32>
    %v0 = tp.shard %wb at #tp.slice<axis = 1, ranges = [(0, 3)], full = [8, 6]> : tensor<8x6xf32> -> tensor<8x3xf32, #tp.chip<0>>
    %v1 = tp.shard %wb at #tp.slice<axis = 1, ranges = [(3, 3)], full = [8, 6]> : tensor<8x6xf32> -> tensor<8x3xf32, #tp.chip<1>>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    %f0 = tensor.empty() : tensor<2x3xf32, #tp.chip<0>>
    %f1 = tensor.empty() : tensor<2x3xf32, #tp.chip<1>>
    %q0 = linalg.matmul ins(%s, %v0 : tensor<2x8xf32>, tensor<8x3xf32, #tp.chip<0>>) outs(%f0 : tensor<2x3xf32, #tp.chip<0>>) -> tensor<2x3xf32, #tp.chip<0>>
    %q1 = linalg.matmul ins(%s, %v1 : tensor<2x8xf32>, tensor<8x3xf32, #tp.chip<1>>) outs(%f1 : tensor<2x3xf32, #tp.chip<1>>) -> tensor<2x3xf32, #tp.chip<1>>
    %r0 = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %q0) -> (tensor<2x3xf32, #tp.chip<0>>) {
      %g = tensor.empty() : tensor<2x3xf32, #tp.chip<0>>
      %b = linalg.add ins(%a, %q0 : tensor<2x3xf32, #tp.chip<0>>, tensor<2x3xf32, #tp.chip<0>>) outs(%g : tensor<2x3xf32, #tp.chip<0>>) -> tensor<2x3xf32, #tp.chip<0>>
      scf.yield %b : tensor<2x3xf32, #tp.chip<0>>
    }
    %r1 = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %q1) -> (tensor<2x3xf32, #tp.chip<1>>) {
      %g = tensor.empty() : tensor<2x3xf32, #tp.chip<1>>
      %b = linalg.add ins(%a, %q1 : tensor<2x3xf32, #tp.chip<1>>, tensor<2x3xf32, #tp.chip<1>>) outs(%g : tensor<2x3xf32, #tp.chip<1>>) -> tensor<2x3xf32, #tp.chip<1>>
      scf.yield %b : tensor<2x3xf32, #tp.chip<1>>
    }
    %u = tp.unshard %r0, %r1 slices [#tp.slice<axis = 1, ranges = [(0, 3)], full = [2, 6]>, #tp.slice<axis = 1, ranges = [(3, 3)], full = [2, 6]>] : tensor<2x3xf32, #tp.chip<0>>, tensor<2x3xf32, #tp.chip<1>> -> tensor<2x6xf32>
    %z = arith.constant dense<0.0> : tensor<3xf32>
    %sq = tensor.extract_slice %s[0, 0] [2, 2] [1, 1] : tensor<2x8xf32> to tensor<2x2xf32>
    %tr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<2x2xf32>) outs(%z : tensor<3xf32>) {
    ^bb0(%e: f32, %acc: f32):
      %t = arith.addf %e, %acc : f32
      linalg.yield %t : f32
    } -> tensor<3xf32>
    func.return %s, %u, %tr : tensor<2x8xf32>, tensor<2x6xf32>, tensor<3xf32>
  }
}
"""
LOWER = "tp-verify,tp-relocate,tp-transfers,tp-phase"
STAGES = {
    "source": "tp-verify",
    "phased": f"{LOWER},tp-verify",
    "programs": f"{LOWER},tp-link-points,tp-relay,tp-verify",
}


def two_chip_answer(values: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The two-chip program in plain numpy: s = x wa, then 4 (s wb), and s's diagonal summed
    (a (d1, d1) map) for each of three rows."""
    x, wa, wb = (values[k].astype(np.float64) for k in ("x", "wa", "wb"))
    s = x @ wa
    return [s, 4 * (s @ wb), np.full(3, s[0, 0] + s[1, 1])]


@functools.cache
def two_chip_stages() -> dict[str, ModuleOp]:
    """The two-chip program at each stage, each certified by tp-verify (the last pass)."""
    return {stage: lowered(load(TWO_CHIP), spec) for stage, spec in STAGES.items()}


@pytest.mark.parametrize("storage", [False, True], ids=["value", "storage"])
@pytest.mark.parametrize("stage", list(STAGES))
def test_two_chip_program_runs_as_numpy_says_at_every_stage(stage: str, storage: bool) -> None:
    module = two_chip_stages()[stage]
    assert status(module) == "valid"  # certified by tp-verify, the last pass
    values = random_weights(module, 5)
    check(run_program(module, values, storage=storage), two_chip_answer(values), 1e-5)


@functools.cache
def outlined_qwen3() -> ModuleOp:
    """Tiny Qwen3 with its layer outlined, as per-chip programs whose relay repeats a layer."""
    cfg = Qwen3Config.preset("tiny", chips=2, layers=2)
    module, _ = parse_module(CTX, generate(cfg, outline=True), "<tp-gen>")
    return lowered(module, f"{LOWER},tp-link-points,tp-relay,tp-verify")


def test_per_chip_programs_repeating_a_layer_compute_qwen3() -> None:
    cfg = Qwen3Config.preset("tiny", chips=2, layers=2)
    rng = np.random.default_rng(3)
    dims = {"layers": 2, "hidden": cfg.hidden, "kv_heads": cfg.kv_heads, "head_dim": cfg.head_dim}
    weights = random_qwen3_weights(rng, heads=cfg.heads, intermediate=cfg.intermediate, **dims)
    inputs = random_qwen3_inputs(
        rng, batch=cfg.batch, max_positions=cfg.max_positions, position=2, **dims
    )
    module = outlined_qwen3()
    assert "tp.relay_repeat" in _ops_in(module)
    got = run_program(module, {**weights, **inputs})
    want = qwen3_decode(
        weights,
        inputs,
        heads=cfg.heads,
        eps=cfg.eps,
        theta=cfg.theta,
        **{k: v for k, v in dims.items() if k != "hidden"},
    )
    for name, value in want.items():
        scale = float(np.max(np.abs(value))) or 1.0
        assert float(np.max(np.abs(got[name] - value))) <= 1e-5 * scale, name


# -- end to end: tp-opt certifies, tp-run runs (--random-inputs / --random-weights) -----------

DIAGONAL = """
func.func @decode(%a: tensor<4x4xf32>, %n: i64) -> (tensor<3xf32>, i64, tensor<4x2xf32>) {
  %z = arith.constant dense<0.0> : tensor<3xf32>
  %tr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x4xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %c = scf.while (%w = %n) : (i64) -> i64 {
    %lim = arith.constant 40 : i64
    %go = arith.cmpi slt, %w, %lim : i64
    scf.condition(%go) %w : i64
  } do {
  ^bb0(%w: i64):
    %two = arith.constant 2 : i64
    %d = arith.muli %w, %two : i64
    scf.yield %d : i64
  }
  %e = tensor.empty() : tensor<4x2xf32>
  %b = arith.constant dense<1.0> : tensor<4x2xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %tr, %c, %m : tensor<3xf32>, i64, tensor<4x2xf32>
}
"""


def _tp(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return tool(name, *args)


@pytest.mark.parametrize("storage", [[], ["--storage"]], ids=["value", "storage"])
def test_tp_run_runs_certified_programs_end_to_end(tmp_path: Path, storage: list[str]) -> None:
    """tp-opt certifies, tp-run runs: a diagonal generic, scf.while and linalg.matmul on
    random inputs; the two-chip program (scf.for, named ops on chips) on random weights."""
    src = tmp_path / "diag.mlir"
    src.write_text(DIAGONAL)
    done = _tp("tp-opt", str(src), "--tp-verify", "-o", str(tmp_path / "diag.v.mlir"))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out.npz"
    run = _tp(
        "tp-run",
        str(tmp_path / "diag.v.mlir"),
        "--random-inputs",
        "4",
        "--outputs",
        str(out),
        *storage,
    )
    assert run.returncode == 0, run.stderr
    given = random_inputs(load(DIAGONAL), 4, 3)  # tp-run's default --position 3
    a, n = given["a"].astype(np.float64), int(given["n"])
    while n < 40:
        n *= 2
    got = dict(np.load(out))
    check(
        got, [np.full(3, np.trace(a)), np.int64(n), a.sum(axis=1, keepdims=True).repeat(2, 1)], 1e-5
    )

    two = tmp_path / "two.mlir"
    two.write_text(TWO_CHIP)
    done = _tp("tp-opt", str(two), "-p", STAGES["programs"], "-o", str(tmp_path / "two.p.mlir"))
    assert done.returncode == 0, done.stderr
    run = _tp(
        "tp-run",
        str(tmp_path / "two.p.mlir"),
        "--random-weights",
        "6",
        "--outputs",
        str(out),
        *storage,
    )
    assert run.returncode == 0, run.stderr
    check(dict(np.load(out)), two_chip_answer(random_weights(load(TWO_CHIP), 6)), 1e-5)


def test_a_dropped_module_frees_its_plans_and_kernels() -> None:
    """Invariant: the executor's caches (a plan per structured op, a kernel per scalar op)
    hold no IR, so a module run and dropped is freed — kernels that name their op in an
    error (a division) included."""
    text = """
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %s: i32, %t: i32) -> (tensor<4xi32>, i32) {
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) {
  ^bb0(%x: i32, %y: i32, %o: i32):
    %q = arith.divsi %x, %y : i32
    linalg.yield %q : i32
  } -> tensor<4xi32>
  %u = arith.divsi %s, %t : i32
  func.return %r, %u : tensor<4xi32>, i32
}
"""
    module = load(text)
    a, b = np.array([7, -7, 9, 1], np.int32), np.array([2, 2, -4, 1], np.int32)
    got = run_program(module, {"a": a, "b": b, "s": np.int32(-9), "t": np.int32(2)})
    check(got, [np.array([3, -3, -2, 1], np.int32), np.int32(-4)], 0)
    held = weakref.ref(module)
    del module
    gc.collect()
    assert held() is None, "a cache keeps the module alive"
