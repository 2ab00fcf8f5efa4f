"""A decode step on IREE with every weight and cache slice already on the device: what a
serving loop pays a step, for `benchmarks.backends` (not itself a benchmark).

`resident_step` is `tp_dialect.runtime.iree_exec.prepare` (the export, module cache and
placement of ``tp-run --backend iree``) once, then the relay (`run_segments`) as often as
asked: ``run_iree`` prepares at every call, so its ``run_s`` is one step in a fresh context.
It counts what a step copies: an argument IREE writes that the host does not own alone goes
to the host and back (``prepare``'s ``call``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.ops import ShardOp
from tp_dialect.runtime import iree_exec
from tp_dialect.runtime.segments import run_segments


@dataclass
class ResidentStep:
    """A step over device-resident arguments: ``run()`` returns the outputs by name (on the
    host); ``calls`` function calls a step, ``copies`` written arguments copied a step."""

    run: Callable[[], dict[str, np.ndarray]]
    segments: int
    distinct: int
    calls: int
    copies: int


def resident_step(
    module: ModuleOp,
    values: Mapping[str, Any],
    placed: Mapping[ShardOp, np.ndarray],
    cache: iree_exec.ModuleCache,
) -> ResidentStep:
    """``module``'s per-chip programs compiled (or found in ``cache``), every input and slice
    placed on IREE's device once, and a step running the relay on them: ``run_iree``'s
    outputs, without its compiling and placing."""
    prepared = iree_exec.prepare(module, values, placed, cache)
    manifest = prepared.manifest

    def run() -> dict[str, np.ndarray]:
        results = run_segments(manifest, prepared.host_input, prepared.call)
        return iree_exec.host_outputs(module, results)

    segs = {s["function"]: s for s in manifest["segments"]}
    runs = [segs[s["run"]] for s in manifest["relay"] if "run" in s] + [manifest["host"]]
    key = iree_exec.resident_key
    reads = Counter(key(p) for e in runs for p in e["arguments"] if p["kind"] in iree_exec.RESIDENT)
    copies = sum(
        bool(p.get("written")) and not (p["kind"] in iree_exec.RESIDENT and reads[key(p)] == 1)
        for e in runs
        for p in e["arguments"]
    )
    return ResidentStep(run, len(segs), prepared.distinct, len(runs), copies)
