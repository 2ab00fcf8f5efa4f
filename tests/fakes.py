"""Stand-ins the progress tests share: a terminal that is a string, a clock set by hand."""

from __future__ import annotations

import io


class Terminal(io.StringIO):
    """A stream that says it is a terminal (progress draws only on one)."""

    def isatty(self) -> bool:
        return True


class Clock:
    """A clock that reads ``now``, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
