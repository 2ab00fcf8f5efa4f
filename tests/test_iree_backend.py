"""tp-export's segments compiled by IREE, and ``tp-run --backend iree``: the same numbers as
the reference interpreter (and the unsharded program), compiled modules cached on disk, clear
refusals. Compiled modules are shared by every test through one session cache directory
(IREE takes about a second a segment)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import tool
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tp_dialect.frontend.families import unsharded_text
from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs, random_weights
from tp_dialect.runtime.iree_exec import ModuleCache, run_iree, segment_text
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
PIPELINE = "tp-relocate{{allreduce={}}},tp-transfers,tp-phase,tp-link-points,tp-relay"


@functools.cache
def _source(chips: int, dtype: str) -> str:
    """tp-gen's tiny 2-layer qwen3 step on ``chips`` chips, ``dtype`` weights."""
    proc = tool(
        "tp-gen", "qwen3", "--preset", "tiny", "--layers", 2, "--chips", chips, "--dtype", dtype
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _programs(chips: int, algorithm: str = "fold", dtype: str = "f32") -> ModuleOp:
    """The tiny 2-layer qwen3 step as flat per-chip programs with their relay."""
    module, _ = parse_module(tp_context(), _source(chips, dtype), "<tp-gen>")
    return lowered(module, PIPELINE.format(algorithm))


def _args(module: ModuleOp, seed: int = 0) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    weights = random_weights(module, seed)
    inputs = random_inputs(module, seed + 1, 5)
    placement = place_weights(module, MemorySource(weights), inputs)
    return placement.values, placement, {**weights, **inputs}


def _max_rel(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


@pytest.mark.parametrize(
    ("chips", "algorithm", "dtype"),
    [
        (1, "fold", "f32"),
        (2, "fold", "f32"),
        (4, "fold", "f32"),
        (2, "oneshot", "f32"),
        (2, "twoshot", "f32"),
        (2, "ring", "f32"),
        (4, "twoshot", "bf16"),
        (8, "ring", "f32"),
    ],
)
def test_iree_equals_the_interpreter_and_the_unsharded_program(
    chips: int, algorithm: str, dtype: str, cache_dir: Path
) -> None:
    module = _programs(chips, algorithm, dtype)
    values, placement, given = _args(module)
    kept = {k: np.array(v, copy=True) for k, v in values.items()}
    run = run_iree(module, values, placement.placed, ModuleCache(cache_dir))
    for name, value in kept.items():  # IREE wrote only buffers of its own
        assert np.array_equal(np.asarray(values[name]), value), name
    interp = run_program(module, values, placement.placed)
    reference, _ = parse_module(
        tp_context(), unsharded_text(module.attributes["tp.config"]), "<unsharded>"
    )
    unsharded = run_program(reference, given)
    assert set(run.outputs) == set(interp) == set(unsharded)
    for name, want in interp.items():
        assert run.outputs[name].dtype == want.dtype
        assert _max_rel(run.outputs[name], want) <= 1e-5, name
        assert _max_rel(run.outputs[name], unsharded[name]) <= 1e-4, name


@pytest.mark.parametrize("maxloc", ["fold", "oneshot"])
def test_a_vocab_parallel_argmax_picks_what_the_interpreter_picks(
    maxloc: str, cache_dir: Path
) -> None:
    source = (ROOT / "lit_tests" / "tp-link-points" / "maxloc.mlir").read_text()
    module, _ = parse_module(tp_context(), source, "maxloc.mlir")
    module = lowered(module, f"tp-relocate{{maxloc={maxloc}}},tp-transfers,tp-link-points")
    for seed in range(4):
        values, placement, _ = _args(module, seed)
        run = run_iree(module, values, placement.placed, ModuleCache(cache_dir))
        want = run_program(module, values, placement.placed)
        assert {k: v.tolist() for k, v in run.outputs.items()} == {
            k: v.tolist() for k, v in want.items()
        }


def test_every_exported_segment_compiles_with_iree(cache_dir: Path) -> None:
    module = lowered(
        parse_module(tp_context(), (ROOT / "examples" / "megatron_mlp.mlir").read_text(), "mlp")[0],
        PIPELINE.format("oneshot"),
    )
    export_module(module)
    manifest = manifest_of(module)
    funcs = [f for f in module.ops if isinstance(f, FuncOp)]
    names = {f.sym_name.data for f in funcs}
    assert names == {s["function"] for s in manifest["segments"]} | {"host"}
    cache = ModuleCache(cache_dir)
    for f in funcs:
        text = segment_text(f)
        assert "tp." not in text
        assert cache.get(text, f.sym_name.data)  # IREE compiled it
    assert cache.compiled + cache.hits == len(funcs)  # each compiled once, or found


def test_a_second_run_compiles_nothing_and_a_corrupt_entry_is_rebuilt(tmp_path: Path) -> None:
    """A program's distinct segments are one module, compiled once: a second run finds it;
    an entry overwritten or truncated is compiled again, never loaded."""
    module = _programs(2, "oneshot")
    values, placement, _ = _args(module)
    first = run_iree(module, values, placement.placed, ModuleCache(tmp_path))
    assert first.functions > first.distinct > 1  # chips 0 and 1 share segments
    assert (first.compiled, first.hits) == (1, 0)
    second = run_iree(module, values, placement.placed, ModuleCache(tmp_path))
    assert (second.compiled, second.hits, second.rebuilt) == (0, 1, 0)
    (entry,) = tmp_path.glob("*.vmfb")
    for damage in (
        entry.read_bytes()[:-7] + b"garbage",  # same length, bad data
        entry.read_bytes()[:100],  # truncated
    ):
        entry.write_bytes(damage)
        again = run_iree(module, values, placement.placed, ModuleCache(tmp_path))
        assert (again.compiled, again.rebuilt) == (1, 1)
        for name, want in first.outputs.items():
            assert np.array_equal(again.outputs[name], want), name


def _tp_run(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if env is None:
        return tool("tp-run", *args)
    return subprocess.run(
        [str(BIN / "tp-run"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_tp_run_backend_iree_checks_against_the_unsharded_program(
    tmp_path: Path, cache_dir: Path
) -> None:
    program = tmp_path / "q2.mlir"
    program.write_text(_source(2, "f32"))
    out = tmp_path / "out.npz"
    args = ["--random-weights", 0, "--random-inputs", 1, "--iree-cache", cache_dir]
    proc = _tp_run(program, *args, "--backend", "iree", "--check", "--outputs", out)
    assert proc.returncode == 0, proc.stderr
    assert "on IREE llvm-cpu" in proc.stdout and "ok" in proc.stdout
    assert "lowering a copy to per-chip programs" in proc.stderr
    ref = tmp_path / "ref.npz"
    assert _tp_run(program, *args[:4], "--outputs", ref).returncode == 0
    got, want = np.load(out), np.load(ref)
    for name in want.files:
        assert _max_rel(got[name], want[name]) <= 1e-5, name


REFUSED = """
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<1xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %c0 = arith.constant 0 : index
      %y = tp.section "y" on [0] {
        %m = bufferization.to_buffer %x0 : tensor<4xf32> to memref<4xf32>
        %v = memref.load %m[%c0] : memref<4xf32>
        %t = tensor.from_elements %v : tensor<1xf32>
        tp.yield %t : tensor<1xf32>
      } : tensor<1xf32>
      tp.finish %y : tensor<1xf32>
    } : (tensor<4xf32>) -> (tensor<1xf32>)
    func.return %r : tensor<1xf32>
  }
}
"""


def test_a_segment_iree_refuses_is_one_line_naming_chip_segment_and_error(
    tmp_path: Path, cache_dir: Path
) -> None:
    program = tmp_path / "refused.mlir"
    program.write_text(REFUSED)
    ok = _tp_run(program, "--random-inputs", 0)  # the interpreter runs it
    assert ok.returncode == 0, ok.stderr
    proc = _tp_run(program, "--random-inputs", 0, "--backend", "iree", "--iree-cache", cache_dir)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert errors == [
        "tp-run: error: chip 0 segment chip0_halt1: IREE refused it: line 4:10: failed to "
        "legalize operation 'bufferization.to_buffer' that was explicitly marked illegal: "
        + errors[0].split("explicitly marked illegal: ", 1)[1]
    ]
    assert "Traceback" not in proc.stderr


def test_without_iree_the_backend_names_the_extra(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "iree"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("")  # an `iree` with neither compiler nor runtime
    env = {**os.environ, "PYTHONPATH": str(shim.parent)}
    program = ROOT / "examples" / "megatron_mlp.mlir"
    proc = _tp_run(program, "--random-inputs", 0, "--backend", "iree", env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "tp-run: error: --backend iree needs IREE, which is not installed: pip install "
        "'tp-dialect[iree]' (iree-base-compiler and iree-base-runtime 3.13.0)"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "iree", "--storage"], "--storage is the interpreter's: IREE runs tensors"),
        (["--backend", "iree", "--engine", "iree"], "--engine is a rank's (--backend mpi)"),
        (["--iree-cache", "somewhere"], "tp-run: error: --iree-cache is for --backend iree"),
    ],
)
def test_what_the_iree_backend_does_not_do_is_refused_first(flags: list[str], message: str) -> None:
    program = ROOT / "examples" / "megatron_mlp.mlir"
    proc = _tp_run(program, "--random-inputs", 0, *flags)
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr
