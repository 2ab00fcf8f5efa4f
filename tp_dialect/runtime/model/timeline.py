"""A multi-chip step's timeline, and its writers: a Chrome trace (Perfetto) and a Gantt PNG.

The runtime model fills a :class:`Timeline` (lanes ``"host"``, ``"chip 0"``, ...,
``"link 0->1"``, ...; slices of compute, transfers, copies, collectives and barriers; flows for
tensors moving between lanes); :func:`combine` puts several modes' timelines side by side.
:func:`write_chrome_trace` writes it for Perfetto / ``chrome://tracing``;
:func:`write_timeline_png` draws it with matplotlib (imported only when a PNG is drawn, on the
Agg canvas, never through ``pyplot``). Both writers validate first and write atomically: the
target is either left as it was or replaced whole.

Trace notes. Times are quantized to whole nanoseconds (the resolution Perfetto keeps), and a
slice's ``dur`` is ``end - start`` in those units, so a flow leaving at a slice's end lands
exactly on it. Lane ``i`` is thread ``i + 1``, not ``i``: Perfetto's JSON importer reads thread
id 0 as "no thread" and maps it to the process id (1), which would merge the first two lanes.
Events are listed in time order, and at equal times flow starts come before slices and flow
ends after them, so each flow start binds to the slice it leaves and each flow end (bound to
the enclosing slice, ``"bp": "e"``) to the slice it enters.
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
import textwrap
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tp_dialect.runtime.files import write_whole

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PROCESS_NAME = "tp step"
PID = 1

KIND_COLORS: dict[str, str] = {
    "compute": "#4C72B0",
    "transfer": "#DD8452",
    "copy": "#55A868",
    "collective": "#C44E52",
    "barrier": "#8172B3",
    "prefetch": "#64B5CD",
}
_SPARE_COLORS = ("#937860", "#DA8BC3", "#8C8C8C", "#CCB974")
_FLOW_COLOR = "#333333"

# PNG geometry: inches and points at 100 dpi.
_DPI = 100
_WIDTH_IN = 14.0
_HEIGHT_BASE_IN = 1.5
_HEIGHT_PER_LANE_IN = 0.5
_HEIGHT_MAX_IN = 120.0  # Agg's limit is 2**16 pixels a side; stay far below it.
_LABEL_FONT_PT = 7.0
_MAX_LABELS = 400


@dataclass(frozen=True)
class Slice:
    """One interval of work on one lane."""

    lane: str  # "chip 0", "chip 1", ..., "hbm 0" (a chip's weight stream), "link 0->1", "host"
    name: str  # e.g. section label "l0_c1_q" or "transfer l0_c1_o 1->0"
    start: float  # seconds from the step's start
    duration: float  # seconds (>= 0)
    kind: str  # "compute" | "transfer" | "copy" | "collective" | "barrier" | "prefetch"
    layer: str | None = None  # "layer 3", "prologue", or None
    args: Mapping[str, float | int | str] = field(default_factory=dict)  # flops, bytes, ...


@dataclass(frozen=True)
class Flow:
    """One tensor moving from one lane to another."""

    name: str  # the tensor that moves
    src_lane: str
    src_time: float  # when it leaves (end of the sending slice)
    dst_lane: str
    dst_time: float  # when it arrives (start of the receiving slice)


@dataclass
class Timeline:
    """A step's lanes (in display order), slices and flows."""

    lanes: list[str]  # display order: "host" first if present, then chips in order
    slices: list[Slice]
    flows: list[Flow]

    def end(self) -> float:
        """The latest end (start + duration) over all slices, in seconds; 0.0 if there are none."""
        return max((s.start + s.duration for s in self.slices), default=0.0)

    def busy(self, lane: str) -> float:
        """The summed duration of the slices on ``lane`` (overlaps count twice); 0.0 if none.

        Raises ValueError if ``lane`` is not one of ``self.lanes``, so a misspelt lane is not
        silently reported idle.
        """
        if lane not in self.lanes:
            raise ValueError(f"unknown lane {lane!r}; the timeline's lanes are {self.lanes}")
        return math.fsum(s.duration for s in self.slices if s.lane == lane)

    def by_layer(self) -> dict[str | None, list[Slice]]:
        """The slices of each layer (``"prologue"``, ``"layer 3"``, or None for work of no
        layer), each list in the timeline's order, layers in order of their first slice: an
        outlined program's model (``@decode`` calling ``@layer``) gives its flat program's,
        layer by layer."""
        layers: dict[str | None, list[Slice]] = {}
        for s in self.slices:
            layers.setdefault(s.layer, []).append(s)
        return layers


