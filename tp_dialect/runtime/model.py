"""The multi-RDU model: a lowered tp program on N modelled chips, with memories and time.

Each chip has its own memory: a section reads only tensors present on its chip (host inputs
and constants are on every chip), a transfer or a relay copy is the only way across, and a
read of what is not there fails loudly, naming the tensor and the chip. Capacity is checked:
resident weights plus the peak of live tensors on each chip against its HBM.

Time, from shapes alone (no numerics): a section by the roofline of its ops (`cost`), a
transfer by latency + bytes / link bandwidth, a ``ring`` all-reduce by its alpha-beta cost
(the seed's ``fold`` moves its partials and sum by explicit transfers). Phase mode: phases one
after another, each as long as its longest statement, plus a barrier. Relay mode: an event
simulation of the per-chip programs under the host's relay — a chip runs a segment when it
is free and its receives have arrived; the host makes copies one at a time, each paying its
overhead. Sequential mode (the source program): every statement after the previous one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import PassPipeline

from tp_dialect.analysis.cost import Cost, nbytes, op_cost
from tp_dialect.analysis.machine import Machine
from tp_dialect.analysis.manifest import value_name
from tp_dialect.analysis.phases import phase_of
from tp_dialect.analysis.relay import Copy
from tp_dialect.analysis.touch import (
    collective,
    is_host_value,
    reads_where,
    statements,
    touch,
    write_chips,
)
from tp_dialect.grid import stated_chips
from tp_dialect.ops import AllReduceOp, SectionOp, ShardOp, TransferOp
from tp_dialect.passes import TP_PASSES
from tp_dialect.program_ops import ChipProgramOp, LinkOp
from tp_dialect.runtime.relay_exec import relay_steps
from tp_dialect.runtime.timeline import Flow, Slice, Timeline
from tp_dialect.signature import entry_function
from tp_dialect.universe import tp_context

_LAYER = re.compile(r"^l(\d+)_")


class ModelError(Exception):
    """The modelled machine cannot run the program as written (named tensor and chip)."""


@dataclass
class LayerFigures:
    """One layer's (or the prologue's) share of the modelled step."""

    layer: str
    time: float = 0.0
    compute: float = 0.0
    communication: float = 0.0
    bytes_moved: float = 0.0


@dataclass
class ModelReport:
    """The modelled step: time, its split, bytes moved, memory, against the lower bound."""

    machine: Machine
    mode: str
    chips: int
    step_time: float = 0.0
    compute_time: float = 0.0
    communication_time: float = 0.0
    bytes_moved: float = 0.0
    lower_bound: float = 0.0
    layers: dict[str, LayerFigures] = field(default_factory=dict[str, LayerFigures])
    memory: list[dict[str, float | int | bool]] = field(default_factory=list)

    def layer(self, label: str) -> LayerFigures:
        m = _LAYER.match(label)
        key = f"layer {m.group(1)}" if m else "prologue"
        return self.layers.setdefault(key, LayerFigures(key))

    def to_json(self) -> dict[str, object]:
        order = sorted(self.layers, key=lambda k: -1 if k == "prologue" else int(k.split()[1]))
        return {
            "machine": self.machine.to_json(),
            "mode": self.mode,
            "chips": self.chips,
            "step_time_s": self.step_time,
            "compute_time_s": self.compute_time,
            "communication_time_s": self.communication_time,
            "bytes_moved": self.bytes_moved,
            "lower_bound_s": self.lower_bound,
            "ratio_to_bound": self.step_time / self.lower_bound if self.lower_bound else None,
            "layers": [vars(self.layers[k]) for k in order],
            "memory": self.memory,
        }

    def summary(self) -> str:
        ratio = f"{self.step_time / self.lower_bound:.2f}x" if self.lower_bound else "n/a"
        return (
            f"modelled step on {self.chips} x {self.machine.name} ({self.mode} mode): "
            f"{self.step_time * 1e3:.3f} ms (compute {self.compute_time * 1e3:.3f} ms, "
            f"communication {self.communication_time * 1e3:.3f} ms), "
            f"{self.bytes_moved / 1e6:.3f} MB moved; lower bound "
            f"{self.lower_bound * 1e3:.3f} ms ({ratio})"
        )


def _label(op: Operation) -> str:
    if isinstance(op, SectionOp):
        return op.label.data if op.label else ""
    if isinstance(op, TransferOp):
        return value_name(op.input)
    return ""


def _ring_time(op: AllReduceOp, machine: Machine, n: int) -> float:
    """Alpha-beta cost of a ring all-reduce of one partial's bytes over n chips."""
    if n == 1:
        return 0.0
    b = nbytes(op.result.type)
    return 2 * (n - 1) * (machine.link_latency + b / (n * machine.link_bandwidth))


