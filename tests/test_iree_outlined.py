# ruff: noqa: E501  (IR text is written out one op per line)
"""An outlined program on IREE as it is (no tp-inline first): its per-chip ``@layer``
functions export once, and each call's weight slices are read from the checkpoint
(`place_weights(through_calls=True)`), a cut weight never whole. The outputs equal the
interpreter's on the same program to f32 rounding, in one process and on MPI ranks; a slice
nobody loaded is an error, never a slice of the placeholder's zeros."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import program, tiny, tool

from tp_dialect.runtime.checkpoint import (
    MemorySource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.iree_exec import ModuleCache, prepare, run_iree
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.run_model import per_chip
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent


class CountingSource(MemorySource):
    """A MemorySource that records which tensors were read whole."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        super().__init__(tensors)
        self.whole_reads: list[str] = []

    def whole(self, name: str) -> np.ndarray:
        self.whole_reads.append(name)
        return super().whole(name)


def _outlined(chips: int) -> tuple[Any, Any, dict[str, np.ndarray], dict[str, np.ndarray]]:
    source = program(tiny(chips=chips, layers=2), outline=True)
    weights, inputs = random_weights(source, 0), random_inputs(source, 1, 5)
    return source, per_chip(source, "fold", False), weights, inputs


def _cut(name: str) -> bool:
    return name.endswith("proj.weight")  # what the plan cuts; norms stay whole


def test_the_chips_slices_are_read_never_a_cut_weight_whole(cache_dir: Path) -> None:
    source, lowered, weights, inputs = _outlined(2)
    counting = CountingSource(weights)
    placement = place_weights(lowered, counting, inputs, through_calls=True)
    assert not [n for n in counting.whole_reads if _cut(n)]
    assert [n for n in counting.whole_reads if "norm" in n]  # read whole by the callee
    assert {key[0] for key in placement.sliced} == {n for n in weights if _cut(n)}
    for (name, axis, ranges), got in placement.sliced.items():
        want = np.concatenate(
            [np.take(weights[name], range(a, a + n), axis) for a, n in ranges], axis
        )
        assert np.array_equal(got, want), name
    run = run_iree(
        lowered, placement.values, placement.placed, ModuleCache(cache_dir), placement.sliced
    )
    want = run_program(source, {**weights, **inputs})
    for name, value in want.items():
        np.testing.assert_allclose(run.outputs[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


MIXED = """
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %w0, %w1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %y = arith.addf %x, %s : tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32> {tp.name = "x", tp.role = "input"}, %w: tensor<8xf32> {tp.name = "w", tp.role = "weight"}, %v: tensor<8xf32> {tp.name = "v", tp.role = "weight"}) -> (tensor<4xf32> {tp.name = "y"}) {
    %y1 = func.call @layer(%x, %w) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
    %v2 = arith.addf %v, %v : tensor<8xf32>
    %y2 = func.call @layer(%y1, %v2) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
    func.return %y2 : tensor<4xf32>
  }
}
"""


def test_a_callee_handed_a_computed_value_at_one_call_reads_the_weight_whole(
    cache_dir: Path,
) -> None:
    """tp-export places a callee's slice only where every call hands it a host input; here
    one call hands it a sum the host computes, so the segments read ``w`` whole and
    `place_weights` must load it whole (a review found it bound to zeros, silently)."""
    source, _ = parse_module(tp_context(), MIXED, "<mixed>")
    lowered = per_chip(source, "fold", False)
    weights = {"w": np.arange(8, dtype=np.float32), "v": np.linspace(1, 2, 8, dtype=np.float32)}
    inputs = {"x": np.ones(4, np.float32)}
    counting = CountingSource(weights)
    placement = place_weights(lowered, counting, inputs, through_calls=True)
    assert "w" in counting.whole_reads and not placement.sliced
    run = run_iree(
        lowered, placement.values, placement.placed, ModuleCache(cache_dir), placement.sliced
    )
    want = run_program(source, {**weights, **inputs})
    np.testing.assert_allclose(run.outputs["y"], want["y"], rtol=1e-6)


def test_a_slice_never_loaded_is_an_error_not_zeros(cache_dir: Path) -> None:
    _, lowered, weights, inputs = _outlined(2)
    placement = place_weights(lowered, MemorySource(weights), inputs, through_calls=True)
    with pytest.raises(RuntimeError, match="never loaded"):
        prepare(lowered, placement.values, placement.placed, ModuleCache(cache_dir))


@pytest.mark.parametrize("ranks", [None, 2])
def test_tp_run_runs_an_outlined_program_on_iree_without_inlining(
    tmp_path: Path, cache_dir: Path, ranks: int | None
) -> None:
    src = tmp_path / "o.mlir"
    made = tool(
        "tp-gen", "qwen3", "--preset", "tiny", "--chips", 2, "--layers", 3, "--outline", "-o", src
    )
    assert made.returncode == 0, made.stderr
    argv = [str(src), "--random-weights", "0", "--random-inputs", "1"]
    argv += ["--backend", "iree", "--iree-cache", str(cache_dir), "--check"]
    argv += ["--mpi", str(ranks)] if ranks else []
    proc = tool("tp-run", *argv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tp-inline" not in proc.stderr
    assert "check against the unsharded program" in proc.stdout and "FAIL" not in proc.stdout
