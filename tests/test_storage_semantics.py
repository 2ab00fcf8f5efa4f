"""Storage semantics: a phased program run with in-place updates that really overwrite their
storage (a KV cache in a chip's memory) computes what its source program computes with value
semantics.

The reference interpreter's default (value semantics: ``tensor.insert_slice`` returns an
updated copy) hides a wrong phase order — a reader placed after the in-place writer of what it
reads still sees the old data. Under storage semantics (``run_program(..., storage=True)``) it
sees the new data, so every ordering bug of tp-phase on carried state shows in the numbers.

A. The storage mode itself, on hand-written programs against plain numpy: an in-place update
   is seen by a later reader of the old value (and is not under value semantics), the
   caller's arrays are never written, ``tp.shard`` gives the chip its own storage, and each
   chip of a per-chip run holds its own copies of the host inputs.
B. Every phased program: random programs (`random_programs.programs`, carried state in
   computed values, chip-typed and spine function arguments, old values read before their
   update) and generated tiny Qwen3 at N = 1, 2, 4, 8 with and without fold spelling, after
   ``tp-relocate, tp-transfers, tp-phase`` and then ``tp-link-points`` (run under the relay),
   under storage semantics, give the source program's outputs under value semantics bitwise
   (the same ops run in the same order on each value).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import program, tiny
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, check_ir, parse
from random_programs import Program, programs

from tp_dialect.ops import AllReduceOp, ShardOp
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools import tp_run

F32 = np.float32
PHASED = "tp-relocate{allreduce=%s},tp-transfers,tp-phase"


def assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], where: str) -> None:
    assert set(got) == set(want), (where, sorted(got), sorted(want))
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{where}: {name}")


def snapshot(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.array(v, copy=True) for k, v in values.items()}


# -- A. the storage mode ----------------------------------------------------------------------

_ROW = "tensor<1x4xf32, #tp.chip<0>>"
_K0 = "tensor<2x4xf32, #tp.chip<0>>"

# The cache is read AFTER its in-place update in source order, through its old name: under
# storage semantics that read sees the new row; under value semantics the old one.
READ_AFTER_UPDATE = f"""builtin.module attributes {{tp.chips = 1 : i64}} {{
  func.func @f(%k: {_K0} {{tp.name = "k"}}, %row: {_ROW} {{tp.name = "row"}},
               %past: tensor<2x4xf32> {{tp.name = "past"}})
      -> (tensor<2x4xf32> {{tp.name = "old"}}, tensor<2x4xf32> {{tp.name = "past_twice"}},
          tensor<2x4xf32> {{tp.name = "shard_new"}}) {{
    %new = tensor.insert_slice %row into %k[1, 0] [1, 4] [1, 1] : {_ROW} into {_K0}
    %old = tp.allreduce %k : {_K0} -> tensor<2x4xf32>
    %s = tp.shard %past at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2, 4]>
      : tensor<2x4xf32> -> {_K0}
    %s2 = tensor.insert_slice %row into %s[0, 0] [1, 4] [1, 1] : {_ROW} into {_K0}
    %shard_new = tp.allreduce %s2 : {_K0} -> tensor<2x4xf32>
    %e = tensor.empty() : tensor<2x4xf32>
    %past_twice = linalg.add ins(%past, %past : tensor<2x4xf32>, tensor<2x4xf32>)
      outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %old, %past_twice, %shard_new
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }}
}}
"""


def _inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "k": rng.standard_normal((2, 4)).astype(F32),
        "row": rng.standard_normal((1, 4)).astype(F32),
        "past": rng.standard_normal((2, 4)).astype(F32),
    }


def test_storage_mode_overwrites_the_cache_and_nothing_else() -> None:
    """Invariant: with storage semantics a read of the cache's old name after its in-place
    update sees the new row; with value semantics it sees the old cache. In both, the
    caller's arrays are not written, and an update of a ``tp.shard`` (the chip's own copy of
    a host tensor) leaves the host tensor as it was (plain numpy references)."""
    module = parse(READ_AFTER_UPDATE)
    values = _inputs(0)
    before = snapshot(values)
    updated = before["k"].copy()
    updated[1] = before["row"][0]
    shard_new = before["past"].copy()
    shard_new[0] = before["row"][0]
    value = run_program(module, values)
    storage = run_program(module, values, storage=True)
    np.testing.assert_array_equal(value["old"], before["k"])
    np.testing.assert_array_equal(storage["old"], updated)
    for got in (value, storage):
        np.testing.assert_array_equal(got["past_twice"], before["past"] + before["past"])
        np.testing.assert_array_equal(got["shard_new"], shard_new)
    assert_same(values, before, "the caller's inputs")


def test_storage_mode_gives_a_placed_shard_its_own_storage() -> None:
    """Invariant: a slice the host already placed on a chip (``placed``, e.g. a view of a
    checkpoint in memory) is copied into the chip's storage before an in-place update."""
    module = parse(READ_AFTER_UPDATE)
    values = _inputs(1)
    (shard,) = [op for op in module.walk() if isinstance(op, ShardOp)]
    host_view = values["past"][0:2]  # a view, as place_weights hands out
    before = snapshot(values)
    run_program(module, values, placed={shard: host_view}, storage=True)
    assert_same(values, before, "the caller's inputs")


