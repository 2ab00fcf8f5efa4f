"""A decode step on IREE with every weight and cache slice already on the device: what a
serving loop pays a step, for `benchmarks.backends` (not itself a benchmark).

`resident_step` does what `tp_dialect.runtime.iree_exec.run_iree` does — the same export,
module cache, placement and relay (`tp_dialect.runtime.segments.run_segments`) — but places
once and returns a step that can be called again and again: ``run_iree`` places every weight
at each call, so its ``run_s`` is one step in a fresh context. The step donates what
``run_iree`` donates and copies what it copies (an argument IREE writes that the host does not
own alone); its count is reported, since each copy is a host round trip. With
``donate_carries`` a carried value IREE writes is donated too when one argument alone reads
it (the remedy measured in docs/benchmarks.md: nothing reads it after that segment).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tp_dialect.ops import ShardOp
from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.runtime import iree_exec
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.reference import bind
from tp_dialect.runtime.segments import run_segments
from tp_dialect.signature import entry_function, ports


@dataclass
class ResidentStep:
    """A step over device-resident arguments: ``run()`` returns the outputs by name (on the
    host); ``calls`` segment calls a step, ``copies`` written arguments copied a step."""

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
    donate_carries: bool = False,
) -> ResidentStep:
    """``module``'s per-chip programs compiled (or found in ``cache``), every input and slice
    placed on IREE's device once, and a step that runs the relay on them, equal to
    ``run_iree``'s outputs."""
    _, runtime = iree_exec.iree()
    func = entry_function(module)
    ins, outs = ports(func)
    host_values = {p.name: v for p, v in zip(ins, bind(ins, values), strict=True)}
    exported = module.clone()
    export_module(exported)
    manifest = manifest_of(exported)
    funcs = {f.sym_name.data: f for f in exported.ops if isinstance(f, FuncOp)}
    entries = [*manifest["segments"], manifest["host"]]
    device = iree_exec._Device(runtime)
    by_key: dict[str, Any] = {}
    called: dict[str, Any] = {}
    for entry in entries:
        text = iree_exec.segment_text(funcs[entry["function"]])
        key = cache.key(text)
        if key not in by_key:
            by_key[key] = device.function(cache.get(text, entry["function"]))
        called[entry["function"]] = by_key[key]
    slices = iree_exec._slices(module)
    resident: dict[Any, Any] = {}
    key_of = iree_exec._resident_key

    def host_port(port: dict[str, Any]) -> Any:
        key = key_of(port)
        if key not in resident:
            if port["kind"] == "input":
                data = host_values[port["name"]]
            else:
                shard = slices.get(key)
                data = (
                    placed[shard]
                    if shard is not None and shard in placed
                    else slice_of(np.asarray(host_values[port["name"]]), port["axis"], key[2])
                )
            resident[key] = device.place(data)
        return resident[key]

    reads = Counter(
        key_of(p) for e in entries for p in e["arguments"] if p["kind"] in iree_exec.RESIDENT
    )

    carry_reads = Counter(
        (e["chip"], p["name"])
        for e in entries
        if "chip" in e
        for p in e["arguments"]
        if p["kind"] == "carry"
    )

    def copied(entry: dict[str, Any], port: dict[str, Any]) -> bool:
        donated = port["kind"] in iree_exec.RESIDENT and reads[key_of(port)] == 1
        if donate_carries and port["kind"] == "carry":
            donated = carry_reads[(entry["chip"], port["name"])] == 1
        return bool(port.get("written")) and not donated

    def call(entry: dict[str, Any], args: list[Any]) -> tuple[Any, ...]:
        given = [
            device.place(a.to_host()) if copied(entry, port) else a
            for a, port in zip(args, entry["arguments"], strict=True)
        ]
        return iree_exec._results(called[entry["function"]](*given), len(entry["results"]))

    for entry in entries:
        for port in entry["arguments"]:
            if port["kind"] in iree_exec.RESIDENT:
                host_port(port)

    def run() -> dict[str, np.ndarray]:
        results = run_segments(manifest, host_port, call)
        return {
            p.name: np.asarray(r.to_host(), dtype=p.numpy_dtype)
            for p, r in zip(outs, results, strict=True)
        }

    segs = {s["function"]: s for s in manifest["segments"]}
    runs = [segs[s["run"]] for s in manifest["relay"] if "run" in s] + [manifest["host"]]
    return ResidentStep(
        run,
        len(manifest["segments"]),
        len(by_key),
        len(runs),
        sum(copied(e, p) for e in runs for p in e["arguments"]),
    )
