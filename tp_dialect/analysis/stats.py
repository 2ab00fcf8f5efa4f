"""Figures of a sectioned program, per layer: sections, phases, transfers, bytes moved.

Statements are attributed to a layer by their label's ``l{i}_`` prefix (as tp-gen names
them; a transfer by the value it moves); anything else is the prologue.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType

from tp_dialect.analysis.manifest import value_name
from tp_dialect.analysis.touch import statements
from tp_dialect.dtypes import numpy_dtype
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.signature import entry_function

_LAYER = re.compile(r"^l(\d+)_")


@dataclass
class LayerStats:
    """One layer's (or the prologue's) share of the program."""

    layer: str
    sections: int = 0
    transfers: int = 0
    bytes_moved: int = 0
    phases: set[int] = field(default_factory=set[int])


def tensor_bytes(t: object) -> int:
    assert isinstance(t, TensorType)
    return math.prod(t.get_shape()) * numpy_dtype(t.element_type).itemsize


def pipeline_stats(module: ModuleOp) -> list[LayerStats]:
    """Per-layer figures of ``module``'s entry function, prologue first, layers in order."""
    rows: dict[str, LayerStats] = {}
    for op in statements(entry_function(module)):
        if isinstance(op, SectionOp):
            name = op.label.data if op.label else ""
        elif isinstance(op, TransferOp):
            name = value_name(op.input)
        else:
            continue
        m = _LAYER.match(name)
        key = f"layer {m.group(1)}" if m else "prologue"
        row = rows.setdefault(key, LayerStats(key))
        if isinstance(op, SectionOp):
            row.sections += 1
        else:
            row.transfers += 1
            row.bytes_moved += tensor_bytes(op.input.type)
        phase = op.attributes.get("tp.phase")
        if isinstance(phase, IntegerAttr):
            row.phases.add(phase.value.data)
    layers = sorted((k for k in rows if k != "prologue"), key=lambda k: int(k.split()[1]))
    return [rows[k] for k in (["prologue"] if "prologue" in rows else []) + layers]


def format_stats(rows: list[LayerStats]) -> str:
    """A small table of the figures."""
    lines = [f"{'':10} {'sections':>8} {'phases':>7} {'transfers':>9} {'bytes':>10}"]
    for r in rows:
        lines.append(
            f"{r.layer:10} {r.sections:8d} {len(r.phases):7d} {r.transfers:9d} {r.bytes_moved:10d}"
        )
    return "\n".join(lines)
