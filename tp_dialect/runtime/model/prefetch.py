"""Weights streamed ahead: each chip's HBM stream, separate from its compute (dataflow mode).

Invariant: on a machine that prefetches (``Machine.prefetch_weights``), a chip's HBM moves
every byte the chip's sections read or write exactly once, at most ``hbm_bandwidth`` at any
time, and a section's weight slices are in SRAM before it starts:

- a section's *weight bytes* (`weight_reads`: the weight slices and whole weights it reads in
  full — a gathered table's rows are not known before the ids are, so a gather is never
  prefetched) are loaded by the chip's stream, in program order, each load as soon as the
  stream is free and SRAM has room: the weights loaded and not yet released, plus this
  section's, fit in ``sram_bytes`` (a section releases its weights when it ends: eviction);
- a section's other bytes (its KV-cache reads, what it stores) move while it runs, and the
  stream yields the HBM to them: a load only uses the time no running section's traffic
  takes (`HbmStream.load` fills the gaps);
- a section whose weights alone exceed ``sram_bytes`` is not prefetched: it streams them
  while it runs, as on a machine that does not prefetch.

So a chip waiting for an all-reduce's links loads the next layer's weights meanwhile, and the
step's physical limit is the larger of the HBM stream and the dependency chain, not their sum
(`bounds.physical_bound`). Phase, relay and sequential modes do not prefetch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tp_dialect.analysis.calls.flat_runs import Frame, HeldKey, Runs
from tp_dialect.runtime.model.bounds import Access
from tp_dialect.runtime.model.memory import Held

N = TypeVar("N")  # what a load waited for: the simulation's work node


def weight_reads(runs: Runs, frame: Frame, reads: list[Access], held: dict[HeldKey, Held]) -> float:
    """The bytes of the weights a section, run in ``frame``, reads in full: each distinct
    weight the chip holds (``held``: its `memory.holdings`) read whole by an op of the section
    (``reads``: the section's `bounds.section_accesses`; a gather reads rows)."""
    keys: set[HeldKey] = set()
    for _, _, operands, rows in reads:
        if rows is not None:
            # A gather (its rows depend on the ids) or an extract_slice's window: not loaded
            # ahead here (a window of a weight streams as its section runs).
            continue
        for operand in operands:
            key = runs.held_key(frame, operand)
            if key is not None and key in held and held[key].weight:
                keys.add(key)
    return float(sum(held[k].bytes for k in keys))


@dataclass
class HbmStream(Generic[N]):
    """One chip's HBM: the loads its stream makes and the traffic its sections make while
    they run (module docstring). Times are seconds from the step's start."""

    budget: float  # SRAM bytes the loaded weights may fill
    bandwidth: float  # B/s
    free: float = 0.0  # when the last load ended
    last: N | None = None  # the last load's node
    # (release time, bytes, the node releasing): weights loaded, not yet released
    loaded: list[tuple[float, float, N]] = field(default_factory=list)
    busy: list[tuple[float, float]] = field(default_factory=list)  # sections' own traffic

    def fits(self, nbytes: float) -> bool:
        """Whether weights of ``nbytes`` can be prefetched at all (they fit in SRAM alone)."""
        return nbytes <= self.budget

    def load(self, nbytes: float) -> tuple[float, float, N | None]:
        """Load ``nbytes`` of weights after every earlier load: the start, the end and what
        it waited for last (the previous load, the section whose end made room, or None)."""
        start, pred = self.free, self.last
        self.loaded = [h for h in self.loaded if h[0] > start]
        room = self.budget - sum(h[1] for h in self.loaded)
        for release, size, node in sorted(self.loaded, key=lambda h: h[0]):
            if room >= nbytes:
                break
            room += size  # this section's end releases its weights
            start, pred = release, node
        end = self._through_gaps(start, nbytes / self.bandwidth)
        self.free = end
        return start, end, pred

    def _through_gaps(self, t: float, seconds: float) -> float:
        """When ``seconds`` of loading, begun at ``t``, ends in the time the sections'
        own traffic leaves free."""
        self.busy = [b for b in self.busy if b[1] > self.free]
        for a, b in self.busy:
            if b <= t:
                continue
            if a > t:
                if seconds <= a - t:
                    return t + seconds
                seconds -= a - t
            t = b
        return t + seconds

    def hold(self, release: float, nbytes: float, node: N) -> None:
        """The weights just loaded stay in SRAM until ``release`` (their section's end)."""
        if nbytes > 0:
            self.loaded.append((release, nbytes, node))

    def run(self, start: float, nbytes: float) -> None:
        """A section moves ``nbytes`` of its own from ``start`` (HBM time the stream yields)."""
        if nbytes > 0:
            self.busy.append((start, start + nbytes / self.bandwidth))
