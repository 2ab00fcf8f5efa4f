"""Per-chip memories: one model for sectioned programs and per-chip programs alike.

Invariant: a chip's memory holds (1) for the whole step, the host data placed on it — every
slice a ``tp.shard`` cuts for it (weights, KV-cache slices), each distinct slice once, and every
host tensor a section on it reads whole (spine weights such as norms; the hidden state) — and
(2) the live tensors it computes or receives, each from the event that stores it to its last
read on that chip. Both forms are reduced to the same per-chip event streams (`sectioned_streams`,
`program_streams`: store / read / hand-out, in the order the chip meets them) and replayed by one
`Memories`: a read of a tensor the chip does not hold fails, naming the tensor and the chip; an
in-place update (a cache write) lives in its destination's storage, so it adds no bytes;
a tensor handed to the host stays live to the end. What counts as a weight comes from the
ports: a function argument whose role is ``weight`` (the role the program states, the one
the host loader reads too — `tp_dialect.signature`); inputs and caches are state.

An outlined program (``@decode`` calling ``@layer``) is read through its `calls.Runs`: every
value is the flat program's (a callee's buffers are new at each call, its arguments the call's
operands, so layer k's shards are layer k's weights), and a statement's events are made once
from its op and given to each call that runs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.calls.chip_runs import chip_function
from tp_dialect.analysis.calls.flat_runs import Frame, HeldKey, Ref, Runs
from tp_dialect.analysis.timing.cost import nbytes
from tp_dialect.analysis.touch import captured, reads_where, write_chips
from tp_dialect.analysis.values import origin
from tp_dialect.machine import Machine
from tp_dialect.ops import SectionOp, ShardOp, TransferOp
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp
from tp_dialect.runtime.model.core import (
    ModelError,
    is_host,
    is_host_store,
    label_of,
    placed_in,
)
from tp_dialect.signature import Port, ports

__all__ = [
    "Held",
    "HeldKey",
    "MemEvent",
    "Memories",
    "holdings",
    "program_streams",
    "sectioned_streams",
    "weight_bytes",
]


@dataclass(frozen=True)
class Held:
    """Host data a chip holds for the step: argument ``name`` whole or one slice of it."""

    name: str
    bytes: int
    weight: bool  # a checkpoint weight (else state: a cache slice, the hidden state)


def is_weight_port(port: Port) -> bool:
    """Whether the function argument ``port`` is a weight: its role says so (as it does for
    `place_weights`); inputs and caches are state."""
    return port.role == "weight"


def weight_bytes(func: FuncOp) -> int:
    """Bytes of every weight argument of ``func``, whole."""
    ins, _ = ports(func)
    return sum(
        nbytes(arg.type)
        for port, arg in zip(ins, func.body.block.args, strict=True)
        if is_weight_port(port)
    )


def may_be_host(value: SSAValue) -> bool:
    """Whether ``value`` could be host data seen through a frame (`Runs.host_argument`):
    its origin in its own function is a block argument or a call's result. Anything else is
    the function's own and never an entry argument."""
    root = origin(value)
    return isinstance(root, BlockArgument) or isinstance(root.owner, CallOp)


def holdings(runs: Runs, n: int) -> list[dict[HeldKey, Held]]:
    """What each chip holds for the whole step (module docstring (1)), read from the
    sections it runs in every frame (`Runs`: a callee's shards load, per call, from the entry
    argument that call hands it): the same for a sectioned program, its outlined form and
    its per-chip programs. Each section is walked once, however many calls run it."""
    ins, _ = ports(runs.entry)
    held: list[dict[HeldKey, Held]] = [{} for _ in range(n)]
    reads: dict[SectionOp, list[tuple[bool, SSAValue, int]]] = {}  # per section, once
    for frame in runs.frames:
        for section, chips in placed_in(runs, frame.func):
            if section not in reads:
                reads[section] = _host_reads(section)
            found: dict[HeldKey, Held] = {}
            for shard, value, size in reads[section]:
                if shard:
                    key = runs.held_key(frame, value)
                    if key is not None:
                        port = ins[key[0]]
                        found[key] = Held(port.name, size, is_weight_port(port))
                    continue
                arg = runs.host_argument(frame, value)
                if arg is not None and isinstance(arg.type, TensorType):
                    port = ins[arg.index]
                    found[(arg.index, None, ())] = Held(
                        port.name, nbytes(arg.type), is_weight_port(port)
                    )
            for c in chips:
                held[c].update(found)
    return held


