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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.cost import nbytes
from tp_dialect.analysis.machine import Machine
from tp_dialect.analysis.touch import captured, reads_where, storage, write_chips
from tp_dialect.analysis.values import origin
from tp_dialect.names import value_name
from tp_dialect.ops import SectionOp, ShardOp, TransferOp
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp
from tp_dialect.runtime.model.core import (
    ModelError,
    host_argument,
    is_host,
    is_host_store,
    label_of,
    placed_sections,
)
from tp_dialect.signature import Port, ports

HeldKey = tuple[int, int | None, tuple[tuple[int, int], ...]]  # (argument, axis, ranges)


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


def held_key(value: SSAValue, func: FuncOp) -> HeldKey | None:
    """The host data ``value``'s storage is, if it is host data: a shard of an argument
    (argument, axis, ranges) or an argument read whole (argument, None, ())."""
    root = origin(storage(value))
    if isinstance(root, BlockArgument) and root.owner is func.body.block:
        return (root.index, None, ())
    owner = root.owner
    if isinstance(owner, ShardOp) and (arg := host_argument(owner.source, func)) is not None:
        return (arg.index, owner.slice.axis_index, tuple(owner.slice.ranges))
    return None


def holdings(func: FuncOp, n: int) -> list[dict[HeldKey, Held]]:
    """What each chip holds for the whole step (module docstring (1)), read from the
    sections it runs: the same for a sectioned program and its per-chip programs."""
    ins, _ = ports(func)
    held: list[dict[HeldKey, Held]] = [{} for _ in range(n)]
    for section, chips in placed_sections(func):
        found: dict[HeldKey, Held] = {}
        for inner in section.walk():
            if isinstance(inner, ShardOp):
                key = held_key(inner.result, func)
                if key is not None:
                    port = ins[key[0]]
                    found[key] = Held(port.name, nbytes(inner.result.type), is_weight_port(port))
                continue
            for operand in inner.operands:
                arg = host_argument(operand, func)
                if arg is not None and isinstance(arg.type, TensorType):
                    port = ins[arg.index]
                    found[(arg.index, None, ())] = Held(
                        port.name, nbytes(arg.type), is_weight_port(port)
                    )
        for c in chips:
            held[c].update(found)
    return held


@dataclass(frozen=True)
class MemEvent:
    """One thing a chip does to its memory: ``store`` a tensor, ``read`` it, or hand it to
    the host (``out``: it stays live to the end); ``who`` names the statement doing it."""

    kind: str
    value: SSAValue
    who: str


def sectioned_streams(func: FuncOp, order: Sequence[Operation], n: int) -> list[list[MemEvent]]:
    """Each chip's events for a sectioned program run in ``order`` (statements): a section
    reads where it reads (`reads_where`) and stores its results where it writes them; a
    transfer reads on its source and stores on its destination; a host store hands out."""
    streams: list[list[MemEvent]] = [[] for _ in range(n)]
    for op in order:
        who = label_of(op) or op.name
        if isinstance(op, TransferOp):
            if not is_host(op.input, func):
                streams[op.src].append(MemEvent("read", op.input, f"transfer {who}"))
                streams[op.dst].append(MemEvent("store", op.input, f"transfer {who}"))
            continue
        assert isinstance(op, SectionOp)
        kind = "out" if is_host_store(op) else "read"
        for value, chip in reads_where(op, n):
            if not is_host(value, func):
                streams[chip].append(MemEvent(kind, value, who))
        if not is_host_store(op):
            for chip in write_chips(op, n):
                for result in op.outs:
                    streams[chip].append(MemEvent("store", result, who))
    return streams


def program_streams(func: FuncOp, n: int) -> list[list[MemEvent]]:
    """Each chip's events for per-chip programs, in program order: a section reads what it
    captures and stores its results, a link reads what it sends and stores what it
    receives, ``tp.finish`` hands out."""
    streams: list[list[MemEvent]] = [[] for _ in range(n)]
    for program in func.body.block.ops:
        if not isinstance(program, ChipProgramOp):
            continue
        stream = streams[program.chip_index]
        for op in program.body.block.ops:
            if isinstance(op, SectionOp):
                who = label_of(op)
                stream += [MemEvent("read", v, who) for v in captured(op) if not is_host(v, func)]
                stream += [MemEvent("store", r, who) for r in op.outs]
            elif isinstance(op, LinkOp):
                who = f"link {op.halt}"
                stream += [MemEvent("read", v, who) for v in op.sent if not is_host(v, func)]
                stream += [MemEvent("store", r, who) for r in op.received]
            elif isinstance(op, FinishOp):
                stream += [
                    MemEvent("out", v, "tp.finish") for v in op.values if not is_host(v, func)
                ]
    return streams


class Memories:
    """Every chip's memory over one step (module docstring): what it holds, what is live,
    the peak; `replay` checks every read against what the chip holds."""

    def __init__(self, func: FuncOp, n: int) -> None:
        self.func = func
        self.n = n
        self.held = holdings(func, n)  # what each chip holds for the step
        self.peak = [0.0] * n
        self._keys: dict[SSAValue, HeldKey | None] = {}

    def _is_held(self, s: SSAValue, chip: int) -> bool:
        """Whether storage ``s`` is host data ``chip`` holds (no live bytes of its own)."""
        if s not in self._keys:
            self._keys[s] = held_key(s, self.func)
        key = self._keys[s]
        return key is not None and key in self.held[chip]

    def replay(self, streams: Sequence[Iterable[MemEvent]]) -> None:
        """Run each chip's events: presence checked on every read (raises ModelError
        naming the tensor, the chip and the statement), live bytes and their peak counted."""
        for chip, events in enumerate(streams):
            self.peak[chip] = self._replay(chip, list(events))

    def _replay(self, chip: int, events: list[MemEvent]) -> float:
        last: dict[SSAValue, int] = {}  # storage -> index of its last event on this chip
        kept: set[SSAValue] = set()
        for i, e in enumerate(events):
            s = storage(e.value)
            last[s] = i
            if e.kind == "out":
                kept.add(s)
        present: set[SSAValue] = set()
        live: set[SSAValue] = set()
        bytes_live = peak = 0.0
        for i, e in enumerate(events):
            s = storage(e.value)
            if e.kind == "store":
                present.add(e.value)
                if s not in live and not self._is_held(s, chip):
                    live.add(s)
                    bytes_live += nbytes(s.type)
                    peak = max(peak, bytes_live)
            elif e.value not in present:
                name = value_name(e.value)
                raise ModelError(
                    f"chip {chip} runs '{e.who}', which reads %{name}, but %{name} is not in "
                    f"chip {chip}'s memory (no section there wrote it and no transfer "
                    "brought it)"
                )
            if last[s] == i and s in live and s not in kept:
                live.discard(s)
                bytes_live -= nbytes(s.type)
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
