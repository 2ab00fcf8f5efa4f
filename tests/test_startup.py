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