def _section_slice(
    chip: int,
    section: SectionOp,
    start: float,
    duration: float,
    kind: str,
    figures: LayerFigures,
) -> Slice:
    cost = op_cost(section)
    return Slice(
        f"chip {chip}",
        _label(section),
        start,
        duration,
        kind,
        figures.layer,
        {"flops": cost.flops, "bytes": cost.bytes},
    )


def statement_time(op: Operation, machine: Machine, n: int) -> tuple[float, str]:
    """How long one statement takes on the machine, and what kind of work it is."""
    if isinstance(op, TransferOp):
        return machine.transfer_time(nbytes(op.input.type), op.src, op.dst, n), "transfer"
    assert isinstance(op, SectionOp)
    coll = collective(op)
    compute = op_cost(op).time(machine)
    if isinstance(coll, AllReduceOp):
        ring = _ring_time(coll, machine, n) if coll.algorithm_name == "ring" else 0.0
        return compute + ring, "collective"
    return compute, "compute"


def lower_bound(module: ModuleOp, machine: Machine) -> float:
    """Weights bytes / (N x HBM bandwidth) + every all-reduce's ring alpha-beta bound."""
    func = entry_function(module)
    n = stated_chips(module) or 1
    weights = sum(nbytes(a.type) for a in func.body.block.args if _is_weight(func, a))
    bound = weights / (n * machine.hbm_bandwidth)
    for op in module.walk():
        if isinstance(op, AllReduceOp):
            bound += _ring_time(op, machine, n)
    return bound


def _is_weight(func: FuncOp, arg: BlockArgument) -> bool:
    attrs = func.arg_attrs.data[arg.index] if func.arg_attrs else None
    name = getattr(getattr(attrs, "data", {}).get("tp.name"), "data", "")
    return isinstance(name, str) and name.startswith("model.")


class _Memories:
    """What each chip holds, and its resident and live bytes."""

    def __init__(self, func: FuncOp, n: int, stmts: list[Operation]) -> None:
        self.n = n
        self.present: list[set[SSAValue]] = [set() for _ in range(n)]
        self.resident = [0.0] * n
        self.live = [0.0] * n
        self.peak = [0.0] * n
        self.last_read: dict[tuple[SSAValue, int], int] = {}
        for i, op in enumerate(stmts):
            for v, c in _reads(op, n):
                self.last_read[(v, c)] = i
        for op in stmts:  # weights stay resident: a chip's slices, and the spine weights
            if isinstance(op, SectionOp):
                for inner in op.body.block.ops:
                    if isinstance(inner, ShardOp) and is_host_value(inner.source):
                        for c in op.chip_list:
                            self.resident[c] += nbytes(inner.result.type)

    def read(self, op: Operation, value: SSAValue, chip: int) -> None:
        if value not in self.present[chip]:
            raise ModelError(
                f"chip {chip} runs '{_label(op) or op.name}', which reads "
                f"%{value_name(value)}, but %{value_name(value)} is not in chip {chip}'s "
                "memory (no section there wrote it and no transfer brought it)"
            )

    def write(self, value: SSAValue, chip: int) -> None:
        if value not in self.present[chip]:
            self.present[chip].add(value)
            self.live[chip] += nbytes(value.type)
            self.peak[chip] = max(self.peak[chip], self.live[chip])

    def retire(self, index: int, touched: Iterable[tuple[SSAValue, int]]) -> None:
        for v, c in touched:
            if self.last_read.get((v, c)) == index and v in self.present[c]:
                self.live[c] -= nbytes(v.type)

    def report(self, machine: Machine) -> list[dict[str, float | int | bool]]:
        return [
            {
                "chip": c,
                "resident_weights_bytes": self.resident[c],
                "peak_live_bytes": self.peak[c],
                "capacity_bytes": machine.hbm_bytes,
                "fits": self.resident[c] + self.peak[c] <= machine.hbm_bytes,
            }
            for c in range(self.n)
        ]


def _reads(op: Operation, n: int) -> list[tuple[SSAValue, int]]:
    if isinstance(op, TransferOp):
        return [] if is_host_value(op.input) else [(op.input, op.src)]
    assert isinstance(op, SectionOp)
    return [(v, c) for v, c in reads_where(op, n) if not is_host_value(v)]