def _host_reads(section: SectionOp) -> list[tuple[bool, SSAValue, int]]:
    """What of ``section`` may read host data, in walk order: (True, a ``tp.shard``'s
    result, its bytes), or (False, an operand that `may_be_host`, 0)."""
    found: list[tuple[bool, SSAValue, int]] = []
    for inner in section.walk():
        if isinstance(inner, ShardOp):
            found.append((True, inner.result, nbytes(inner.result.type)))
            continue
        found += [(False, v, 0) for v in inner.operands if may_be_host(v)]
    return found


class MemEvent(NamedTuple):
    """One thing a chip does to its memory: ``store`` a tensor, ``read`` it, or hand it to
    the host (``out``: it stays live to the end); ``who`` names the statement doing it;
    ``frame`` is the run of the function ``value`` is seen in (None: the entry's)."""

    kind: str
    value: SSAValue
    who: str
    frame: Frame | None = None


def sectioned_streams(
    runs: Runs, order: Sequence[tuple[Frame, Operation]], n: int
) -> list[list[MemEvent]]:
    """Each chip's events for a sectioned program whose statements run in ``order`` (each in
    its frame): a section reads where it reads (`reads_where`) and stores its results where
    it writes them; a transfer reads on its source and stores on its destination; a host
    store hands out. Host data (`Runs.is_host`: an entry argument, a constant) is none of
    these. A statement's events are read off its op once (a template) and given each frame
    that runs it."""
    streams: list[list[MemEvent]] = [[] for _ in range(n)]
    templates: dict[Operation, list[tuple[int, str, SSAValue, bool]]] = {}
    for frame, op in order:
        template = templates.get(op)
        if template is None:
            template = templates[op] = _events(op, n)
        who = runs.label(frame, op) or op.name
        cross = None if frame is runs.root else frame
        for chip, kind, value, transfer in template:
            if (kind == "store" and not transfer) or not runs.is_host(frame, value):
                what = f"transfer {who}" if transfer else who
                streams[chip].append(MemEvent(kind, value, what, cross))
    return streams


def _events(op: Operation, n: int) -> list[tuple[int, str, SSAValue, bool]]:
    """One statement's memory events in its own function's terms, host values included
    (`sectioned_streams` leaves them out per frame): (chip, kind, value, whether a
    transfer's)."""
    if isinstance(op, TransferOp):
        return [(op.src, "read", op.input, True), (op.dst, "store", op.input, True)]
    assert isinstance(op, SectionOp)
    store = is_host_store(op)
    kind = "out" if store else "read"
    events = [(chip, kind, value, False) for value, chip in reads_where(op, n, hosts=True)]
    if not store:
        events += [
            (chip, "store", result, False) for chip in write_chips(op, n) for result in op.outs
        ]
    return events


def program_streams(func: FuncOp, n: int, runs: Runs | None = None) -> list[list[MemEvent]]:
    """Each chip's events for per-chip programs, in program order: a section reads what it
    captures and stores its results, a link reads what it sends and stores what it
    receives, ``tp.finish`` hands out; a call to a per-chip function, its function's events
    in the call's frame (``runs``), each function's events listed once."""
    streams: list[list[MemEvent]] = [[] for _ in range(n)]
    own: dict[FuncOp, list[MemEvent]] = {}
    for program in func.body.block.ops:
        if not isinstance(program, ChipProgramOp):
            continue
        stream = streams[program.chip_index]
        for op in program.body.block.ops:
            f = chip_function(op)
            if f is None:
                stream += _op_events(op, func)
                continue
            assert runs is not None, "per-chip calls are modelled through their frames"
            if f not in own:
                own[f] = [e for inner in f.body.block.ops for e in _op_events(inner, None)]
            frame = runs.root.children[op]
            is_host = runs.is_host
            stream += [
                MemEvent(kind, value, who, frame)
                for kind, value, who, _ in own[f]
                if kind == "store" or not is_host(frame, value)
            ]
    return streams


