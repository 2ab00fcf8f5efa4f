"""Progress of a long load or run, on the user's terminal only.

Invariant: nothing is drawn unless the user's terminal shows it (the stream drawn on is a
terminal, or ``$TP_PROGRESS=1`` asks for it) and the work has already taken ``after``
seconds (2 by default, ``$TP_PROGRESS_AFTER``): a short run, a pipe or a file sees no
progress at all. Then one line is rewritten in place (``\\r``) at most every ``every``
seconds — bytes read from the checkpoint, linalg ops run of the program's total, or what
tp-opt is doing (`Progress.say`) — and ended (single process) or cleared (MPI, tp-opt) when
the work is done. The loader and the interpreter
report through `tick` to whatever is active in this context; with none active, `tick` does
nothing.

Who draws:

- one process (`reporting`): a `Progress` on its stderr;
- a rank started by ``tp-run --mpi`` (`rank_reporting` with ``$TP_PROGRESS_DIR`` set): the
  launcher sets it only when its own stderr is a terminal, since the ranks' stderr is a pipe
  from ``mpiexec`` and the launcher holds their output until they end. Each rank writes its
  counters to a file of its own in that directory (`RankReport`: one tiny file replaced at
  most every ``every`` seconds, no MPI message, so no rank waits on it), and the launcher
  (`watching`) sums every rank's file and draws the line for the whole run;
- a rank under the user's own ``mpiexec`` (no ``$TP_PROGRESS_DIR``): rank 0 draws its own
  counters on its stderr under the same rule as one process. Under MPICH's hydra a rank's
  stderr is a pipe, so it stays quiet unless ``$TP_PROGRESS=1``; hydra forwards a partial
  line (``\\r`` without ``\\n``) as soon as it is written, so the line then shows live.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol, TextIO

AFTER_ENV = "TP_PROGRESS_AFTER"  # seconds before progress shows (tests set 0)
FORCE_ENV = "TP_PROGRESS"  # "1": draw even when the stream is not a terminal
DIR_ENV = "TP_PROGRESS_DIR"  # set by tp-run --mpi: where its ranks report


def shows(stream: TextIO) -> bool:
    """Whether progress drawn on ``stream`` reaches the user: it is a terminal, or
    ``$TP_PROGRESS=1`` says to draw anyway."""
    if os.environ.get(FORCE_ENV) == "1":
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def delay() -> float:
    """Seconds of work before progress shows: ``$TP_PROGRESS_AFTER`` if it is a number,
    else 2."""
    try:
        return float(os.environ.get(AFTER_ENV, "2"))
    except ValueError:
        return 2.0  # not a number: the default delay


class _Sink(Protocol):
    def tick(self, loaded: int = 0, ran: int = 0) -> None: ...


class Progress:
    """Counters of one load-and-run, drawn on ``stream`` when `shows` says the user sees
    it; ``clear``: the line is erased at the end, else ended."""

    def __init__(
        self,
        stream: TextIO,
        total_ops: int = 0,
        after: float = 2.0,
        every: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        clear: bool = False,
        label: str = "tp-run",
    ) -> None:
        self.stream = stream
        self.live = shows(stream)
        self.total_ops = total_ops
        self.after, self.every, self.clock = after, every, clock
        self.clear, self.label = clear, label
        self.start = clock()
        self.last = -float("inf")
        self.loaded = 0
        self.ran = 0
        self.shown = False
        self.line = ""
        self.text = ""  # what `say` said last: drawn in place of the counters

    def tick(self, loaded: int = 0, ran: int = 0) -> None:
        """Count ``loaded`` bytes read and ``ran`` ops run; redraw the line if it is time."""
        self.loaded += loaded
        self.ran += ran
        self.draw()

    def say(self, text: str, force: bool = False) -> None:
        """Show ``label: text`` in place of the counters (for work that is not bytes and
        ops: tp-opt's parsing and passes); redraw if it is time (``force``: as `set`)."""
        self.text = text
        self.draw(force)

    def set(self, loaded: int, ran: int, total_ops: int, force: bool = False) -> None:
        """Take the counters as given (summed elsewhere); redraw if it is time (``force``:
        even within ``every`` of the last line, once ``after`` has passed)."""
        self.loaded, self.ran, self.total_ops = loaded, ran, total_ops
        self.draw(force)

    def draw(self, force: bool = False) -> None:
        """Rewrite the line if the user sees it, ``after`` has passed and (unless ``force``)
        ``every`` has passed since the last one."""
        if not self.live:
            return
        now = self.clock()
        if now - self.start < self.after or (not force and now - self.last < self.every):
            return
        self.last = now
        line = f"{self.label}: {self.loaded / 1e9:.2f} GB loaded"
        if self.ran:
            line += f", {self.ran}/{self.total_ops or '?'} linalg ops run"
        if self.text:
            line = f"{self.label}: {self.text}"
        if line == self.line:
            return  # nothing new to say
        self.line = line
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """End the line if one was drawn (``clear``: erase it), so what follows starts on a
        line of its own."""
        if self.shown:
            self.stream.write("\r\x1b[K" if self.clear else "\n")
            self.stream.flush()


class RankReport:
    """One MPI rank's counters, written for the launcher to ``path`` as one line
    ``loaded ran total_ops``: when made, at most every ``every`` seconds as they grow, and at
    close. A file is replaced whole (written aside, then renamed), so a reader never sees
    half a record; a write that fails is dropped (progress never fails a run)."""

    def __init__(
        self,
        path: str | Path,
        total_ops: int,
        every: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.total_ops, self.every, self.clock = total_ops, every, clock
        self.loaded = 0
        self.ran = 0
        self.last = clock()
        self._write()

    def tick(self, loaded: int = 0, ran: int = 0) -> None:
        """Count ``loaded`` bytes read and ``ran`` ops run; write them if it is time."""
        self.loaded += loaded
        self.ran += ran
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self._write()

    def close(self) -> None:
        """Write the final counters."""
        self._write()

    def _write(self) -> None:
        aside = self.path.with_name(self.path.name + ".tmp")
        try:
            aside.write_text(f"{self.loaded} {self.ran} {self.total_ops}\n")
            os.replace(aside, self.path)
        except OSError:
            pass  # the launcher's directory is gone (it is ending): nothing to tell


def read_reports(directory: str | Path) -> tuple[int, int, int, int]:
    """Every rank's latest `RankReport` in ``directory``, summed: bytes loaded, ops run,
    ops in all, and how many ranks have reported (a file not yet whole is skipped)."""
    loaded = ran = total = ranks = 0
    try:
        paths = [p for p in Path(directory).iterdir() if not p.name.endswith(".tmp")]
    except OSError:
        return 0, 0, 0, 0
    for path in paths:
        try:
            fields = [int(x) for x in path.read_text().split()]
        except (OSError, ValueError):
            continue
        if len(fields) != 3:
            continue
        loaded, ran, total = loaded + fields[0], ran + fields[1], total + fields[2]
        ranks += 1
    return loaded, ran, total, ranks


_ACTIVE: ContextVar[_Sink | None] = ContextVar("tp_progress", default=None)


def tick(loaded: int = 0, ran: int = 0) -> None:
    """Report to the active `Progress` or `RankReport`, if any (a no-op otherwise)."""
    sink = _ACTIVE.get()
    if sink is not None:
        sink.tick(loaded, ran)


@contextmanager
def reporting(stream: TextIO, total_ops: int = 0, **options: object) -> Iterator[Progress]:
    """A `Progress` on ``stream`` active for the block (`tick` reaches it), closed after.
    Its delay is ``after=``, else `delay` (``$TP_PROGRESS_AFTER``, else 2 s)."""
    options.setdefault("after", delay())
    progress = Progress(stream, total_ops, **options)  # type: ignore[arg-type]
    token = _ACTIVE.set(progress)
    try:
        yield progress
    finally:
        _ACTIVE.reset(token)
        progress.close()


@contextmanager
def rank_reporting(rank: int, total_ops: int, stream: TextIO) -> Iterator[None]:
    """What MPI rank ``rank`` (running ``total_ops`` linalg ops) reports for the block: with
    ``$TP_PROGRESS_DIR`` (set by ``tp-run --mpi``) a `RankReport` in that directory, named by
    the rank; otherwise on rank 0 a `Progress` on ``stream`` (drawn when `shows`, cleared at
    the end), on any other rank nothing."""
    directory = os.environ.get(DIR_ENV)
    sink: RankReport | Progress | None = None
    if directory:
        sink = RankReport(Path(directory) / str(rank), total_ops)
    elif rank == 0:
        sink = Progress(stream, total_ops, after=delay(), clear=True)
    token = _ACTIVE.set(sink)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        if sink is not None:
            sink.close()


@contextmanager
def watching(stream: TextIO, directory: str | Path, ranks: int) -> Iterator[Callable[[], None]]:
    """The launcher's side of `rank_reporting`: yields ``poll``, to be called while the
    ranks run, which draws on ``stream`` the sum of their reports in ``directory`` (once
    ``$TP_PROGRESS_AFTER`` seconds have passed, if `shows`); at the end a last poll draws
    the final counters, then the line is cleared."""
    progress = Progress(stream, after=delay(), clear=True, label=f"tp-run ({ranks} ranks)")

    def poll(force: bool = False) -> None:
        loaded, ran, total, reported = read_reports(directory)
        if reported:
            progress.set(loaded, ran, total, force)

    try:
        yield poll
        poll(force=True)
    finally:
        progress.close()