def combine(timelines: Mapping[str, Timeline]) -> Timeline:
    """One timeline holding several side by side on the same time axis: each of
    ``timelines``' lanes renamed ``"<key>: <lane>"`` (keys in the mapping's order), its slices
    and flows moved with them. One timeline comes back as it is."""
    if len(timelines) == 1:
        return next(iter(timelines.values()))
    lanes: list[str] = []
    slices: list[Slice] = []
    flows: list[Flow] = []
    for key, t in timelines.items():
        lanes += [f"{key}: {lane}" for lane in t.lanes]
        slices += [replace(s, lane=f"{key}: {s.lane}") for s in t.slices]
        flows += [
            replace(f, src_lane=f"{key}: {f.src_lane}", dst_lane=f"{key}: {f.dst_lane}")
            for f in t.flows
        ]
    return Timeline(lanes, slices, flows)


# --------------------------------------------------------------------------------------------
# Validation


def _validate(timeline: Timeline) -> dict[str, int]:
    """Each lane's index, after checking lanes are unique and every slice and flow is sane."""
    index: dict[str, int] = {}
    for i, lane in enumerate(timeline.lanes):
        if lane in index:
            raise ValueError(f"lane {lane!r} appears twice in timeline.lanes")
        index[lane] = i
    for s in timeline.slices:
        if s.lane not in index:
            raise ValueError(
                f"slice {s.name!r} is on lane {s.lane!r}, which is not in timeline.lanes "
                f"{timeline.lanes}"
            )
        if not (math.isfinite(s.start) and math.isfinite(s.duration)):
            raise ValueError(
                f"slice {s.name!r} on {s.lane!r} has a non-finite start ({s.start}) or "
                f"duration ({s.duration})"
            )
        if s.duration < 0:
            raise ValueError(f"slice {s.name!r} on {s.lane!r} has negative duration {s.duration}")
    for f in timeline.flows:
        for role, lane in (("leaves from", f.src_lane), ("arrives on", f.dst_lane)):
            if lane not in index:
                raise ValueError(
                    f"flow {f.name!r} {role} lane {lane!r}, which is not in timeline.lanes "
                    f"{timeline.lanes}"
                )
        if not (math.isfinite(f.src_time) and math.isfinite(f.dst_time)):
            raise ValueError(
                f"flow {f.name!r} has a non-finite time ({f.src_time} -> {f.dst_time})"
            )
    return index


# --------------------------------------------------------------------------------------------
# Chrome trace


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _us(ns: int) -> float:
    return ns / 1000.0


def _json_arg(slice_name: str, key: str, value: object) -> bool | int | float | str:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else str(number)  # strict JSON has no inf/nan
    raise ValueError(
        f"slice {slice_name!r}: arg {key!r} is a {type(value).__name__}, "
        "expected a float, an int or a str"
    )


