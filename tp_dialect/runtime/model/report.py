"""The modelled step's report, and how its time is split.

Invariant: for the step and for every layer, ``time = compute + communication + idle``, read
off the mode's timeline the same way for every mode (`decompose`). Each instant of the step is

- **compute** when some chip runs a section (``compute`` slices; an all-reduce's own
  ``collective`` section counts as communication);
- **communication** when no chip computes but a transfer, a host copy or a collective is under
  way (communication nothing hides: what more overlap would win back);
- **idle** when nothing runs (phase barriers; waiting for a host copy to be issued).

An instant belongs to the earliest layer among the work of its kind running then (the layer
the others wait for); an idle instant to the layer of the work that ends the wait (a trailing
one to the last work's). Per layer and per step the parts add up to the time, to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tp_dialect.machine import Machine
from tp_dialect.names import layer_of
from tp_dialect.runtime.model.bounds import ComputeBound, PhysicalBound, StepBound
from tp_dialect.runtime.model.core import layer_rank
from tp_dialect.runtime.model.timeline import Slice, Timeline

# A weight load the HBM stream makes ahead (`prefetch`) is memory work, as the weight reads
# of a section that streams them while it runs are.
COMPUTE_KINDS = frozenset({"compute", "prefetch"})
COMMUNICATION_KINDS = frozenset({"transfer", "copy", "collective"})


@dataclass
class LayerFigures:
    """One layer's (or the prologue's) share of the modelled step: its time, split into
    compute, communication and idle, and the bytes it moves between chips."""

    layer: str
    time: float = 0.0
    compute: float = 0.0
    communication: float = 0.0
    idle: float = 0.0
    bytes_moved: float = 0.0


@dataclass
class ModelReport:
    """The modelled step in one mode: time and its split (per step and per layer), bytes
    moved, memory per chip, busy time per chip, and the bounds it is measured against."""

    machine: Machine
    mode: str
    chips: int
    step_time: float = 0.0
    compute_time: float = 0.0
    communication_time: float = 0.0
    idle_time: float = 0.0
    bytes_moved: float = 0.0
    lower_bound: float = 0.0
    physical: PhysicalBound = field(default_factory=PhysicalBound)
    compute: ComputeBound = field(default_factory=ComputeBound)
    layers: dict[str, LayerFigures] = field(default_factory=dict[str, LayerFigures])
    memory: list[dict[str, float | int | bool]] = field(default_factory=list)
    chip_busy: list[dict[str, float | int]] = field(default_factory=list)
    critical_path: dict[str, object] | None = None

    @property
    def physical_bound(self) -> float:
        """The physical bound's seconds (see `bounds.physical_bound`)."""
        return self.physical.seconds

    @property
    def bound(self) -> StepBound:
        """The step's bound: max(compute bound, physical bound), naming the binding one."""
        return StepBound(self.compute, self.physical)

    def layer(self, label: str) -> LayerFigures:
        """The figures of the layer ``label`` belongs to, created on first use."""
        key = layer_of(label)
        return self.layers.setdefault(key, LayerFigures(key))

    def moved(self, label: str, nbytes: float) -> None:
        """Count ``nbytes`` crossing between chips for the work named ``label``."""
        self.bytes_moved += nbytes
        self.layer(label).bytes_moved += nbytes

    def to_json(self) -> dict[str, object]:
        """The report as plain JSON data (seconds and bytes)."""
        order = sorted(self.layers, key=layer_rank)
        return {
            "machine": self.machine.to_json(),
            "mode": self.mode,
            "chips": self.chips,
            "step_time_s": self.step_time,
            "compute_time_s": self.compute_time,
            "communication_time_s": self.communication_time,
            "idle_time_s": self.idle_time,
            "decomposition": "time = compute + communication + idle, per step and per layer",
            "bytes_moved": self.bytes_moved,
            "lower_bound_s": self.lower_bound,
            "ratio_to_bound": _ratio(self.step_time, self.lower_bound),
            "physical_bound_s": self.physical_bound,
            "ratio_to_physical_bound": _ratio(self.step_time, self.physical_bound),
            "physical_bound": self.physical.to_json(),
            "compute_bound_s": self.compute.seconds,
            "compute_bound": self.compute.to_json(),
            "step_bound_s": self.bound.seconds,
            "ratio_to_step_bound": _ratio(self.step_time, self.bound.seconds),
            "binding": self.bound.binding,
            "layers": [vars(self.layers[k]) for k in order],
            "memory": self.memory,
            "chip_busy": self.chip_busy,
            **({"critical_path": self.critical_path} if self.critical_path else {}),
        }

    def summary(self) -> str:
        """One line: the step, its split, bytes moved, the lower and physical bounds with
        the ratios, the compute bound and which bound binds, and the ratio to the larger (times
        in ms to four significant digits, so a tiny program's parts do not print 0)."""
        return (
            f"modelled step on {self.chips} x {self.machine.name} ({self.mode} mode): "
            f"{_ms(self.step_time)} (compute {_ms(self.compute_time)}, communication "
            f"{_ms(self.communication_time)}, idle {_ms(self.idle_time)}), "
            f"{self.bytes_moved / 1e6:.4g} MB moved; lower bound {_ms(self.lower_bound)} "
            f"({_ratio_text(self.step_time, self.lower_bound)}), physical bound "
            f"{_ms(self.physical_bound)} ({_ratio_text(self.step_time, self.physical_bound)}), "
            f"compute bound {_ms(self.compute.seconds)}: {self.bound.binding}, step "
            f"{_ratio_text(self.step_time, self.bound.seconds)} its bound"
        )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def _ratio(value: float, bound: float) -> float | None:
    return value / bound if bound else None


