"""What every tp tool shares: user-facing errors, exit codes, and outputs written whole."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from tp_dialect.errors import TpError
from tp_dialect.runtime.files import OutputError, check_output, write_whole


class UserError(TpError):
    """A one-line error for the user (no location): bad flags, missing files, bad data."""


class LocatedError(TpError):
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
    except MemoryError as err:  # the host's limit, not a bug: what failed, in one line
        why = f": {err}" if str(err) else ""
        print(f"{name}: error: out of memory{why}", file=sys.stderr)
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


class ToolParser(argparse.ArgumentParser):
    """An argparse parser whose every error is one line — ``tool: error: ...``, raised as a
    UserError — an unknown flag naming the closest known one ("did you mean"), and that
    takes a flag only spelled whole (no abbreviations: ``--tp-relo`` is not ``--tp-relocate``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        flags = [e for e in extras if e.startswith("-") and e != "-"]
        if flags:
            self.error(f"unknown flag {flags[0]}{self.suggestion(flags[0])}")
        if extras:
            self.error(f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(extras)}")
        return parsed

    def suggestion(self, flag: str) -> str:
        """`` (did you mean --x?)`` for the known flag ``flag`` most likely misspells — the
        only one it begins, else the closest by `difflib` — or nothing."""
        typed = flag.split("=", 1)[0]
        known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        begun = [k for k in known if k.startswith(typed)]
        close = begun if len(begun) == 1 else difflib.get_close_matches(typed, known, 1, 0.7)
        return f" (did you mean {close[0]}?)" if close else ""

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


def adopt(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` — one a library built (xdsl-opt's) — a `ToolParser`: it answers as
    one from now on, errors and abbreviations alike."""
    parser.__class__ = ToolParser
    parser.allow_abbrev = False


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
