"""A tool starts without ml_dtypes (more than half its import time), and bf16 still works in
a process that meets it first through a checkpoint or a program's element type."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file


def _fresh(code: str) -> str:
    """``code`` run in a new interpreter (nothing imported yet); its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


def test_the_tools_import_no_ml_dtypes() -> None:
    out = _fresh(
        "import sys\n"
        "import tp_dialect.tools.tp_opt, tp_dialect.tools.tp_run, tp_dialect.tools.tp_gen\n"
        "print('ml_dtypes' in sys.modules)"
    )
    assert out == "False"


def test_the_tools_import_no_dialect_or_interpreter_they_do_not_run() -> None:
    """xDSL's every-interpreter package (RISC-V, Snitch, ...) costs a tool's start most of a
    second and runs no tp op; tp-opt, which interprets nothing, imports no affine or memref."""
    probe = (
        "import sys\n"
        "import tp_dialect.tools.{tools}\n"
        "print(sorted(m for m in sys.modules if m in {names!r}))"
    )
    tools = "tp_opt, tp_dialect.tools.tp_run, tp_dialect.runtime.session"
    names = ("xdsl.interpreters", "xdsl.dialects.riscv")
    assert _fresh(probe.format(tools=tools, names=names)) == "[]"
    names = ("xdsl.dialects.affine", "xdsl.dialects.memref")
    assert _fresh(probe.format(tools="tp_opt", names=names)) == "[]"


def test_a_bf16_checkpoint_reads_in_a_fresh_process(tmp_path: Path) -> None:
    want = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    path = tmp_path / "w.safetensors"
    save_file({"w": want.astype(ml_dtypes.bfloat16)}, str(path))
    out = _fresh(
        "from tp_dialect.runtime.tensor_files import SafetensorsSource\n"
        f"s = SafetensorsSource({str(path)!r})\n"
        "a = s.whole('w')\n"
        "print(a.dtype, a.astype('float32').ravel().tolist())"
    )
    assert out == f"bfloat16 {want.ravel().tolist()}"


def test_a_bf16_element_type_maps_in_a_fresh_process() -> None:
    out = _fresh(
        "from xdsl.dialects.builtin import BFloat16Type\n"
        "from tp_dialect.dtypes import numpy_dtype\n"
        "print(numpy_dtype(BFloat16Type()).name)"
    )
    assert out == "bfloat16"


def test_tp_opt_imports_only_the_passes_it_runs(tmp_path: Path) -> None:
    """A tp-opt run imports the passes it runs and no other (each pass's module is read on
    demand; listing their summaries for --help would read them all)."""
    src = tmp_path / "m.mlir"
    src.write_text("builtin.module attributes {tp.chips = 2 : i64} {}\n")
    out = _fresh(
        "import sys\n"
        "from tp_dialect.tools.tp_opt import main\n"
        f"main([{str(src)!r}, '--tp-verify', '-o', {str(tmp_path / 'out.mlir')!r}])\n"
        "print(sorted(m for m in sys.modules if m.startswith('tp_dialect.passes.')))"
    )
    passes = {name.strip("' ") for name in out.strip("[]").split(",")}
    assert "tp_dialect.passes.verify" in passes
    assert not passes & {"tp_dialect.passes.relocate", "tp_dialect.passes.export_shard"}


def test_tp_opt_help_lists_every_pass_with_its_summary() -> None:
    from tp_dialect.passes import TP_PASSES

    out = subprocess.run(
        [str(Path(sys.executable).parent / "tp-opt"), "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"COLUMNS": "1000", "PATH": ""},
    ).stdout
    for name, factory in TP_PASSES.items():
        summary = (factory().__doc__ or "").strip().split("\n\n")[0].split()
        assert summary, name
        assert f"--{name} [OPTIONS] {' '.join(summary)}" in " ".join(out.split()), name
