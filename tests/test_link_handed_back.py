"""A lowered call's results that no chip computes — an argument the callee hands straight
back, a constant it returns — reach the host at every stage, in one process and on MPI ranks
(tp-link-points once left the host's return reading the erased call)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ir_helpers import apply, parse

from tp_dialect.runtime.reference import run_program

SOURCE = Path(__file__).parent / "inputs" / "callee_hands_back.mlir"
STAGES = {
    "phased": "tp-verify,tp-relocate,tp-transfers,tp-phase",
    "programs": "tp-verify,tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay",
    "inlined back": "tp-verify,tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay,"
    "tp-inline,tp-verify",
}


def expected(x: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """The program in numpy: y = x*x + (w[:4] + w[4:]), z = x*x handed back, c = 2."""
    x2 = x * x
    return {"y": x2 + (w[:4] + w[4:]), "z": x2, "c": np.full(4, 2.0, np.float32)}


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_the_host_takes_what_no_chip_computes(stage: str) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(4, np.float32), rng.standard_normal(8, np.float32)
    module = parse(SOURCE.read_text())
    apply(module, STAGES[stage])
    got = run_program(module, {"x": x, "w": w})
    for name, want in expected(x, w).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6, err_msg=name)


def test_on_mpi_ranks(tmp_path: Path) -> None:
    lowered = tmp_path / "programs.mlir"
    bin_dir = Path(sys.executable).parent
    spec = STAGES["programs"]
    opt = subprocess.run(
        [bin_dir / "tp-opt", SOURCE, "-p", spec, "-o", lowered], capture_output=True, text=True
    )
    assert opt.returncode == 0, opt.stderr
    run = subprocess.run(
        [
            bin_dir / "tp-run",
            lowered,
            "--mpi",
            "2",
            "--random-weights",
            "0",
            "--random-inputs",
            "1",
            "--check",
            "--against",
            SOURCE,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.count(" ok") == 3, run.stdout
