"""The tiny Qwen3 Megatron programs tp-gen wrote by hand, per chip, before issue 24 made its
sharded program tp-split's (the last such tp-gen: commit acb7870): kept, gzipped, in
``megatron_programs/`` as the reference the split's numbers stay bitwise equal to."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

FOLDER = Path(__file__).resolve().parent / "megatron_programs"

# The configs kept (overrides of the tiny preset; whether outlined).
NAMES: tuple[tuple[dict[str, Any], bool], ...] = (
    *((dict(chips=c, batch=b, layers=1), False) for c in (1, 2, 4, 8) for b in (1, 2)),
    *((dict(chips=c, layers=2), False) for c in (2, 4)),
    (dict(chips=4, layers=1, fused_gate_up=True), False),
    (dict(chips=2, layers=1, fused_qkv=True, fold=True), False),
    (dict(chips=4, layers=1, fused_qkv=True, fused_gate_up=True, fold=True), False),
    (dict(chips=2, layers=2, dtype="bf16"), True),
    (dict(chips=4, layers=2, fold=True, fused_qkv=True), False),
    (dict(chips=2, layers=1, fused_gate_up=True, dtype="bf16"), False),
)


def golden_name(overrides: dict[str, Any], outline: bool) -> str:
    """The file holding the hand-written program of the tiny preset with ``overrides``."""
    parts = [f"{k}-{v}" for k, v in sorted(overrides.items())]
    return "qwen3_" + "_".join(parts + (["outline"] if outline else [])) + ".mlir.gz"


@functools.cache
def _megatron(key: tuple[tuple[str, Any], ...], outline: bool) -> ModuleOp:
    path = FOLDER / golden_name(dict(key), outline)
    module, _ = parse_module(tp_context(), gzip.decompress(path.read_bytes()).decode(), str(path))
    return module


def megatron(outline: bool = False, **overrides: Any) -> ModuleOp:
    """The hand-written Megatron program of the tiny preset with ``overrides`` (one of
    `NAMES`), parsed (cached: callers clone before changing it)."""
    return _megatron(tuple(sorted(overrides.items())), outline)
