"""What every tp tool shares: user-facing errors, exit codes, and outputs written whole."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence

from tp_dialect.runtime.files import OutputError, check_output, write_whole


class UserError(Exception):
    """A one-line error for the user (no location): bad flags, missing files, bad data."""


class LocatedError(Exception):
    """An error about a place in a source file; its message is already ``file:line:col: ...``."""


def write_atomically(path: str, data: str | bytes) -> None:
    """``path`` holds ``data`` whole, or is left as it was; a device or FIFO is written
    through, never replaced (`files.write_whole`)."""
    try:
        write_whole(path, data)
    except OutputError as err:
        raise UserError(str(err)) from None


def check_writable(*paths: str | None) -> None:
    """Refuse, before any work, an output path that cannot be written (`files.check_output`).
    ``-`` and None are stdout / not asked."""
    for path in paths:
        if path is not None and path != "-":
            try:
                check_output(path)
            except OutputError as err:
                raise UserError(str(err)) from None


def write_output(path: str | None, text: str) -> None:
    """``text`` to ``path`` atomically, or to stdout when no path is given."""
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomically(path, text)


def run_tool(
    name: str,
    body: Callable[[Sequence[str] | None], int],
    argv: Sequence[str] | None,
    user_errors: tuple[type[BaseException], ...] = (),
) -> int:
    """Run a tool's ``body``: its code on success, 1 with a clear message on any error."""
    try:
        return body(argv)
    except SystemExit as exit_:
        # argparse exits 2 on a bad flag; every user error here is exit 1.
        return 1 if exit_.code == 2 else int(exit_.code or 0)
    except LocatedError as err:
        print(err, file=sys.stderr)
        return 1
    except (UserError, *user_errors) as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a bug in xDSL or tp, not the user's: one line still
        if os.environ.get("TP_DEBUG"):
            raise
        print(
            f"{name}: internal error: {type(err).__name__}: {err} "
            "(set TP_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


def at_least(
    low: float, kind: type[int] | type[float], strict: bool = False
) -> Callable[[str], float]:
    """An argparse type for a number: a finite ``kind`` not below ``low`` (``strict``: above it)."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: '{text}'") from None
        if not math.isfinite(value) or value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(
                f"{text} must be a finite number {'above' if strict else 'at least'} {low:g}"
            )
        return value

    return parse
