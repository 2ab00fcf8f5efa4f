"""``tp-run --mpi N --backend iree``: each rank compiles and runs its own chip's segments on
IREE, links over MPI; the outputs are the single-process interpreter's (same lowering) to
f32 rounding for every all-reduce algorithm and bf16 weights, ``--check`` against the
unsharded program passes, and what the combination cannot do is refused in one line.

Every MPI run is a bounded subprocess; compiled modules are shared through one cache
directory for the file (IREE takes about a second a segment).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers import program, tiny
from iree_mpi_driver import PIPELINE
from safetensors.numpy import save_file
from test_mpi import BIN, TIMEOUT, interpreted, one_error, tp_run

from tp_dialect.frontend.qwen3 import generate
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program


def _files(
    tmp_path: Path, chips: int, dtype: str = "f32"
) -> tuple[Path, Path, Path, dict[str, np.ndarray]]:
    """The tiny 2-layer source program on ``chips`` with ``dtype`` weights, its checkpoint
    and inputs files, and the weights."""
    cfg = tiny(chips=chips, layers=2, dtype=dtype)
    module = program(cfg)
    src = tmp_path / "src.mlir"
    src.write_text(generate(cfg))
    weights = random_weights(module, 1)
    ckpt, inputs = tmp_path / "w.safetensors", tmp_path / "in.npz"
    save_file(weights, str(ckpt))
    np.savez(inputs, **random_inputs(module, 2, 3))
    return src, ckpt, inputs, weights


def _max_rel(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


@pytest.mark.parametrize(
    ("chips", "allreduce", "dtype"),
    [
        (2, "fold", "f32"),
        (2, "oneshot", "f32"),
        (2, "twoshot", "f32"),
        (2, "ring", "f32"),
        (2, "oneshot", "bf16"),
        (4, "twoshot", "f32"),
    ],
)
def test_iree_on_ranks_equals_the_interpreter(
    tmp_path: Path, cache_dir: Path, chips: int, allreduce: str, dtype: str
) -> None:
    src, ckpt, inputs, weights = _files(tmp_path, chips, dtype)
    out = tmp_path / "out.npz"
    proc = tp_run(
        *(src, "--weights", ckpt, "--inputs", inputs, "--outputs", out, "--stats"),
        *("--mpi", chips, "--backend", "iree", "--allreduce", allreduce),
        *("--iree-cache", cache_dir),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"on {chips} MPI rank(s) ({chips} chip(s), relay direct, IREE llvm-cpu)" in proc.stdout
    assert "peak RSS" in proc.stdout
    spec = f"tp-relocate{{allreduce={allreduce}}},tp-transfers,tp-link-points"
    want = interpreted(src, weights, inputs, spec)
    with np.load(out) as got:
        assert sorted(got.files) == sorted(want)
        for name, value in want.items():
            assert got[name].dtype == value.dtype, name
            assert _max_rel(got[name], value) <= 1e-5, name


def test_check_against_the_unsharded_program(tmp_path: Path, cache_dir: Path) -> None:
    src, ckpt, inputs, _ = _files(tmp_path, 2)
    proc = tp_run(
        *(src, "--weights", ckpt, "--inputs", inputs, "--check"),
        *("--mpi", 2, "--backend", "iree", "--iree-cache", cache_dir),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check against the unsharded program" in proc.stdout
    assert proc.stdout.count(" ok") == 5 and "FAIL" not in proc.stdout


def test_under_your_own_launcher_a_wrong_world_is_one_line(tmp_path: Path) -> None:
    src, ckpt, inputs, _ = _files(tmp_path, 2)
    proc = subprocess.run(
        [str(BIN / "mpiexec"), "-n", "3", str(BIN / "tp-run"), str(src)]
        + ["--backend", "mpi", "--engine", "iree", "--weights", str(ckpt), "--inputs", str(inputs)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode != 0
    assert (
        "tp-run: error: world size 3 does not fit the program: it has 2 chip(s), "
        "so it runs on 2 rank(s)"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--mpi", "2", "--backend", "iree", "--storage"],
            "tp-run: error: --storage is the interpreter's: IREE runs tensors as values "
            "(drop --storage)",
        ),
        (
            ["--mpi", "2", "--backend", "iree", "--relay", "host"],
            "tp-run: error: --relay host is the interpreter's: IREE's ranks send each buffer "
            "straight to its receivers (drop --relay host)",
        ),
        (
            ["--mpi", "2", "--backend", "iree", "--iree-target", "cuda"],
            "tp-run: error: --iree-target cuda runs in one process: IREE's ranks run llvm-cpu "
            "(drop --mpi)",
        ),
        (
            ["--engine", "iree"],
            "tp-run: error: --engine is a rank's (--backend mpi): in one process, or to start "
            "ranks with --mpi N, give --backend iree",
        ),
        (
            ["--mpi", "3", "--backend", "iree"],
            "tp-run: error: --mpi 3 does not fit the program: it has 2 chip(s), one rank "
            "each: give --mpi 2",
        ),
    ],
)
def test_what_iree_on_ranks_does_not_do_is_one_line(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    src, ckpt, inputs, _ = _files(tmp_path, 2)
    out = tmp_path / "out.npz"
    proc = tp_run(src, "--weights", ckpt, "--inputs", inputs, "--outputs", out, *flags)
    assert one_error(proc) == message
    assert not out.exists()


@pytest.mark.parametrize(("chips", "allreduce"), [(2, "ring"), (4, "oneshot")])
def test_the_rank_loop_on_the_interpreter_is_bitwise_the_per_chip_programs(
    tmp_path: Path, chips: int, allreduce: str
) -> None:
    """`run_rank` with the reference interpreter as ``call`` (what a session on ranks reuses):
    bitwise the interpreter on the per-chip programs themselves."""
    out = tmp_path / "out.npz"
    driver = Path(__file__).resolve().parent / "iree_mpi_driver.py"
    proc = subprocess.run(
        [str(BIN / "mpiexec"), "-n", str(chips), str(BIN / "python"), str(driver)]
        + [str(out), str(chips), allreduce],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    module = lowered(program(tiny(chips=chips, layers=2)), PIPELINE.format(allreduce))
    values = {**random_weights(module, 0), **random_inputs(module, 1, 5)}
    want = run_program(module, values)
    with np.load(out) as got:
        assert sorted(got.files) == sorted(want)
        for name, value in want.items():
            assert np.array_equal(got[name], value), name