def model_sectioned(
    module: ModuleOp, machine: Machine, sequential: bool = False
) -> tuple[ModelReport, Timeline]:
    """Phase mode (or, with ``sequential``, one statement at a time) on a sectioned program."""
    func = entry_function(module)
    n = stated_chips(module) or 1
    stmts = statements(func)
    for op in stmts:
        if not isinstance(op, SectionOp | TransferOp):
            raise ModelError(f"'{op.name}' is not in a section: lower the program first")
    if sequential:
        phases = list(range(len(stmts)))
    elif all(isinstance(op.attributes.get("tp.phase"), IntegerAttr) for op in stmts):
        phases = [op.attributes["tp.phase"].value.data for op in stmts]  # type: ignore[union-attr]
    else:
        phases = phase_of([touch(op, n) for op in stmts])  # type: ignore[arg-type]
    memories = _Memories(func, n, stmts)
    report = ModelReport(machine, "sequential" if sequential else "phase", n)
    lanes = [f"chip {c}" for c in range(n)]
    timeline = Timeline(lanes, [], [])
    by_phase: dict[int, list[int]] = {}
    for i, p in enumerate(phases):
        by_phase.setdefault(p, []).append(i)
    t = 0.0
    for p in sorted(by_phase):
        longest, kind_of_longest = 0.0, "compute"
        for i in by_phase[p]:
            op = stmts[i]
            reads = _reads(op, n)
            for v, c in reads:
                memories.read(op, v, c)
            duration, kind = statement_time(op, machine, n)
            label = _label(op)
            figures = report.layer(label)
            if isinstance(op, TransferOp):
                memories.write(op.input, op.dst)
                moved = nbytes(op.input.type)
                report.bytes_moved += moved
                figures.bytes_moved += moved
                # A transfer holds both chips for its duration (a send and a receive slice);
                # the flow joins them mid-way, so a trace viewer attaches it to both.
                for lane, what in ((op.src, "send"), (op.dst, "recv")):
                    timeline.slices.append(
                        Slice(
                            f"chip {lane}",
                            f"{what} {label}",
                            t,
                            duration,
                            "transfer",
                            figures.layer,
                            {"bytes": moved},
                        )
                    )
                mid = t + duration / 2
                timeline.flows.append(Flow(label, f"chip {op.src}", mid, f"chip {op.dst}", mid))
            else:
                assert isinstance(op, SectionOp)
                for r in op.outs:
                    for c in write_chips(op, n):
                        memories.write(r, c)
                for c in op.chip_list:
                    timeline.slices.append(_section_slice(c, op, t, duration, kind, figures))
            memories.retire(i, reads)
            if duration > longest:
                longest, kind_of_longest = duration, kind
        span = longest + machine.barrier_latency  # every chip waits for every chip
        first = report.layer(_label(stmts[by_phase[p][0]]))
        first.time += span
        if kind_of_longest == "compute":
            report.compute_time += span
            first.compute += span
        else:
            report.communication_time += span
            first.communication += span
        t += span
    report.step_time = t
    report.lower_bound = lower_bound(module, machine)
    report.memory = memories.report(machine)
    return report, timeline


def model_relay(module: ModuleOp, machine: Machine) -> tuple[ModelReport, Timeline]:
    """Relay mode: the per-chip programs under the host's relay, as an event simulation."""
    func = entry_function(module)
    n = stated_chips(module) or 1
    programs = {op.chip_index: op for op in func.body.block.ops if isinstance(op, ChipProgramOp)}
    if not programs:
        raise ModelError("relay mode needs per-chip programs: run tp-link-points first")
    report = ModelReport(machine, "relay", n)
    timeline = Timeline(["host", *[f"chip {c}" for c in range(n)]], [], [])
    segments: dict[int, dict[int, list[SectionOp]]] = {}
    link_at: dict[int, dict[int, LinkOp]] = {}
    for c, prog in programs.items():
        halt, segs, links = 0, {}, {}
        current: list[SectionOp] = []
        for op in prog.body.block.ops:
            if isinstance(op, LinkOp):
                if op.halt != 0:
                    segs[op.halt] = current
                    current = []
                links[op.halt] = op
                halt = op.halt
            elif isinstance(op, SectionOp):
                current.append(op)
        segs[halt + 1] = current  # to the end (tp.finish)
        segments[c], link_at[c] = segs, links
    free = dict.fromkeys(programs, 0.0)
    standing = dict.fromkeys(programs, 0)
    sent_at: dict[str, float] = {}
    sent_bytes: dict[str, int] = {}
    arrived: dict[tuple[str, int], float] = {}
    host_free = 0.0
    compute_busy = dict.fromkeys(programs, 0.0)
    for step in relay_steps(func):
        if isinstance(step, Copy):
            if step.tensor not in sent_at:
                raise ModelError(
                    f"the relay copies '{step.tensor}' to chip {step.dst} before chip "
                    f"{step.src} sent it"
                )
            moved = sent_bytes[step.tensor]
            start = max(host_free, sent_at[step.tensor])
            duration = machine.host_copy_overhead + machine.transfer_time(
                moved, step.src, step.dst, n
            )
            host_free = start + duration
            arrived[(step.tensor, step.dst)] = host_free
            report.bytes_moved += moved
            figures = report.layer(step.tensor)
            figures.bytes_moved += moved
            timeline.slices.append(
                Slice(
                    "host",
                    f"copy {step.tensor}",
                    start,
                    duration,
                    "copy",
                    figures.layer,
                    {"bytes": moved},
                )
            )
            timeline.flows.append(
                Flow(
                    step.tensor,
                    f"chip {step.src}",
                    sent_at[step.tensor],
                    f"chip {step.dst}",
                    host_free,
                )
            )
            continue
        c = step.chip
        leaving = link_at[c].get(standing[c])
        start = free[c]
        if leaving is not None:
            for name in leaving.receives:
                if (name, c) not in arrived:
                    raise ModelError(
                        f"chip {c} leaves halt {leaving.halt} without '{name}': the relay "
                        f"never copied it to chip {c}"
                    )
                start = max(start, arrived[(name, c)])
        t = start
        for section in segments[c][step.halt]:
            duration, kind = statement_time(section, machine, n)
            figures = report.layer(_label(section))
            timeline.slices.append(_section_slice(c, section, t, duration, kind, figures))
            figures.time += duration if c == 0 else 0.0
            figures.compute += duration if c == 0 else 0.0
            compute_busy[c] += duration
            t += duration
        free[c] = t
        standing[c] = step.halt
        arriving = link_at[c].get(step.halt)
        if arriving is not None:
            for name, value in zip(arriving.sends, arriving.sent, strict=True):
                sent_at[name] = t
                sent_bytes[name] = nbytes(value.type)
    report.step_time = max(max(free.values()), host_free)
    report.memory = [_program_memory(programs[c], machine) for c in sorted(programs)]
    report.compute_time = max(compute_busy.values())
    report.communication_time = report.step_time - report.compute_time
    report.lower_bound = lower_bound(module, machine)
    return report, timeline