def chrome_trace(timeline: Timeline) -> dict[str, Any]:
    """A Chrome Trace Event Format object for ``timeline`` that strict JSON can hold.

    One process (``"tp step"``, pid 1); lane ``i`` of ``timeline.lanes`` is thread ``i + 1``
    (named by a ``thread_name`` and ordered by a ``thread_sort_index`` metadata event); every
    slice is one complete event (``"ph": "X"``, ``ts``/``dur`` in microseconds, ``cat`` its
    kind, ``args`` its args plus ``"layer"`` when it has one); every flow is a ``"s"`` event on
    its source lane at ``src_time`` and a ``"f"`` event (``"bp": "e"``) on its destination lane
    at ``dst_time`` with the same ``id`` (the flow's index + 1), ``cat`` ``"transfer"`` and the
    tensor's name. Times are rounded to whole nanoseconds.

    Raises ValueError naming the slice for a negative or non-finite duration (or start), naming
    the lane for a slice or flow on a lane not in ``timeline.lanes`` (or a lane listed twice),
    and naming the slice and key for an arg that is not a number or a string.
    """
    index = _validate(timeline)
    meta: list[dict[str, Any]] = [
        {"ph": "M", "pid": PID, "name": "process_name", "args": {"name": PROCESS_NAME}},
    ]
    for lane, i in index.items():
        tid = i + 1
        meta.append(
            {"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": lane}}
        )
        meta.append(
            {
                "ph": "M",
                "pid": PID,
                "tid": tid,
                "name": "thread_sort_index",
                "args": {"sort_index": i},
            }
        )

    # (ts in ns, rank at equal ts: flow starts, then slices, then flow ends; list order, event)
    timed: list[tuple[int, int, int, dict[str, Any]]] = []
    for s in timeline.slices:
        start_ns = _ns(s.start)
        end_ns = _ns(s.start + s.duration)
        args = {key: _json_arg(s.name, key, value) for key, value in s.args.items()}
        if s.layer is not None:
            args["layer"] = s.layer
        event = {
            "name": s.name,
            "cat": s.kind,
            "ph": "X",
            "ts": _us(start_ns),
            "dur": _us(end_ns - start_ns),
            "pid": PID,
            "tid": index[s.lane] + 1,
            "args": args,
        }
        timed.append((start_ns, 1, len(timed), event))
    for flow_id, f in enumerate(timeline.flows, start=1):
        common = {"name": f.name, "cat": "transfer", "id": flow_id, "pid": PID}
        src_ns, dst_ns = _ns(f.src_time), _ns(f.dst_time)
        start = {**common, "ph": "s", "ts": _us(src_ns), "tid": index[f.src_lane] + 1}
        finish = {**common, "ph": "f", "bp": "e", "ts": _us(dst_ns), "tid": index[f.dst_lane] + 1}
        timed.append((src_ns, 0, len(timed), start))
        timed.append((dst_ns, 2, len(timed), finish))
    timed.sort(key=lambda entry: entry[:3])
    return {"traceEvents": meta + [entry[3] for entry in timed], "displayTimeUnit": "ns"}


def write_chrome_trace(timeline: Timeline, path: str | os.PathLike[str]) -> None:
    """Writes :func:`chrome_trace` of ``timeline`` to ``path`` as strict JSON, whole or not at all.

    The JSON is built in memory, written to a temporary file in ``path``'s directory and moved
    over ``path`` with ``os.replace``; on any failure (validation, a missing directory, a full
    disk) no temporary file is left behind and ``path`` keeps its old contents, if any.
    """
    text = json.dumps(chrome_trace(timeline), allow_nan=False, separators=(",", ":"))
    write_whole(path, text.encode("utf-8"))


# --------------------------------------------------------------------------------------------
# PNG


def _kind_colors(kinds: list[str]) -> dict[str, str]:
    colors: dict[str, str] = {}
    spare = 0
    for kind in kinds:
        if kind in KIND_COLORS:
            colors[kind] = KIND_COLORS[kind]
        else:
            colors[kind] = _SPARE_COLORS[spare % len(_SPARE_COLORS)]
            spare += 1
    return colors


def _draw_labels(ax: Axes, slices: list[Slice], index: dict[str, int], px_per_ms: float) -> None:
    """Names inside the bars wide enough to hold them (the widest first, at most a few hundred)."""
    char_px = 0.6 * _LABEL_FONT_PT / 72.0 * _DPI
    fitting = [
        s for s in slices if s.duration * 1e3 * px_per_ms >= (len(s.name) + 2) * char_px and s.name
    ]
    fitting.sort(key=lambda s: s.duration, reverse=True)
    for s in fitting[:_MAX_LABELS]:
        ax.text(
            (s.start + s.duration / 2) * 1e3,
            index[s.lane],
            s.name,
            ha="center",
            va="center",
            fontsize=_LABEL_FONT_PT,
            color="white",
            clip_on=True,
            zorder=4,
        )


