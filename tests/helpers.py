"""What many test files share: one context, the tiny presets, generated programs parsed once
per configuration and worker, random values for a module, and bitwise output comparison."""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tp_dialect.frontend.families import ModelConfig, generate
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

CTX = tp_context()
BIN = Path(sys.executable).parent
"""Where the project's tools are installed (beside the running Python)."""


def tiny(**overrides: int | str | bool) -> Qwen3Config:
    """The tiny Qwen3 preset with ``overrides``."""
    return Qwen3Config.preset("tiny", **overrides)


def tiny_on(chips: int, **overrides: int | str | bool) -> Qwen3Config:
    """A tiny Qwen3 that ``chips`` divides: the preset where it does (N | 8), else heads,
    KV heads and the MLP scaled to N (N = 3: 6 heads, 3 KV heads, intermediate 48)."""
    if 8 % chips == 0:
        return tiny(chips=chips, **overrides)
    scaled: dict[str, int | str | bool] = {
        "heads": 2 * chips,
        "kv_heads": chips,
        "intermediate": 16 * chips,
    }
    return tiny(chips=chips, **{**scaled, **overrides})


@functools.cache
def program(cfg: ModelConfig, outline: bool = False) -> ModuleOp:
    """``cfg``'s decode step (``outline``: its outlined form), parsed and verified; cached for
    the whole worker, so callers never change it in place (they clone it, or `lowered` it)."""
    module, _ = parse_module(CTX, generate(cfg, outline=outline), f"<{cfg}>")
    module.verify()
    return module


def values_for(module: ModuleOp, position: int = 5) -> dict[str, np.ndarray]:
    """Random weights (seed 0) and inputs (seed 1, at ``position``) for ``module``'s ports."""
    return {**random_weights(module, 0), **random_inputs(module, 1, position)}


def assert_bitwise(a: dict[str, np.ndarray], b: dict[str, np.ndarray], where: str = "") -> None:
    """``a`` and ``b`` name the same tensors in the same order, each with the same dtype,
    shape and bits."""
    assert list(a) == list(b), where
    for name in a:
        at = f"{where}: {name}" if where else name
        assert a[name].dtype == b[name].dtype, at
        np.testing.assert_array_equal(a[name], b[name], err_msg=at, strict=True)


def funcs(module: ModuleOp) -> dict[str, FuncOp]:
    """``module``'s functions by name."""
    return {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}


IN_PROCESS = {
    "tp-opt": "tp_dialect.tools.tp_opt",
    "tp-gen": "tp_dialect.tools.tp_gen",
    "tp-run": "tp_dialect.tools.tp_run",
    "tp-generate": "tp_dialect.tools.tp_generate",
}
"""The tools `tool` runs in this process: their ``main(argv)`` is what the installed script
calls (tests/test_packaging.py and test_startup.py run the scripts themselves)."""


def tool(name: str, *args: object, process: bool = False) -> subprocess.CompletedProcess[str]:
    """The tool ``name`` (``tp-run`` …) run on ``args``, its exit code and output captured.
    tp-opt, tp-gen and tp-run run in this process through their ``main`` (a new Python costs
    ~0.8 s of CPU to import them: a tenth of the suite's), unless ``process`` is asked or
    tp-run starts MPI ranks (``--mpi``); anything else runs as the installed script."""
    argv = [str(a) for a in args]
    if process or name not in IN_PROCESS or "--mpi" in argv:
        return subprocess.run([str(BIN / name), *argv], capture_output=True, text=True, timeout=300)
    main = importlib.import_module(IN_PROCESS[name]).main
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    out.flush()
    err.flush()
    said = [stream.buffer.getvalue().decode() for stream in (out, err)]  # type: ignore[attr-defined]
    return subprocess.CompletedProcess([name, *argv], code, *said)