def _program_memory(program: ChipProgramOp, machine: Machine) -> dict[str, float | int | bool]:
    """A chip program's resident weight slices and the peak of its live tensors: a tensor is
    live from the section (or link) that stores it to its last reader in the program."""
    ops = list(program.body.block.ops)
    last: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for v in inner.operands:
                last[v] = i
    resident = sum(
        nbytes(inner.result.type)
        for op in ops
        if isinstance(op, SectionOp)
        for inner in op.body.block.ops
        if isinstance(inner, ShardOp) and isinstance(inner.source, BlockArgument)
    )
    live = peak = 0.0
    for i, op in enumerate(ops):
        for r in op.results:
            live += nbytes(r.type)
        peak = max(peak, live)
        for v in {v for inner in op.walk() for v in inner.operands}:
            if last.get(v) == i and v.owner in ops:
                live -= nbytes(v.type)
    return {
        "chip": program.chip_index,
        "resident_weights_bytes": resident,
        "peak_live_bytes": peak,
        "capacity_bytes": machine.hbm_bytes,
        "fits": resident + peak <= machine.hbm_bytes,
    }


def model(
    module: ModuleOp, machine: Machine, mode: str | None = None
) -> tuple[ModelReport, Timeline]:
    """The modelled step of ``module`` on ``machine``, lowering a copy first if needed:
    ``sequential`` (every statement in turn), ``phase`` (tp-phase's phases) or ``relay``
    (per-chip programs under the host's relay). Without ``mode``, the program's own stage
    decides: per-chip programs -> relay, phased sections -> phase, else sequential. A
    sectioned program is modelled as written (phases computed if it has none)."""
    func = entry_function(module)
    has_programs = any(isinstance(op, ChipProgramOp) for op in func.body.block.ops)
    has_sections = any(isinstance(op, SectionOp) for op in func.body.block.ops)
    if mode is None:
        phased = any("tp.phase" in op.attributes for op in func.body.block.ops)
        mode = "relay" if has_programs else "phase" if phased else "sequential"
    if mode not in ("sequential", "phase", "relay"):
        raise ModelError(f"unknown mode '{mode}' (sequential, phase or relay)")
    if has_programs and mode != "relay":
        raise ModelError(f"{mode} mode needs the sectioned program, not per-chip programs")
    # A source program is lowered first (a copy); a sectioned one is modelled as written, so
    # a transfer it lacks is a read of what is not there, refused below.
    passes: list[str] = []
    if not has_programs and not has_sections:
        passes += ["tp-raise-allreduce", "tp-relocate", "tp-transfers"]
        if mode == "phase":
            passes.append("tp-phase")
    if mode == "relay" and not has_programs:
        passes.append("tp-link-points")
    if passes:
        module = module.clone()
        PassPipeline.parse_spec(TP_PASSES, ",".join(passes)).apply(tp_context(), module)
    if mode == "relay":
        return model_relay(module, machine)
    return model_sectioned(module, machine, sequential=mode == "sequential")


__all__ = ["Cost", "ModelError", "ModelReport", "model", "model_relay", "model_sectioned"]
