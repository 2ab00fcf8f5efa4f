"""Generated programs for the tests, parsed once per configuration."""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


@functools.cache
def program(cfg: Qwen3Config) -> ModuleOp:
    """``cfg``'s decode step, parsed and verified (cached: the tests reuse programs)."""
    module, _ = parse_module(tp_context(), generate(cfg), f"<{cfg}>")
    module.verify()
    return module


def tiny(**overrides: int | str | bool) -> Qwen3Config:
    return Qwen3Config.preset("tiny", **overrides)
