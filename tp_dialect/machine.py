"""The machine a tp program is modelled on, as data: N chips, their compute and memories, the
links between them and the host relay's costs. IR level (it reads JSON and imports no
analysis): the cost model and the legality shims read one description (`tp_dialect.shims`
takes the SN40L's SRAM from here).

Presets: ``sn40l`` from SambaNova's public figures (638 TFLOPS BF16, 520 MB on-chip SRAM,
64 GB HBM at about 1.6 TB/s per socket, 8 sockets a node). No chip-to-chip bandwidth is
public: ``link_bandwidth`` (64 GB/s per direction, a PCIe Gen5 x16-class figure) and
``link_latency`` (5 us) are assumptions, named here so a user overrides them with a JSON file
(``--machine my.json`` holding any of the fields). ``generic`` is a round-numbers accelerator
for comparison.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields, replace

from tp_dialect.errors import TpError
from tp_dialect.jsonfile import parse_json, read_json_text


class MachineError(ValueError, TpError):
    """A machine description that cannot be used, with the reason."""


@dataclass(frozen=True)
class Machine:
    """One node of identical chips (figures per chip), its links and its host."""

    name: str
    max_chips: int
    peak_flops: float  # FLOP/s, dense BF16
    sram_bytes: float  # on-chip memory
    hbm_bytes: float  # off-chip memory (weights and live tensors must fit here)
    hbm_bandwidth: float  # B/s
    link_bandwidth: float  # B/s per direction between two chips (assumption for sn40l)
    link_latency: float  # s per transfer
    topology: str  # "all-to-all": every pair linked; "ring": hops to the neighbour
    host_copy_overhead: float  # s the host spends on each relay copy, besides the bytes
    barrier_latency: float  # s to close a phase (every chip waits for every chip)
    # s each op costs besides its roofline: 0 on a dataflow chip (its kernels are compiled
    # into one pipeline), the dispatch of each op on a processor that runs them one by one
    # (measured for the `local` machine: the reference interpreter's per-op overhead)
    op_overhead: float = 0.0
    # whether an in-place update copies its destination first (value semantics, as the
    # reference interpreter runs): a chip updates in place
    copies_updates: bool = False
    # B/s at which a buffer new to the process is mapped in on its first write (the OS
    # faults in each page), besides the write itself: charged on the new buffer an update
    # copies into where updates copy (`copies_updates`). 0: no such cost — a chip writes
    # into memory it already holds (measured for the `local` machine)
    first_touch_bandwidth: float = 0.0
    # whether each chip streams its sections' weight slices into SRAM ahead of them, on an
    # HBM stream of its own, while it computes or waits on links (dataflow mode; bounded by
    # ``sram_bytes``): a dataflow chip does; a processor running ops one by one does not
    prefetch_weights: bool = False

    def transfer_time(self, nbytes: float, src: int, dst: int, chips: int) -> float:
        """Time for one tensor to cross from chip ``src`` to chip ``dst``."""
        hops = 1
        if self.topology == "ring" and chips > 1:
            d = abs(src - dst) % chips
            hops = max(1, min(d, chips - d))
        return hops * self.link_latency + nbytes / self.link_bandwidth

    def to_json(self) -> dict[str, object]:
        return asdict(self)


MACHINES: dict[str, Machine] = {
    "sn40l": Machine(
        name="sn40l",
        max_chips=8,
        peak_flops=638e12,
        sram_bytes=520e6,
        hbm_bytes=64e9,
        hbm_bandwidth=1.6e12,
        link_bandwidth=64e9,
        link_latency=5e-6,
        topology="all-to-all",
        host_copy_overhead=10e-6,
        barrier_latency=2e-6,
        prefetch_weights=True,
    ),
    "generic": Machine(
        name="generic",
        max_chips=8,
        peak_flops=100e12,
        sram_bytes=50e6,
        hbm_bytes=32e9,
        hbm_bandwidth=1e12,
        link_bandwidth=50e9,
        link_latency=10e-6,
        topology="ring",
        host_copy_overhead=20e-6,
        barrier_latency=5e-6,
        prefetch_weights=True,
    ),
}


def machine_from(spec: str) -> Machine:
    """A preset by name, or a JSON file: a preset (``"base"``, default sn40l) with fields
    overridden. Raises MachineError naming an unknown preset or field."""
    if spec in MACHINES:
        return MACHINES[spec]
    if not os.path.lexists(spec):
        raise MachineError(
            f"no machine '{spec}': name a preset ({', '.join(MACHINES)}) or a JSON file"
        )
    source = f"machine file '{spec}'"
    text = read_json_text(spec, "machine file", MachineError)
    holds = "it holds one JSON object of fields"
    data = parse_json(text, source, holds, "field", MachineError)
    if not isinstance(data, dict):
        raise MachineError(f"machine file '{spec}' must hold a JSON object")
    base = MACHINES.get(str(data.pop("base", "sn40l")))
    if base is None:
        raise MachineError(f"machine file '{spec}': unknown base preset")
    known = {f.name for f in fields(Machine)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise MachineError(
            f"machine file '{spec}': unknown field(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known))})"
        )
    for name, value in data.items():
        problem = _field_problem(name, value, getattr(base, name))
        if problem:
            raise MachineError(f"machine file '{spec}': {name} {problem}")
    if data.get("copies_updates") is True and "prefetch_weights" not in data:
        # A processor running ops one by one with value semantics (a calibrated `local`
        # machine, including files written before the field existed) reads a weight when
        # an op runs: it does not stream ahead unless its file says so.
        data["prefetch_weights"] = False
    return replace(base, **data)


# Figures a machine cannot have as zero (a division by them, or no chip at all).
_POSITIVE = {"max_chips", "peak_flops", "hbm_bandwidth", "link_bandwidth"}


# Physical bounds on the figures (beyond them a step's arithmetic over- or underflows: an
# hour-long latency summed over a program's transfers is still finite). Rates at least one a
# second; times at most an hour; sizes and rates at most 1e24.
_LARGEST = 1e24
_RANGES: dict[str, tuple[float, float, str]] = {
    "max_chips": (1, 1 << 20, " chips"),
    "peak_flops": (1.0, _LARGEST, " FLOP/s"),
    "hbm_bandwidth": (1.0, _LARGEST, " B/s"),
    "link_bandwidth": (1.0, _LARGEST, " B/s"),
    "first_touch_bandwidth": (1.0, _LARGEST, " B/s"),
    "link_latency": (0.0, 3600.0, " s"),
    "host_copy_overhead": (0.0, 3600.0, " s"),
    "barrier_latency": (0.0, 3600.0, " s"),
    "op_overhead": (0.0, 3600.0, " s"),
}


def _field_problem(name: str, value: object, like: object) -> str | None:
    """Why ``value`` cannot be field ``name`` (whose preset value is ``like``), or None."""
    if name == "topology":
        return None if value in ("all-to-all", "ring") else "must be all-to-all or ring"
    if isinstance(like, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(like, str):
        return None if isinstance(value, str) else "must be a string"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, not {json.dumps(value)}"
    if isinstance(like, int) and not isinstance(value, int):
        return f"must be a whole number, not {value}"
    if not math.isfinite(value) or value < 0 or (name in _POSITIVE and value == 0):
        return f"must be a finite number {'above' if name in _POSITIVE else 'at least'} 0"
    low, high, unit = _RANGES.get(name, (0.0, _LARGEST, ""))
    if value != 0 and not low <= value <= high:
        return f"{value:g} is outside what a machine can be: {low:g} to {high:g}{unit}"
    return None
