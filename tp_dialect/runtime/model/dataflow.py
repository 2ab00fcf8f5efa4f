"""Dataflow mode: per-chip programs on direct chip-to-chip links, no barriers, no host.

Invariant: the resources are each chip's compute, each chip's HBM stream (on a machine that
streams weights ahead: `prefetch`) and each directed link ``(a, b)``. A chip runs its sections
in program order, each as soon as the chip is free, every tensor the section reads has arrived
and (streaming ahead) its weights are loaded (`section_time` each, the loaded bytes left out).
A ``tp.link`` send of a name on chip a and a
receive of the same name on chip b is one transfer, requested when chip a has stored the
tensor and carried by the links' rules (`tp_dialect.analysis.timing.wires`, the rules an
all-reduce's cost is taken by): over its route (on ``all-to-all`` every ordered pair has its
own link, and a chip may send on several at once; on ``ring`` the shorter way round), each
link held ``latency + bytes / bandwidth``, first come first served (ties in the order the
simulation met them), the next hop requested one latency after the hop started
(cut-through); uncontended, ``hops x latency + bytes / bandwidth``, the machine's
``transfer_time``. The ``tp.relay`` op, if any, is ignored: no host is in the path.

Alongside the timeline, the simulation keeps what each piece of work waited for last (its chip,
an arrival, a busy link) and walks that chain back from the end of the step: the critical path,
whose parts add up to the step time.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field, replace

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from tp_dialect.analysis.calls.chip_runs import ProgramLink, program_links, program_ops
from tp_dialect.analysis.calls.flat_runs import Frame, Ref, Runs
from tp_dialect.analysis.schedule.programs import index_programs
from tp_dialect.analysis.timing.cost import Cost, nbytes, op_cost
from tp_dialect.analysis.timing.wires import Link, Links, route
from tp_dialect.analysis.touch import captured
from tp_dialect.machine import Machine
from tp_dialect.names import without_layer
from tp_dialect.ops import SectionOp
from tp_dialect.program_ops import LinkOp
from tp_dialect.runtime.model.bounds import Access, section_accesses
from tp_dialect.runtime.model.core import (
    ModelError,
    chips_of,
    section_slices,
    section_time,
)
from tp_dialect.runtime.model.memory import MemEvent, holdings, program_streams
from tp_dialect.runtime.model.prefetch import HbmStream, weight_reads
from tp_dialect.runtime.model.report import ModelReport
from tp_dialect.runtime.model.timeline import Flow, Slice, Timeline
from tp_dialect.signature import entry_function


@dataclass(eq=False)
class _Node:
    """A piece of scheduled work (a section on a chip, a weight load of a chip's HBM stream,
    or one hop of a transfer) and the
    work whose end it waited for last (None: it started the step)."""

    what: str  # "compute" | "collective" | "link" | "prefetch"
    label: str
    start: float
    end: float
    pred: _Node | None
    queued: bool = False  # waited for a link another transfer held


@dataclass(eq=False)
class _Transfer:
    """One name sent from chip ``src`` to chip ``dst``, over ``route``."""

    name: str
    src: int
    dst: int
    bytes: int
    received: Ref  # the receiving link's result, in the frame it is received in
    route: list[Link]
    ready: float
    after: _Node | None  # what stored the sent tensor
    hops: list[_Node] = field(default_factory=list[_Node])


def simulate_dataflow(
    module: ModuleOp, machine: Machine, runs: Runs
) -> tuple[ModelReport, Timeline, list[list[MemEvent]]]:
    """The dataflow-mode step of per-chip programs (module docstring): its report's time,
    bytes and critical path, the timeline (a lane per chip, one per chip's HBM stream when it
    streams weights ahead, then one per link used) and each
    chip's memory events in program order. Raises ModelError naming the chip and tensor when
    the programs wait for each other forever. A call to a per-chip function runs its body in
    the call's frame (``runs``): values are the flat programs' (`Runs.ref`), a section's cost
    is computed once however many calls run it."""
    func = entry_function(module)
    n = chips_of(module)
    programs = index_programs(func).programs  # refuses programs that do not fit together
    if not programs:
        raise ModelError("dataflow mode needs per-chip programs: run tp-link-points first")
    report = ModelReport(machine, "dataflow", n)
    slices: list[Slice] = []
    flows: list[Flow] = []
    receivers: dict[str, list[tuple[int, Ref]]] = {}
    items: dict[int, list[tuple[SectionOp | ProgramLink, Frame]]] = {}
    captures: dict[SectionOp, list[SSAValue]] = {}
    for c, program in programs.items():
        items[c] = []
        links = {(link.op, link.call): link for link in program_links(program)}
        for op, call in program_ops(program):
            frame = runs.root if call is None else runs.root.children[call]
            if isinstance(op, LinkOp):
                link = links[(op, call)]
                items[c].append((link, frame))
                for name, result in zip(link.receives, op.received, strict=True):
                    receivers.setdefault(name, []).append((c, (frame, result)))
            elif isinstance(op, SectionOp):
                items[c].append((op, frame))
                if op not in captures:
                    captures[op] = captured(op)
    ready: dict[Ref, float] = {}  # when a value is stored on its chip
    made_by: dict[Ref, _Node] = {}
    costed: dict[SectionOp, Slice] = {}
    pc = dict.fromkeys(programs, 0)
    free = dict.fromkeys(programs, 0.0)
    last: dict[int, _Node | None] = dict.fromkeys(programs)
    links_ = Links(machine)
    link_last: dict[Link, _Node] = {}
    heap: list[tuple[float, int, int, _Transfer]] = []
    seq = 0
    ends: list[_Node] = []
    # Weights streamed ahead (`prefetch`): each chip's HBM stream, the chip's holdings and
    # each section's accesses (read once however many calls run it).
    prefetch = machine.prefetch_weights
    streams = {c: HbmStream[_Node](machine.sram_bytes, machine.hbm_bandwidth) for c in programs}
    held = holdings(runs, n) if prefetch else []
    reads: dict[SectionOp, list[Access]] = {}
    costs: dict[SectionOp, Cost] = {}

    def ready_of(ref: Ref) -> float | None:
        if ref in ready:
            return ready[ref]
        return None if isinstance(ref[1].owner, LinkOp) else 0.0  # host data, constants

    def push(time: float, hop: int, transfer: _Transfer) -> None:
        nonlocal seq
        heapq.heappush(heap, (time, seq, hop, transfer))
        seq += 1

    def _streamed(
        op: SectionOp, frame: Frame, c: int, start: float, pred: _Node | None, piece: Slice
    ) -> tuple[float, _Node | None, Slice]:
        """Section ``op`` on chip c with its weights loaded ahead by the chip's stream: when
        it can start, what it waited for last, and its slice without the loaded bytes."""
        if op not in reads:
            reads[op] = section_accesses(op)
            costs[op] = op_cost(op)
        cost = costs[op]
        # What the section moves through HBM as it runs includes the copies its updates make
        # where updates copy (`Cost.time`).
        copies = cost.copied if machine.copies_updates else 0.0
        weights = min(weight_reads(runs, frame, reads[op], held[c]), cost.bytes)
        stream = streams[c]
        if weights <= 0 or not stream.fits(weights):
            streamed = cost.bytes + copies
            return start, pred, replace(piece, args={**piece.args, "streamed": streamed})
        begin, loaded, waited = stream.load(weights)
        load = stream.last = _Node("prefetch", piece.name, begin, loaded, waited)
        slices.append(
            Slice(
                f"hbm {c}",
                f"prefetch {piece.name}",
                begin,
                loaded - begin,
                "prefetch",
                piece.layer,
                {"bytes": weights},
            )
        )
        if loaded > start:
            start, pred = loaded, load
        own = replace(cost, bytes=cost.bytes - weights)
        duration, _ = section_time(op, machine, n, own)
        args = {**piece.args, "prefetched": weights, "streamed": own.bytes + copies}
        return start, pred, replace(piece, start=start, duration=duration, args=args)

    def advance(c: int) -> None:
        """Run chip c's program as far as what has arrived allows."""
        while pc[c] < len(items[c]):
            op, frame = items[c][pc[c]]
            if isinstance(op, SectionOp):
                start, pred = free[c], last[c]
                for value in captures[op]:
                    ref = runs.ref(frame, value)
                    t = ready_of(ref)
                    if t is None:
                        return  # waits for an arrival
                    if t > start:
                        start, pred = t, made_by.get(ref)
                label = runs.label(frame, op)
                layer = report.layer(label).layer
                if op not in costed:  # the same op in every call: costed once
                    (costed[op],) = section_slices(op, [c], label, 0.0, layer, n, machine)
                piece = replace(costed[op], name=label, start=start, layer=layer)
                if prefetch:
                    start, pred, piece = _streamed(op, frame, c, start, pred, piece)
                node = _Node(piece.kind, label, start, start + piece.duration, pred)
                slices.append(piece)
                if prefetch:
                    stream = streams[c]
                    stream.hold(node.end, piece.args.get("prefetched", 0.0), node)
                    stream.run(start, piece.args.get("streamed", 0.0))
                for result in op.outs:
                    ready[(frame, result)] = node.end
                    made_by[(frame, result)] = node
                free[c], last[c] = node.end, node
                ends.append(node)
            else:
                refs = [runs.ref(frame, v) for v in op.op.sent]
                times = [ready_of(r) for r in refs]
                if any(t is None for t in times):
                    return  # forwards a tensor that has not arrived yet
                for name, ref, t in zip(op.sends, refs, times, strict=True):
                    assert t is not None
                    for dst, result in receivers.get(name, []):
                        transfer = _Transfer(
                            name,
                            c,
                            dst,
                            nbytes(ref[1].type),
                            result,
                            route(c, dst, n, machine.topology),
                            t,
                            made_by.get(ref),
                        )
                        push(t, 0, transfer)
            pc[c] += 1

    for c in programs:
        advance(c)
    while heap:
        t, _, hop, transfer = heapq.heappop(heap)
        if hop < 0:  # arrival
            ready[transfer.received] = t
            made_by[transfer.received] = transfer.hops[-1]
            advance(transfer.dst)
            continue
        link = transfer.route[hop]
        start, end = links_.grant(link, t, transfer.bytes)
        queued = start > t
        pred = link_last[link] if queued else transfer.hops[-1] if hop else transfer.after
        node = _Node("link", transfer.name, start, end, pred, queued)
        transfer.hops.append(node)
        link_last[link] = node
        slices.append(
            Slice(
                f"link {link[0]}->{link[1]}",
                f"{transfer.name} {transfer.src}->{transfer.dst}",
                start,
                end - start,
                "transfer",
                report.layer(transfer.name).layer,
                {"bytes": transfer.bytes},
            )
        )
        if hop + 1 < len(transfer.route):
            push(start + machine.link_latency, hop + 1, transfer)  # the head reaches the next chip
        else:
            report.moved(transfer.name, transfer.bytes)
            flows.append(
                Flow(
                    transfer.name,
                    f"chip {transfer.src}",
                    transfer.hops[0].start,
                    f"chip {transfer.dst}",
                    node.end,
                )
            )
            ends.append(node)
            push(node.end, -1, transfer)
    stuck = {c: items[c][pc[c]] for c in programs if pc[c] < len(items[c])}
    if stuck:
        raise ModelError(
            "dataflow deadlock: "
            + "; ".join(
                f"chip {c} waits at '{_stuck_at(runs, op, frame)}' for "
                + ", ".join(f"%{runs.name(*r)}" for r in _waiting(runs, op, frame, ready))
                for c, (op, frame) in sorted(stuck.items())
            )
        )
    lanes = [f"chip {c}" for c in range(n)]
    if prefetch:
        lanes += [f"hbm {c}" for c in range(n)]
    lanes += [f"link {a}->{b}" for a, b in sorted(links_.free)]
    report.step_time = max((node.end for node in ends), default=0.0)
    report.critical_path = _critical_path(ends, report.step_time)
    return report, Timeline(lanes, slices, flows), program_streams(func, n, runs)


