"""Split: how a tensor of an unsharded program is cut over the chips, and how a cut moves
through the ops tp-split sees through.

A value is whole on every chip (the spine: no `Split`), a `Split` (chip c holds runs
``ranges[c]`` of one axis, concatenated in order), or a partial sum (each chip holds a full-
shaped addend). The functions here are the propagation rules as pure arithmetic on cuts:
each returns the cut of a result, or a string saying why the cut cannot pass — the caller
turns that into a located refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Runs = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Split:
    """A tensor cut along ``axis`` (``full`` elements long): chip c holds ``ranges[c]``."""

    axis: int
    full: int
    ranges: tuple[Runs, ...]

    def local(self, chip: int) -> int:
        """How many elements of the axis chip ``chip`` holds."""
        return sum(n for _, n in self.ranges[chip])

    def on_axis(self, axis: int) -> Split:
        return Split(axis, self.full, self.ranges)

    def same_cut(self, other: Split) -> bool:
        """Whether ``other`` cuts its axis exactly as this one (axes aside)."""
        return self.full == other.full and self.ranges == other.ranges

    def describe(self, chip: int = 0) -> str:
        runs = ", ".join(f"[{s}, {s + n})" for s, n in self.ranges[chip])
        return f"axis {self.axis}, chip {chip} holding {runs} of {self.full}"


@dataclass(frozen=True)
class Window:
    """Each chip's part of a window of a split axis: where it starts in the chip's own tensor
    and how long it is, and the window's own cut."""

    local: tuple[tuple[int, int], ...]  # per chip: (offset, size) in the chip's tensor
    split: Split


def window(cut: Split, offset: int, size: int) -> Window | str:
    """The cut of ``[offset, offset + size)`` of ``cut``'s axis: every chip must hold whole
    runs of it, contiguous in its own tensor, and at least one element."""
    local: list[tuple[int, int]] = []
    ranges: list[Runs] = []
    end = offset + size
    for chip, runs in enumerate(cut.ranges):
        at, first, held, inside = 0, None, 0, []
        for start, n in runs:
            lo, hi = max(start, offset), min(start + n, end)
            if lo < hi and (lo, hi) != (start, start + n):
                return (
                    f"the window [{offset}, {end}) of axis {cut.axis} cuts through chip "
                    f"{chip}'s run [{start}, {start + n})"
                )
            if lo < hi:
                if first is not None and at != first + held:
                    return f"chip {chip}'s part of the window [{offset}, {end}) is not contiguous"
                first = at if first is None else first
                held += n
                inside.append((start - offset, n))
            at += n
        if first is None:
            return f"chip {chip} holds nothing of the window [{offset}, {end}) of axis {cut.axis}"
        local.append((first, held))
        ranges.append(tuple(inside))
    return Window(tuple(local), Split(cut.axis, size, tuple(ranges)))


def expand(cut: Split, sizes: Sequence[int], first_out: int) -> Split | str:
    """The cut after the split axis is expanded into dims ``sizes`` (output dims
    ``first_out``...): it lands on the outermost dim whose blocks (the dims after it) every run
    holds whole, with only dims of 1 before it — a reshape into heads splits at head
    boundaries only."""
    for lead in range(len(sizes)):
        inner = 1
        for s in sizes[lead + 1 :]:
            inner *= s
        if all(s % inner == 0 and n % inner == 0 for runs in cut.ranges for s, n in runs):
            ranges = tuple(tuple((s // inner, n // inner) for s, n in runs) for runs in cut.ranges)
            return Split(first_out + lead, sizes[lead], ranges)
        if sizes[lead] != 1:
            start, n = next(
                (s, n) for runs in cut.ranges for s, n in runs if s % inner or n % inner
            )
            chip = next(c for c, runs in enumerate(cut.ranges) if (start, n) in runs)
            return (
                f"chip {chip}'s run [{start}, {start + n}) of axis {cut.axis} is not whole "
                f"blocks of {inner} (the dims {list(sizes[lead + 1 :])} after the one it "
                "splits): the cut would fall inside a head"
            )
    raise AssertionError("the innermost dim holds any run whole")


def collapse(cut: Split, sizes: Sequence[int], at: int, out_axis: int) -> Split | str:
    """The cut after dims ``sizes`` (the split axis is ``sizes[at]``) collapse into output
    dim ``out_axis``: every dim before it in the group must be 1."""
    if any(s != 1 for s in sizes[:at]):
        return (
            f"collapsing dims {list(sizes)} mixes the split axis {cut.axis} with the dims before it"
        )
    inner = 1
    for s in sizes[at + 1 :]:
        inner *= s
    ranges = tuple(tuple((s * inner, n * inner) for s, n in runs) for runs in cut.ranges)
    return Split(out_axis, cut.full * inner, ranges)


def even(axis: int, size: int, chips: int) -> Split | None:
    """``size`` cut into ``chips`` equal runs along ``axis`` (None when it does not divide)."""
    if size % chips:
        return None
    run = size // chips
    return Split(axis, size, tuple(((c * run, run),) for c in range(chips)))