def _ratio_text(value: float, bound: float) -> str:
    return f"{value / bound:.2f}x" if bound else "n/a"


def _class(kind: str) -> int:
    """0 compute, 1 communication, 2 neither (a barrier tick)."""
    return 0 if kind in COMPUTE_KINDS else 1 if kind in COMMUNICATION_KINDS else 2


def decompose(report: ModelReport, timeline: Timeline) -> None:
    """Fill the report's compute / communication / idle split, per step and per layer, from
    ``timeline`` over ``[0, report.step_time]`` (module docstring). One sweep over the
    slices' ends: O(S log S)."""
    for figures in report.layers.values():
        figures.time = figures.compute = figures.communication = figures.idle = 0.0
    # A slice whose end rounds to its start (a tiny duration at a huge time) spans nothing.
    work = [s for s in timeline.slices if s.start + s.duration > s.start and _class(s.kind) < 2]
    events: list[tuple[float, int, Slice]] = []
    for s in work:
        events.append((s.start, 1, s))
        events.append((s.start + s.duration, -1, s))
    events.sort(key=lambda e: (e[0], e[1]))
    active: list[dict[str, int]] = [{}, {}]  # per class: layer -> running slices
    totals = [0.0, 0.0, 0.0]
    pending_idle = 0.0  # idle time waiting for the next work to start
    last_layer = "prologue"
    t = 0.0

    def charge(cls: int, layer: str, span: float) -> None:
        figures = report.layers.setdefault(layer, LayerFigures(layer))
        figures.time += span
        if cls == 0:
            figures.compute += span
        elif cls == 1:
            figures.communication += span
        else:
            figures.idle += span
        totals[cls] += span

    for time, delta, s in events:
        time = min(time, report.step_time) if report.step_time else time
        span = time - t
        if span > 0:
            for cls in (0, 1):
                if active[cls]:
                    layer = min(active[cls], key=layer_rank)
                    charge(cls, layer, span)
                    last_layer = layer
                    break
            else:
                pending_idle += span
        t = max(t, time)
        layer = s.layer or "prologue"
        if delta > 0:
            if pending_idle > 0:  # the wait ends with this work: it is this layer's
                charge(2, layer, pending_idle)
                pending_idle = 0.0
            counts = active[_class(s.kind)]
            counts[layer] = counts.get(layer, 0) + 1
        else:
            counts = active[_class(s.kind)]
            counts[layer] -= 1
            if counts[layer] == 0:
                del counts[layer]
    tail = report.step_time - t + pending_idle
    if tail > 0:
        charge(2, last_layer, tail)
    report.compute_time, report.communication_time, report.idle_time = totals
    compute: dict[str, float] = {}
    busy: dict[str, float] = {}
    for s in timeline.slices:
        busy[s.lane] = busy.get(s.lane, 0.0) + s.duration
        if s.kind in COMPUTE_KINDS:
            compute[s.lane] = compute.get(s.lane, 0.0) + s.duration
    report.chip_busy = [
        {
            "chip": int(lane.split()[1]),
            "compute_s": compute.get(lane, 0.0),
            "busy_s": busy.get(lane, 0.0),
        }
        for lane in timeline.lanes
        if lane.startswith("chip ")
    ]
