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


def run_entry(call: Call, entry: Entry, args: list[Any]) -> tuple[Any, ...]:
    """``entry``'s results by ``call``, a result that is an argument returned unchanged being
    the caller's own argument."""
    returned = call(entry, args)
    return tuple(
        args[port["argument"]] if "argument" in port else r
        for r, port in zip(returned, entry["results"], strict=True)
    )


def run_segment(
    seg: Entry,
    inbox: dict[str, Any],
    carried: dict[str, Any],
    host_input: Callable[[Port], Any],
    call: Call,
) -> list[tuple[Port, Any]]:
    """Run one segment of its chip on what its chip received (``inbox``), carried and the
    host's inputs: its sends and outputs with their ports (carried values filed back into
    ``carried``)."""
    args = []
    for port in seg["arguments"]:
        if port["kind"] == "receive":
            args.append(inbox[port["name"]])
        elif port["kind"] == "carry":
            args.append(carried[port["name"]])
        else:
            args.append(host_input(port))
    out = []
    for port, r in zip(seg["results"], run_entry(call, seg, args), strict=True):
        if port["kind"] == "carry":
            carried[port["name"]] = r
        else:
            out.append((port, r))
    return out


def run_host(
    manifest: dict[str, Any],
    finished: dict[tuple[int, int], Any],
    host_input: Callable[[Port], Any],
    call: Call,
) -> tuple[Any, ...]:
    """``@host``'s results on the chips' outputs (``finished``, by chip and index)."""
    host = manifest["host"]
    args = [
        finished[(p["chip"], p["index"])] if p["kind"] == "output" else host_input(p)
        for p in host["arguments"]
    ]
    return run_entry(call, host, args)


def run_segments(
    manifest: dict[str, Any],
    host_input: Callable[[Port], Any],
    call: Call,
    finished: dict[tuple[int, int], Any] | None = None,
) -> tuple[Any, ...]:
    """``@host``'s results once the relay in ``manifest`` has run every segment by ``call``
    (``host_input`` gives an ``input`` or ``shard`` argument's value); ``finished``, when
    given, receives every chip's outputs by ``(chip, index)``."""
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
        for port, r in run_segment(seg, inbox[c], carried[c], host_input, call):
            if port["kind"] == "send":
                outbox[c][port["name"]] = r
            else:
                finished[(c, port["index"])] = r
    return run_host(manifest, finished, host_input, call)
