"""How deep a text nests its brackets, measured before a recursive parser reads it.

xDSL's parser and Python's json module recurse once per bracket level, and Python's stack
ends near 1000 frames: xDSL spends up to ten frames a level (a dictionary attribute runs out
at 96 levels, an array at 139, nested regions at 96 to 139). A text nested deeper than
`MAX_NESTING` is refused at the bracket that crosses it, so every text within the bound is
parsed, verified and printed on Python's default stack — the bound is a property of the
input, not a recursion limit raised. tp's own programs nest at most 8 deep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

MAX_NESTING = 64
"""The most brackets — ``(``, ``[``, ``{``, ``<`` in MLIR; ``[``, ``{`` in JSON — open at
once that tp reads."""


@dataclass(frozen=True)
class Brackets:
    """A syntax's brackets, and what is not a bracket although it looks like one (strings,
    comments, MLIR's ``->`` arrow)."""

    opening: str
    closing: str
    skipped: re.Pattern[str]

    def tokens(self) -> re.Pattern[str]:
        """Skipped spans and single brackets, in the order they occur."""
        brackets = re.escape(self.opening + self.closing)
        return re.compile(f"{self.skipped.pattern}|[{brackets}]")


MLIR = Brackets(
    "([{<",
    ")]}>",
    # A string (possessive: linear on an unterminated one; an escape takes any character,
    # a line break too), a comment, an arrow and an affine constraint's `>=`: none opens or
    # closes anything.
    re.compile(r'"(?:[^"\\\n]++|\\[\s\S])*+"|//[^\n]*+|->|>='),
)
JSON = Brackets("[{", "]}", re.compile(r'"(?:[^"\\]++|\\[\s\S])*+"'))


def deepest(text: str, syntax: Brackets) -> int:
    """How many brackets ``text`` has open at once at most (strings and comments not
    counted). Linear, and about ten milliseconds a megabyte: the brackets are kept (bytes
    operations) and their depths summed with numpy."""
    kept = syntax.skipped.sub("", text).encode("utf-8", "surrogatepass")
    brackets = (syntax.opening + syntax.closing).encode()
    others = bytes(c for c in range(256) if c not in brackets)
    # each opening bracket a byte 1, each closing one 255 (-1 as int8): the running sum is
    # the depth after each bracket
    steps = bytes([1] * len(syntax.opening) + [255] * len(syntax.closing))
    depths = kept.translate(None, others).translate(bytes.maketrans(brackets, steps))
    if not depths:
        return 0
    return max(0, int(np.cumsum(np.frombuffer(depths, np.int8), dtype=np.int64).max()))


def first_too_deep(text: str, syntax: Brackets, bound: int = MAX_NESTING) -> int | None:
    """The index in ``text`` of the first opening bracket that ``bound`` brackets are
    already open around (strings and comments not counted), or None if there is none.
    Linear: only a text `deepest` finds crossing the bound is walked again, to say where."""
    if deepest(text, syntax) <= bound:
        return None
    depth = 0
    for token in syntax.tokens().finditer(text):
        char = token.group()
        if len(char) == 1 and char in syntax.opening:
            depth += 1
            if depth > bound:
                return token.start()
        elif len(char) == 1 and char in syntax.closing:
            depth -= 1
    return None  # not reached: both walks count the same brackets


def line_and_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of ``text[index]``."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def json_too_deep(text: str) -> str | None:
    """Why the JSON ``text`` is refused before Python's json module recurses through it —
    ``nested deeper than 64 at line L column C`` — or None (tp's JSON files, a plan or a
    machine, nest two or three deep)."""
    at = first_too_deep(text, JSON)
    if at is None:
        return None
    line, column = line_and_column(text, at)
    return f"nested deeper than {MAX_NESTING} at line {line} column {column}"
