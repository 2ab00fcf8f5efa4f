"""phases / phase_order: which statements run at once.

Two statements may share a phase when they are on disjoint chips and neither touches what
the other writes — a tensor by its name (its storage), wherever its copies live, as the seed
says. Each statement, in source order, goes into the earliest phase after every statement it
depends on where all its chips are free. The dependencies:

- a section's write of a storage comes after every earlier read of it (write-after-read, on
  any chip, by sections and transfers, of host values too: a cache passed in as a function
  argument is carried state like any other) and every earlier write of it
  (write-after-write); a read comes after the last write of its storage on any chip
  (read-after-write; by storage rather than per chip, so that tp-phase also orders a program
  that has no transfers yet);
- a transfer reads its storage on the source chip (so it comes after that storage's writer,
  and a later in-place writer comes after it) and copies it onto the destination chip: the
  copy is no write of the storage, so the transfer waits for no reader of it elsewhere, and
  readers elsewhere do not wait for it. On the destination chip it is a write of that chip's
  copy: it comes after the earlier reads of that (storage, chip) and earlier copies there,
  and later reads of that (storage, chip) come after it.

One pass over the statements with per-storage and per-(storage, chip) bookkeeping:
near-linear, no all-pairs scan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from xdsl.ir import SSAValue

from tp_dialect.analysis.touch import Key, SectionTouch

_K = TypeVar("_K")


def _latest(table: Mapping[_K, int], keys: Iterable[_K]) -> int:
    """The latest phase ``table`` records for any of ``keys`` (-1: none)."""
    return max((table.get(k, -1) for k in keys), default=-1)


def _record(table: dict[_K, int], keys: Iterable[_K], phase: int) -> None:
    for k in keys:
        if table.get(k, -1) < phase:
            table[k] = phase


def phase_of(touches: Sequence[SectionTouch]) -> list[int]:
    """The phase of each statement (same order as ``touches``): the earliest after every
    statement it depends on (see the module docstring) in which all its chips are free."""
    written: dict[SSAValue, int] = {}  # storage -> last phase a section wrote it
    read: dict[SSAValue, int] = {}  # storage -> last phase anything read it (any chip)
    copied: dict[Key, int] = {}  # (storage, chip) -> last phase a transfer copied there
    read_on: dict[Key, int] = {}  # (storage, chip) -> last phase anything read it there
    busy: dict[int, set[int]] = {}
    phases = []
    for t in touches:
        reads = {s for s, _ in t.reads}
        writes = {s for s, _ in t.writes}
        after = max(
            _latest(written, reads),  # RAW
            _latest(copied, t.reads),  # RAW on a copy: read where it arrived
            _latest(written, writes),  # WAW
            _latest(read, writes),  # WAR
            _latest(copied, t.copies),  # a copy over an earlier copy
            _latest(read_on, t.copies),  # a copy over one still being read there
        )
        p = after + 1
        while any(p in busy.get(c, ()) for c in t.chips):
            p += 1
        for c in t.chips:
            busy.setdefault(c, set()).add(p)
        _record(read, reads, p)
        _record(read_on, t.reads, p)
        _record(written, writes, p)
        _record(copied, t.copies, p)
        phases.append(p)
    return phases


def phase_order(touches: Sequence[SectionTouch]) -> tuple[list[int], list[bool]]:
    """The statements' order phase by phase (indices into ``touches``, source order within a
    phase), and ``barrier_after[k]``: whether position k closes its phase."""
    phases = phase_of(touches)
    order = sorted(range(len(touches)), key=lambda i: (phases[i], i))
    barrier_after = [
        k == len(order) - 1 or phases[order[k + 1]] != phases[order[k]] for k in range(len(order))
    ]
    return order, barrier_after
