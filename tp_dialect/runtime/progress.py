"""Progress of a long load or run, on a terminal only.

Invariant: nothing is written unless the stream is a terminal and the work has already taken
``after`` seconds (2 by default): a short run, a pipe or a file sees no progress at all. Then
one line is rewritten in place (``\\r``) at most every ``every`` seconds — bytes read from
the checkpoint, linalg ops run of the program's total — and ended with a newline when the work
is done. The loader and the interpreter report through `tick` to whatever `reporting` made
active in this context; with none active, `tick` does nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO


class Progress:
    """Counters of one load-and-run, shown on ``stream`` when it is a terminal."""

    def __init__(
        self,
        stream: TextIO,
        total_ops: int = 0,
        after: float = 2.0,
        every: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.live = bool(getattr(stream, "isatty", lambda: False)())
        self.total_ops = total_ops
        self.after, self.every, self.clock = after, every, clock
        self.start = clock()
        self.last = -float("inf")
        self.loaded = 0
        self.ran = 0
        self.shown = False

    def tick(self, loaded: int = 0, ran: int = 0) -> None:
        """Count ``loaded`` bytes read and ``ran`` ops run; redraw the line if it is time."""
        self.loaded += loaded
        self.ran += ran
        if not self.live:
            return
        now = self.clock()
        if now - self.start < self.after or now - self.last < self.every:
            return
        self.last = now
        line = f"tp-run: {self.loaded / 1e9:.2f} GB loaded"
        if self.ran:
            line += f", {self.ran}/{self.total_ops or '?'} linalg ops run"
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """End the line if one was drawn, so what follows starts on its own."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


_ACTIVE: ContextVar[Progress | None] = ContextVar("tp_progress", default=None)


def tick(loaded: int = 0, ran: int = 0) -> None:
    """Report to the active `Progress`, if any (a no-op otherwise)."""
    progress = _ACTIVE.get()
    if progress is not None:
        progress.tick(loaded, ran)


AFTER_ENV = "TP_PROGRESS_AFTER"  # seconds before progress shows (tests set 0)


@contextmanager
def reporting(stream: TextIO, total_ops: int = 0, **options: object) -> Iterator[Progress]:
    """A `Progress` on ``stream`` active for the block (`tick` reaches it), closed after.
    Its delay is ``after=``, else ``$TP_PROGRESS_AFTER``, else 2 s."""
    if "after" not in options and os.environ.get(AFTER_ENV):
        try:
            options["after"] = float(os.environ[AFTER_ENV])
        except ValueError:
            pass  # not a number: the default delay
    progress = Progress(stream, total_ops, **options)  # type: ignore[arg-type]
    token = _ACTIVE.set(progress)
    try:
        yield progress
    finally:
        _ACTIVE.reset(token)
        progress.close()
