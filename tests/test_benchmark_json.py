"""`python -m benchmarks.model_qwen3 --json FILE` writes the decode and prefill figures as the
issue states them, each no faster than its own bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_json_holds_prefill_and_decode_per_chip_count(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    # Run from the checkout: xdsl installs a top-level package named `benchmarks` too.
    argv = ["1", "--json", str(out), "--prefill-tokens", "8", "--chips", "1,2"]
    subprocess.run(
        [sys.executable, "-m", "benchmarks.model_qwen3", *argv],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    figures = json.loads(out.read_text())
    assert set(figures) == {"prefill", "decode"}
    assert set(figures["decode"]) == set(figures["prefill"]) == {"1", "2"}
    for n, row in figures["decode"].items():
        assert set(row) == {"step_s", "bound_s"}
        assert row["step_s"] >= row["bound_s"] > 0, n
    for n, row in figures["prefill"].items():
        assert set(row) == {"ttft_s", "compute_bound_s", "schedule"}
        assert row["ttft_s"] >= row["compute_bound_s"] > 0, n
    # One chip: no all-reduce, inlined or not (whichever the model finds faster).
    assert figures["prefill"]["1"]["schedule"] in (
        "dataflow, fused (sn40l), no all-reduces",
        "dataflow, inlined, fused (sn40l), no all-reduces",
    )
    assert figures["prefill"]["2"]["schedule"].startswith("dataflow, ")
    assert "fused (sn40l), " in figures["prefill"]["2"]["schedule"]
    assert figures["decode"]["2"]["step_s"] < figures["decode"]["1"]["step_s"]
