"""Generated programs for the tests, parsed once per configuration."""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


@functools.cache
def program(cfg: Qwen3Config, outline: bool = False) -> ModuleOp:
    """``cfg``'s decode step (``outline``: its outlined form), parsed and verified (cached:
    the tests reuse programs)."""
    module, _ = parse_module(tp_context(), generate(cfg, outline), f"<{cfg}>")
    module.verify()
    return module


def tiny(**overrides: int | str | bool) -> Qwen3Config:
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