def _figure_png(timeline: Timeline, index: dict[str, int], title: str) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    n_lanes = len(timeline.lanes)
    height = min(_HEIGHT_BASE_IN + _HEIGHT_PER_LANE_IN * max(n_lanes, 1), _HEIGHT_MAX_IN)
    fig = Figure(figsize=(_WIDTH_IN, height), dpi=_DPI, layout="constrained")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()

    end_ms = timeline.end() * 1e3
    times_ms = [s.start * 1e3 for s in timeline.slices]
    times_ms += [t * 1e3 for f in timeline.flows for t in (f.src_time, f.dst_time)]
    left = min([0.0, *times_ms])
    right = max([end_ms, *times_ms])
    if right <= left:
        right = left + 1.0
    margin = 0.01 * (right - left)
    axes_px = 0.8 * _WIDTH_IN * _DPI  # the plot's share of the width, before layout
    px_per_ms = axes_px / (right - left + 2 * margin)
    min_ms = 1.0 / px_per_ms  # a bar is drawn at least a pixel wide, so none vanishes

    kinds = list(dict.fromkeys(s.kind for s in timeline.slices))
    colors = _kind_colors(kinds)
    bars: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    ticks: dict[str, tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
    per_lane: dict[str, int] = defaultdict(int)
    for s in timeline.slices:
        per_lane[s.lane] += 1
        if s.duration > 0:
            bars[(s.lane, s.kind)].append((s.start * 1e3, max(s.duration * 1e3, min_ms)))
        else:  # an instant (a barrier): a tick, since a bar would have no width
            ticks[s.kind][0].append(s.start * 1e3)
            ticks[s.kind][1].append(index[s.lane])
    for (lane, kind), spans in bars.items():  # one collection per (lane, kind): fast
        y = index[lane]
        ax.broken_barh(
            spans,
            (y - 0.4, 0.8),
            facecolors=colors[kind],
            edgecolors="white",
            # Separating edges only while bars are a few pixels wide on average.
            linewidth=0.3 if per_lane[lane] * 4 < axes_px else 0.0,
            zorder=2,
        )
    for kind, (xs, ys) in ticks.items():
        ax.plot(
            xs,
            ys,
            linestyle="none",
            marker="|",
            markersize=18,
            mew=2.0,
            color=colors[kind],
            zorder=3,
        )

    arrows = [
        (f.src_time * 1e3, index[f.src_lane], f.dst_time * 1e3, index[f.dst_lane])
        for f in timeline.flows
        if (f.src_time, f.src_lane) != (f.dst_time, f.dst_lane)
    ]
    if arrows:
        x0, y0, x1, y1 = zip(*arrows, strict=True)
        ax.quiver(
            x0,
            y0,
            [b - a for a, b in zip(x0, x1, strict=True)],
            [b - a for a, b in zip(y0, y1, strict=True)],
            angles="xy",
            scale_units="xy",
            scale=1.0,
            units="dots",
            width=1.0,
            headwidth=5.0,
            headlength=6.0,
            headaxislength=5.5,
            color=_FLOW_COLOR,
            alpha=0.6,
            zorder=3,
        )

    ax.set_xlim(left - margin, right + margin)
    ax.set_ylim(max(n_lanes, 1) - 0.5, -0.5)  # the first lane ("host") on top
    ax.set_yticks(range(n_lanes), timeline.lanes)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", linestyle=":", linewidth=0.5, zorder=0)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(textwrap.fill(title, 120), fontsize="medium")  # long summaries wrap

    handles: list[Patch | Line2D] = [Patch(facecolor=colors[k], label=k) for k in kinds]
    if arrows:
        handles.append(Line2D([], [], color=_FLOW_COLOR, linewidth=1.0, label="flow"))
    if handles:
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.005, 1.0),
            fontsize=8,
            frameon=False,
        )

    _draw_labels(ax, timeline.slices, index, px_per_ms)

    buffer = io.BytesIO()
    canvas.print_png(buffer)
    return buffer.getvalue()


def write_timeline_png(timeline: Timeline, path: str | os.PathLike[str], title: str = "") -> None:
    """Writes a Gantt chart of ``timeline`` to ``path`` as a PNG, whole or not at all.

    One row per lane in ``timeline.lanes`` order (the first, ``"host"``, on top), slices as
    bars colored by kind (with a legend), flows as thin arrows from source to destination, the
    x axis in milliseconds; the figure grows taller with the number of lanes and names are drawn
    only inside bars wide enough for them. Drawn on matplotlib's Agg canvas without ``pyplot``
    (no global backend or figure state changes). Validation raises ValueError as
    :func:`chrome_trace` does; the write is atomic as in :func:`write_chrome_trace`.
    """
    index = _validate(timeline)
    write_whole(path, _figure_png(timeline, index, title))
