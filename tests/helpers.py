"""What many test files share: one context, the tiny presets, generated programs parsed once
per configuration and worker, random values for a module, and bitwise output comparison."""

from __future__ import annotations

import functools
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


def tool(name: str, *args: object) -> subprocess.CompletedProcess[str]:
    """The installed tool ``name`` (``tp-run`` …) run on ``args``, its output captured."""
    return subprocess.run(
        [str(BIN / name), *map(str, args)], capture_output=True, text=True, timeout=300
    )