def _op_events(op: Operation, func: FuncOp | None) -> list[MemEvent]:
    """One op's events in a program (host values of ``func`` left out) or in a per-chip
    function (``func`` None: its arguments are read like any value, resolved per frame)."""

    def mine(v: SSAValue) -> bool:
        return func is None or not is_host(v, func)

    if isinstance(op, SectionOp):
        who = label_of(op)
        return [MemEvent("read", v, who) for v in captured(op) if mine(v)] + [
            MemEvent("store", r, who) for r in op.outs
        ]
    if isinstance(op, LinkOp):
        who = f"link {op.halt}"
        return [MemEvent("read", v, who) for v in op.sent if mine(v)] + [
            MemEvent("store", r, who) for r in op.received
        ]
    if isinstance(op, FinishOp):
        return [MemEvent("out", v, "tp.finish") for v in op.values if mine(v)]
    return []  # a function's return reads nothing: its values are the call's results


class Memories:
    """Every chip's memory over one step (module docstring): what it holds, what is live,
    the peak; `replay` checks every read against what the chip holds. Values are the flat
    program's (`Runs`): a callee's buffer is a new one at every call."""

    def __init__(self, runs: Runs, n: int) -> None:
        self.runs = runs
        self.n = n
        self.held = holdings(runs, n)  # what each chip holds for the step
        self.peak = [0.0] * n

    def replay(self, streams: Sequence[Iterable[MemEvent]]) -> None:
        """Run each chip's events: presence checked on every read (raises ModelError
        naming the tensor, the chip and the statement), live bytes and their peak counted."""
        for chip, events in enumerate(streams):
            self.peak[chip] = self._replay(chip, list(events))

    def _replay(self, chip: int, events: list[MemEvent]) -> float:
        runs, root, held = self.runs, self.runs.root, self.held[chip]
        values: list[Ref] = []
        stores: list[Ref] = []
        last: dict[Ref, int] = {}  # storage -> index of its last event on this chip
        kept: set[Ref] = set()
        for i, e in enumerate(events):
            frame = e.frame or root
            values.append(runs.ref(frame, e.value))
            s = runs.storage(frame, e.value)
            stores.append(s)
            last[s] = i
            if e.kind == "out":
                kept.add(s)
        present: set[Ref] = set()
        live: set[Ref] = set()
        bytes_live = peak = 0.0
        for i, e in enumerate(events):
            s, value = stores[i], values[i]
            if e.kind == "store":
                present.add(value)
                if s not in live and runs.held_key(*s) not in held:
                    live.add(s)
                    bytes_live += nbytes(s[1].type)
                    peak = max(peak, bytes_live)
            elif value not in present:
                name = runs.name(e.frame or root, e.value)
                raise ModelError(
                    f"chip {chip} runs '{e.who}', which reads %{name}, but %{name} is not in "
                    f"chip {chip}'s memory (no section there wrote it and no transfer "
                    "brought it)"
                )
            if last[s] == i and s in live and s not in kept:
                live.discard(s)
                bytes_live -= nbytes(s[1].type)
        return peak

    def report(self, machine: Machine) -> list[dict[str, float | int | bool]]:
        """Per chip: resident weights, resident state (cache slices, inputs), peak live
        bytes, HBM capacity and whether they fit."""
        rows: list[dict[str, float | int | bool]] = []
        for c in range(self.n):
            weights = sum(h.bytes for h in self.held[c].values() if h.weight)
            state = sum(h.bytes for h in self.held[c].values() if not h.weight)
            rows.append(
                {
                    "chip": c,
                    "resident_weights_bytes": weights,
                    "resident_state_bytes": state,
                    "peak_live_bytes": self.peak[c],
                    "capacity_bytes": machine.hbm_bytes,
                    "fits": weights + state + self.peak[c] <= machine.hbm_bytes,
                }
            )
        return rows