def _stuck_at(runs: Runs, op: SectionOp | ProgramLink, frame: Frame) -> str:
    if isinstance(op, SectionOp):
        return runs.label(frame, op) or op.name
    return op.op.name


def _waiting(
    runs: Runs, op: SectionOp | ProgramLink, frame: Frame, ready: dict[Ref, float]
) -> list[Ref]:
    values = op.op.sent if isinstance(op, ProgramLink) else captured(op)
    refs = [runs.ref(frame, v) for v in values]
    return [r for r in refs if isinstance(r[1].owner, LinkOp) and r not in ready]


_CHIP_TAG = re.compile(r"(^|_)c\d+(?=_|$|\.)")


def role(label: str) -> str:
    """What a label does, without its layer and chip: ``l3_c2_q`` -> ``q``."""
    return _CHIP_TAG.sub("", without_layer(label)).strip("_") or label


_PATH_PREFIX = {"link": "transfer ", "prefetch": "prefetch "}


def _critical_path(ends: list[_Node], step: float) -> dict[str, object]:
    """The chain of waits ending at the step's last work, each link's share of the step
    (the time from its start to the start of what waited for it), by kind and by role."""
    if not ends:
        return {}
    node: _Node | None = max(ends, key=lambda e: e.end)
    shares = {"compute": 0.0, "collective": 0.0, "link": 0.0, "prefetch": 0.0}
    by_role: dict[str, float] = {}
    sections = transfers = queued = loads = 0
    after = node.end if node else 0.0
    while node is not None:
        share = after - node.start
        shares[node.what] += share
        key = _PATH_PREFIX.get(node.what, "") + role(node.label)
        by_role[key] = by_role.get(key, 0.0) + share
        if node.what == "link":
            transfers += 1
            queued += node.queued
        elif node.what == "prefetch":
            loads += 1
        else:
            sections += 1
        after = node.start
        node = node.pred
    top = sorted(by_role.items(), key=lambda kv: -kv[1])[:8]
    return {
        "compute_s": shares["compute"],
        "collective_s": shares["collective"],
        "link_s": shares["link"],
        "prefetch_s": shares["prefetch"],  # waiting for weights the HBM stream loads
        "wait_s": after,  # before the first work on the path (0 when it starts the step)
        "sections": sections,
        "transfer_hops": transfers,
        "queued_hops": queued,
        "loads": loads,  # weight loads waited for
        "top": [{"role": r, "seconds": s} for r, s in top],
        "step_s": step,
    }