# Chip 1 reads the old value of a spine cache passed in as an argument, then every chip updates
# its own copy in place and chip 0 reads the new one. Under the relay, chip 0 runs its update
# before chip 1 reads: chip 1 sees the old value only if it holds its own copy of the input.
SPINE_CACHE = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%k: tensor<2x4xf32> {tp.name = "k"}, %w: tensor<2x8xf32> {tp.name = "w"})
      -> (tensor<2x4xf32> {tp.name = "sum"}) {
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 8]>
      : tensor<2x8xf32> -> tensor<2x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(4, 4)], full = [2, 8]>
      : tensor<2x8xf32> -> tensor<2x4xf32, #tp.chip<1>>
    %e0 = tensor.empty() : tensor<2x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<2x4xf32, #tp.chip<1>>
    %a1 = linalg.add ins(%k, %w1 : tensor<2x4xf32>, tensor<2x4xf32, #tp.chip<1>>)
      outs(%e1 : tensor<2x4xf32, #tp.chip<1>>) -> tensor<2x4xf32, #tp.chip<1>>
    %r = tensor.extract_slice %w[0, 0] [1, 4] [1, 1] : tensor<2x8xf32> to tensor<1x4xf32>
    %k2 = tensor.insert_slice %r into %k[0, 0] [1, 4] [1, 1]
      : tensor<1x4xf32> into tensor<2x4xf32>
    %a0 = linalg.add ins(%k2, %w0 : tensor<2x4xf32>, tensor<2x4xf32, #tp.chip<0>>)
      outs(%e0 : tensor<2x4xf32, #tp.chip<0>>) -> tensor<2x4xf32, #tp.chip<0>>
    %sum = tp.allreduce %a0, %a1
      : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    func.return %sum : tensor<2x4xf32>
  }
}
"""


def test_storage_mode_under_the_relay_gives_each_chip_its_own_host_inputs() -> None:
    """Invariant: per-chip programs under the relay, with storage semantics, compute the plain
    numpy answer — chip 1 adds the old spine cache, chip 0 the one it updated in place — and
    leave the caller's arrays unwritten."""
    rng = np.random.default_rng(2)
    values = {
        "k": rng.standard_normal((2, 4)).astype(F32),
        "w": rng.standard_normal((2, 8)).astype(F32),
    }
    before = snapshot(values)
    k2 = before["k"].copy()
    k2[0] = before["w"][0, :4]
    want = (k2 + before["w"][:, :4]) + (before["k"] + before["w"][:, 4:])
    module = parse(SPINE_CACHE)
    apply(module, "tp-relocate,tp-transfers,tp-phase,tp-link-points")
    check_ir(module)
    got = run_program(module, values, storage=True)
    np.testing.assert_array_equal(got["sum"], want.astype(F32))
    assert_same(values, before, "the caller's inputs")


# -- B. every phased program ------------------------------------------------------------------


@settings(max_examples=60, **SETTINGS)
@given(programs(), st.sampled_from(("fold", "ring")), st.booleans())
def test_phased_random_programs_keep_their_numbers_under_storage_semantics(
    prog: Program, algorithm: str, raise_first: bool
) -> None:
    """Invariant: the source program under value semantics computes the numpy model's outputs;
    after [tp-raise-allreduce,] tp-relocate (fold or ring), tp-transfers, tp-phase it computes
    the same outputs (ring: to f32 rounding) under storage semantics, and so do its per-chip
    programs (a ring that could not be spelled out stays one collective: none)
    after tp-link-points, run under the relay; the caller's inputs are never written."""
    want = run_program(parse(prog.text()), prog.inputs)
    for name, expected in prog.expected.items():
        np.testing.assert_allclose(want[name], expected, rtol=1e-6, err_msg=name)
    before = snapshot(prog.inputs)
    module = parse(prog.text())
    spec = ("tp-raise-allreduce," if raise_first else "") + PHASED % algorithm
    apply(module, spec)
    check_ir(module)
    if algorithm == "ring":  # rotated folds: the source's sums to f32 rounding, then exact
        lowered = run_program(module, prog.inputs)
        for name, value in want.items():
            scale = max(1.0, float(np.max(np.abs(value), initial=0.0)))
            np.testing.assert_allclose(lowered[name], value, rtol=1e-5, atol=1e-5 * scale)
        want = lowered
    assert_same(run_program(module, prog.inputs, storage=True), want, spec)
    if not any(isinstance(op, AllReduceOp) and op.algorithm_name == "ring" for op in module.walk()):
        apply(module, "tp-link-points")
        check_ir(module)
        assert_same(run_program(module, prog.inputs, storage=True), want, "per-chip programs")
    assert_same(prog.inputs, before, "the caller's inputs")


@pytest.mark.parametrize("fold", [False, True], ids=["allreduce", "fold"])
@pytest.mark.parametrize("chips", [1, 2, 4, 8])
def test_phased_qwen3_keeps_its_numbers_under_storage_semantics(chips: int, fold: bool) -> None:
    """Invariant: a generated tiny Qwen3 decode step (2 layers; each chip's KV-cache slices
    updated in place at ``position`` and attended over) after tp-relocate, tp-transfers,
    tp-phase, and after tp-link-points under the relay, run under storage semantics, gives the
    source program's outputs (value semantics) bitwise, and leaves the inputs unwritten."""
    source = program(tiny(chips=chips, layers=2, fold=fold))
    values = {**random_weights(source, 5), **random_inputs(source, 6, position=7)}
    before = snapshot(values)
    want = run_program(source, values)
    module = source.clone()
    apply(module, PHASED % "fold")
    assert_same(run_program(module, values, storage=True), want, "phased")
    apply(module, "tp-link-points")
    assert_same(run_program(module, values, storage=True), want, "per-chip programs")
    assert_same(values, before, "the caller's inputs")


def test_tp_run_storage_runs_a_phased_program_and_checks_it(tmp_path, capsys) -> None:
    """Invariant: ``tp-run --storage --check`` on a phased tiny Qwen3 (N = 2) runs it under
    storage semantics, passes the check against the unsharded program, and writes the same
    outputs as a run with value semantics."""
    module = program(tiny(chips=2, layers=1)).clone()
    apply(module, PHASED % "fold")
    path = tmp_path / "phased.mlir"
    path.write_text(str(module))
    common = [str(path), "--random-weights", "3", "--random-inputs", "4", "--position", "5"]
    storage_out, value_out = tmp_path / "storage.npz", tmp_path / "value.npz"
    assert tp_run.main([*common, "--storage", "--check", "--outputs", str(storage_out)]) == 0
    printed = capsys.readouterr().out
    assert "storage semantics" in printed and "FAIL" not in printed, printed
    assert tp_run.main([*common, "--outputs", str(value_out)]) == 0
    with np.load(storage_out) as got, np.load(value_out) as want:
        assert_same({k: got[k] for k in got.files}, {k: want[k] for k in want.files}, "tp-run")


def test_tp_run_storage_changes_what_a_read_after_an_update_sees(tmp_path, capsys) -> None:
    """Invariant: ``tp-run --storage`` runs under storage semantics (the cache read after its
    in-place update sees the new row), ``tp-run`` without it under value semantics (the old
    cache); plain numpy gives both answers."""
    path, inputs = tmp_path / "f.mlir", tmp_path / "in.npz"
    path.write_text(READ_AFTER_UPDATE)
    values = _inputs(7)
    np.savez(inputs, **values)
    updated = values["k"].copy()
    updated[1] = values["row"][0]
    for flags, want in (([], values["k"]), (["--storage"], updated)):
        out = tmp_path / f"out{len(flags)}.npz"
        argv = [str(path), "--random-weights", "0", "--inputs", str(inputs), "--outputs", str(out)]
        assert tp_run.main([*argv, *flags]) == 0, capsys.readouterr().err
        with np.load(out) as got:
            np.testing.assert_array_equal(got["old"], want, err_msg=str(flags))
