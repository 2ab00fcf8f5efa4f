"""The relay of an exported program (tp-export's manifest) run over its segments, whatever
runs a segment: IREE's compiled functions (`tp_dialect.runtime.iree_exec`) or, in the tests,
the reference interpreter on the exported functions.

``run`` steps call a chip's segment on its arguments — what its halt receives (the chip's
inbox), values it carried from an earlier segment, host inputs and chip slices — and file its
results: a send in the chip's outbox, a carried value, an output. ``copy`` steps hand a sent
buffer to the receiving chip's inbox. ``@host`` runs last on the chips' outputs. A result
that is an argument returned unchanged (``"argument": i``) is the caller's own value: a
backend that writes arguments in place (IREE) cannot change what the host holds through it.
One pass over the relay's steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Port = dict[str, Any]
Entry = dict[str, Any]
Call = Callable[[Entry, list[Any]], tuple[Any, ...]]
"""Runs one manifest entry (a segment, or ``@host``) on its arguments: its results."""


def run_segments(
    manifest: dict[str, Any],
    host_input: Callable[[Port], Any],
    call: Call,
    finished: dict[tuple[int, int], Any] | None = None,
) -> tuple[Any, ...]:
    """``@host``'s results once the relay in ``manifest`` has run every segment by ``call``
    (``host_input`` gives an ``input`` or ``shard`` argument's value); ``finished``, when
    given, receives every chip's outputs by ``(chip, index)``."""

    def run(entry: Entry, args: list[Any]) -> tuple[Any, ...]:
        returned = call(entry, args)
        return tuple(
            args[port["argument"]] if "argument" in port else r
            for r, port in zip(returned, entry["results"], strict=True)
        )

    segments = {s["function"]: s for s in manifest["segments"]}
    chips = range(manifest["chips"])
    inbox: dict[int, dict[str, Any]] = {c: {} for c in chips}
    outbox: dict[int, dict[str, Any]] = {c: {} for c in chips}
    carried: dict[int, dict[str, Any]] = {c: {} for c in chips}
    finished = {} if finished is None else finished
    for step in manifest["relay"]:
        if "copy" in step:
            inbox[step["to"]][step["copy"]] = outbox[step["from"]][step["copy"]]
            continue
        seg = segments[step["run"]]
        c = seg["chip"]
        args = []
        for port in seg["arguments"]:
            if port["kind"] == "receive":
                args.append(inbox[c][port["name"]])
            elif port["kind"] == "carry":
                args.append(carried[c][port["name"]])
            else:
                args.append(host_input(port))
        for port, r in zip(seg["results"], run(seg, args), strict=True):
            if port["kind"] == "send":
                outbox[c][port["name"]] = r
            elif port["kind"] == "carry":
                carried[c][port["name"]] = r
            else:
                finished[(c, port["index"])] = r
    host = manifest["host"]
    args = [
        finished[(p["chip"], p["index"])] if p["kind"] == "output" else host_input(p)
        for p in host["arguments"]
    ]
    return run(host, args)
