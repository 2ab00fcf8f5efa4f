"""A regular (non-editable) install holds one namespace, tp_dialect, with its passes and tools."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_regular_install_maps_passes_and_tools_under_tp_dialect(tmp_path: Path) -> None:
    target = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # setuptools used to warn, in 25 lines, that tp_dialect.plans was not in `packages`.
    said = install.stdout + install.stderr
    assert "Warning" not in said and "tp_dialect.plans" not in said, said
    top = sorted(p.name for p in target.iterdir() if not p.name.endswith((".dist-info", "bin")))
    assert top == ["tp_dialect"], top
    assert (target / "tp_dialect" / "passes" / "__init__.py").is_file()
    assert (target / "tp_dialect" / "tools" / "tp_opt.py").is_file()
    assert {p.name for p in (target / "tp_dialect" / "plans").iterdir()} >= {
        "qwen3.json",
        "gpt2.json",
    }
    dist = next(target.glob("tp_dialect-*.dist-info"))
    entry_points = (dist / "entry_points.txt").read_text()
    assert "[xdsl.universe]" in entry_points
    assert "tp = tp_dialect.passes.universe:TP_UNIVERSE" in entry_points
    # every tool a plain install has, calibration included (it used to live in benchmarks/)
    for tool in ("tp_opt", "tp_gen", "tp_run", "tp_generate", "tp_calibrate"):
        script = f"{tool.replace('_', '-')} = tp_dialect.tools.{tool}:main"
        assert script in entry_points, script
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            # every tool, so every subpackage it reaches must have been installed
            "import tp_dialect, tp_dialect.passes, tp_dialect.tools.tp_opt;"
            "import tp_dialect.tools.tp_gen, tp_dialect.tools.tp_run, tp_dialect.runtime.model;"
            "import tp_dialect.tools.tp_calibrate;"
            "from tp_dialect.analysis.split.plan import load_plan;"
            "assert load_plan('gpt2').entries and load_plan('qwen3').entries;"
            "print(tp_dialect.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=tmp_path,
    )
    assert probe.stdout.strip().startswith(str(target))
