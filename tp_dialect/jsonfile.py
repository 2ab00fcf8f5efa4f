"""tp's small JSON files — a machine, a plan — read within bounds: at most `MAX_JSON_BYTES`,
never waiting on a FIFO, nested at most `MAX_NESTING` deep, each key of an object stated once.

A plan or a machine file is a few kilobytes (tp's largest, a model config holding its
``base_model_tp_plan``, about 10 KB). Anything else given where one is expected — ``/dev/zero``,
a FIFO no one writes, a multi-gigabyte file — is refused in bounded time and memory, in one
line naming the file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable

from tp_dialect.nesting import json_too_deep

MAX_JSON_BYTES = 1 << 20
"""The largest machine or plan file tp reads, 1 MiB: a hundred times a model config's size."""


MAX_DIGITS = 100
"""The most digits a whole number in a machine or plan file has (1e24, the largest figure a
machine takes, has 25)."""


def read_json_text(path: str, what: str, error: Callable[[str], Exception]) -> str:
    """The text of the ``what`` file at ``path`` — a regular file, a pipe or a device, read no
    further than `MAX_JSON_BYTES` (a regular file's size checked before it is read) — or
    ``error('cannot read <what> '<path>': why')``. A FIFO is opened without waiting for a
    writer, and one no one writes is refused as having nothing to read."""

    def refuse(why: str) -> Exception:
        return error(f"cannot read {what} '{path}': {why}")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO: no wait for a writer
    except OSError as err:
        raise refuse(err.strerror or str(err)) from None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise refuse("a directory")
    with os.fdopen(fd, "rb") as f:
        regular = stat.S_ISREG(info.st_mode)
        if regular and info.st_size > MAX_JSON_BYTES:
            raise refuse(_TOO_LARGE)
        os.set_blocking(fd, True)  # a pipe with a writer: its data, as it comes
        try:
            data = f.read(MAX_JSON_BYTES + 1)
        except OSError as err:
            raise refuse(err.strerror or str(err)) from None
    if len(data) > MAX_JSON_BYTES:
        raise refuse(_TOO_LARGE)
    if not data and stat.S_ISFIFO(info.st_mode):
        raise refuse("nothing to read (a FIFO no one writes?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise refuse(f"not UTF-8 text (byte {err.start})") from None


_TOO_LARGE = (
    f"larger than {MAX_JSON_BYTES >> 20} MiB: tp reads machine and plan files of at most "
    f"{MAX_JSON_BYTES} bytes"
)


def parse_json(
    text: str, source: str, holds: str, each: str, error: Callable[[str], Exception]
) -> object:
    """The JSON value in ``text`` (``source`` names it in errors, ``holds`` says what it
    holds), or ``error(...)``: nested deeper than `MAX_NESTING` (before Python's json module
    recurses), not JSON, a whole number of more than `MAX_DIGITS` digits, or an object
    stating a key twice — ``'key' is given twice: state
    each <each> once`` (JSON keeps the last of two, silently)."""
    deep = json_too_deep(text)
    if deep is not None:
        raise error(f"{source}: {deep}: {holds}")

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        seen: dict[str, object] = {}
        for key, value in pairs:
            if key in seen:
                raise error(f"{source}: '{key}' is given twice: state each {each} once")
            seen[key] = value
        return seen

    def whole(digits: str) -> int:
        # Python refuses to convert more than 4300 digits (a ValueError of its own); no
        # figure of a machine or plan needs more than a few dozen.
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise error(f"{source}: a whole number {len(digits)} digits long: at most {MAX_DIGITS}")
        return int(digits)

    try:
        return json.loads(text, object_pairs_hook=unique, parse_int=whole)
    except (json.JSONDecodeError, RecursionError) as err:
        raise error(f"{source}: not JSON: {err}") from None
