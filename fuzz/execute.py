"""Running a case in this process and classifying what the tool did.

`execute` calls the tool's ``main(argv)`` (tp-opt's, tp-run's) with stdout, stderr and stdin
replaced, under a SIGALRM time limit, and `classify` turns exit code and output into one
of four verdicts:

* **clean** — exit 1 and exactly one error line, either located
  (``file:line:col: error: ...``, or ``file: error: ...``) or the tool's own
  (``tp-opt: error: ...``), with no "internal error" and no "Traceback" anywhere;
* **success** — exit 0, no "internal error", no "Traceback";
* **internal** — anything else: "internal error" or a traceback in the output, an exception
  escaping ``main``, an exit code other than 0 and 1, exit 1 without exactly one error line;
* **hang** — still running at the time limit.

An internal error or a hang gets a signature: the exception's type and the place in tp (and
in the library below it) where it was raised or where the time ran out, found by running the
case once more with ``TP_DEBUG=1`` (the tools then let the exception through).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType, TracebackType

from fuzz.case import CLEAN, HANG, INTERNAL, SUCCESS, Case, Outcome, materialise

REPO = Path(__file__).resolve().parents[1]

ToolMain = Callable[[Sequence[str] | None], int]


def _tp_opt(argv: Sequence[str] | None) -> int:
    from tp_dialect.tools.tp_opt import main

    return main(argv)


def _tp_run(argv: Sequence[str] | None) -> int:
    from tp_dialect.tools.tp_run import main

    return main(argv)


# Tool name -> main. Tests may add their own (before workers start).
TOOLS: dict[str, ToolMain] = {"tp-opt": _tp_opt, "tp-run": _tp_run}

_ERROR_LINE = re.compile(r"^(?:\S[^\n]*?:\d+:\d+|[^\s:]+): error: \S")


def cache_plugin_lookup() -> None:
    """Guarantees xDSL's scan of the installed ``xdsl.universe`` plugins runs once in this
    process: every later ``Universe.get_multiverse()`` returns a copy of the first answer.
    Installed entry points cannot change while a campaign runs, and the scan is most of a
    tool's start-up (about half of an in-process tp-opt run on a small input)."""
    from xdsl.universe import Universe

    if getattr(Universe.get_multiverse, "_tp_fuzz_cached", False):
        return
    scan = Universe.get_multiverse
    first: list[Universe] = []

    def cached() -> Universe:
        if not first:
            first.append(scan())
        u = first[0]
        return Universe(
            all_dialects=dict(u.all_dialects),
            all_passes=dict(u.all_passes),
            all_targets=dict(u.all_targets),
            all_frontends=dict(u.all_frontends),
        )

    cached._tp_fuzz_cached = True  # type: ignore[attr-defined]
    Universe.get_multiverse = staticmethod(cached)  # type: ignore[method-assign]


class TimeLimit(BaseException):
    """Raised in the running tool by SIGALRM when its time is up (a BaseException, so the
    tools' ``except Exception`` does not swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Guarantees `TimeLimit` is raised in this (main) thread if the body runs longer than
    ``seconds``, and that no alarm is left pending afterwards."""

    def ring(signum: int, frame: FrameType | None) -> None:
        raise TimeLimit(f"over {seconds:g} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def classify(exit_code: int | None, out: str, err: str) -> str:
    """The verdict for a finished run (never `HANG`): `SUCCESS`, `CLEAN` or `INTERNAL` by
    the rules in this module's docstring."""
    text = out + err
    if "internal error" in text or "Traceback" in text:
        return INTERNAL
    if exit_code == 0:
        return SUCCESS
    if exit_code == 1:
        errors = [line for line in err.splitlines() if _ERROR_LINE.match(line)]
        return CLEAN if len(errors) == 1 else INTERNAL
    return INTERNAL


def message_of(err: str, out: str = "") -> str:
    """The line a user would read first: the first error line of ``err`` (internal or not),
    else its first line that is not a warning, else the last line of ``out``; at most 400
    characters."""
    lines = err.splitlines()
    for line in lines:
        if " error: " in line or line.startswith("Traceback"):
            return line[:400]
    for line in lines:
        if line.strip() and "warning:" not in line:
            return line[:400]
    rest = [line for line in out.splitlines() if line.strip()]
    if rest:
        return rest[-1][:400]
    return lines[0][:400] if lines else ""


def _relative(filename: str) -> str:
    """A frame's file relative to the repository or to site-packages, tp's passes and tools
    as ``passes/...`` and ``tools/...`` however tp is installed (stable names)."""
    path = filename.replace("\\", "/")
    root = str(REPO).replace("\\", "/") + "/"
    marker = "/site-packages/"
    if marker in path:
        path = path.split(marker, 1)[1]
    elif path.startswith(root):
        path = path[len(root) :]
    elif "/lib/python" in path:
        path = path.rsplit("/lib/python", 1)[-1].split("/", 1)[-1]
    for package in ("passes/", "tools/"):
        if path.startswith("tp_dialect/" + package):
            return path.removeprefix("tp_dialect/")
    return path


def _is_project(rel: str) -> bool:
    return rel.startswith(("tp_dialect/", "passes/", "tools/"))


def site_of(tb: TracebackType | None, hang: bool = False) -> tuple[str, ...]:
    """Where an exception was raised, as stable names: the deepest frame in tp's own code
    (``passes/relocate.py:_place``) and, when deeper, the deepest frame below it
    (``xdsl/utils/mlir_lexer.py:_lex_string_literal``). For a ``hang`` (where the alarm
    happened to strike varies), the outermost pass module that was running, else the
    parser or lexer, else the deepest tp module."""
    frames = [(_relative(f.filename), f.name) for f in traceback.extract_tb(tb)]
    frames = [f for f in frames if not f[0].startswith("fuzz/")]
    if not frames:
        return ("<no frame>",)
    if hang:
        for rel, _ in frames:
            if rel.startswith("passes/"):
                return (rel,)
        for rel, _ in frames:
            if "xdsl/utils/mlir_lexer" in rel or "xdsl/utils/lexer" in rel:
                return ("xdsl lexer",)
        for rel, _ in frames:
            if rel.startswith("xdsl/parser"):
                return ("xdsl parser",)
        ours = [rel for rel, _ in frames if _is_project(rel)]
        return (ours[-1] if ours else frames[-1][0],)
    ours = [i for i, (rel, _) in enumerate(frames) if _is_project(rel)]
    deepest = frames[-1]
    if not ours:
        return (f"{deepest[0]}:{deepest[1]}",)
    mine = frames[ours[-1]]
    site = (f"{mine[0]}:{mine[1]}",)
    if ours[-1] != len(frames) - 1:
        site += (f"{deepest[0]}:{deepest[1]}",)
    return site


def _call(
    main: ToolMain, argv: list[str], timeout: float
) -> tuple[int | None, str, str, BaseException | None, TracebackType | None]:
    """``main(argv)`` with captured output under the time limit: exit code (None when an
    exception escaped), stdout, stderr, and the exception with its traceback."""
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    caught: BaseException | None = None
    tb: TracebackType | None = None
    stdin = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            with time_limit(timeout):
                code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - a hang, or an escaped exception: both findings
        caught, tb = exc, exc.__traceback__
    finally:
        sys.stdin = stdin
    if code is not None and not isinstance(code, int):
        code = 1 if code else 0
    return code, out.getvalue(), err.getvalue(), caught, tb


@contextlib.contextmanager
def _debug(on: bool) -> Iterator[None]:
    old = os.environ.get("TP_DEBUG")
    if on:
        os.environ["TP_DEBUG"] = "1"
    else:
        os.environ.pop("TP_DEBUG", None)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TP_DEBUG", None)
        else:
            os.environ["TP_DEBUG"] = old


def execute(case: Case, workdir: Path, timeout: float) -> Outcome:
    """Guarantees the case's tool ran at most about ``timeout`` seconds in this process on a
    fresh copy of the case's files under ``workdir`` (emptied first), with the verdict and,
    for an internal error or a hang, its signature: ``(verdict, tool, exception type,
    site...)`` (`site_of`). Must run in the main thread (SIGALRM)."""
    main = TOOLS[case.tool]
    argv = _fresh(case, workdir)
    t0 = time.perf_counter()
    with _debug(False):
        code, out, err, exc, tb = _call(main, argv, timeout)
    seconds = time.perf_counter() - t0
    if isinstance(exc, TimeLimit):
        site = site_of(tb, hang=True)
        return Outcome(HANG, (HANG, case.tool, *site), f"over {timeout:g} s", None, seconds)
    if exc is not None:
        kind = type(exc).__name__
        message = f"exception escaped {case.tool}'s main: {kind}: {_first_line(exc)}"
        signature = (INTERNAL, case.tool, kind, *site_of(tb))
        return Outcome(INTERNAL, signature, message, None, seconds)
    verdict = classify(code, out, err)
    message = message_of(err, out)
    if verdict != INTERNAL:
        return Outcome(verdict, (), message, code, seconds)
    signature = _internal_signature(case, workdir, timeout, code, err)
    return Outcome(INTERNAL, signature, message, code, seconds)


def _internal_signature(
    case: Case, workdir: Path, timeout: float, code: int | None, err: str
) -> tuple[str, ...]:
    """Run again with ``TP_DEBUG=1``: the escaping exception's type and site; when nothing
    escapes, what the output shows (the exception type named after "internal error:", or
    the exit code)."""
    argv = _fresh(case, workdir)
    with _debug(True):
        _, _, _, exc, tb = _call(TOOLS[case.tool], argv, timeout)
    if exc is not None and not isinstance(exc, TimeLimit):
        return (INTERNAL, case.tool, type(exc).__name__, *site_of(tb))
    named = re.search(r"internal error: (\w+)", err)
    if named:
        return (INTERNAL, case.tool, named.group(1))
    if "Traceback" in err:
        return (INTERNAL, case.tool, "traceback")
    errors = sum(bool(_ERROR_LINE.match(line)) for line in err.splitlines())
    return (INTERNAL, case.tool, f"exit {code} with {errors} error line(s)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n")[0]
    return text[:300]


def _fresh(case: Case, workdir: Path) -> list[str]:
    """The case's files written into an emptied ``workdir``; its argv with real paths."""
    if workdir.exists():
        _empty(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    return materialise(case, workdir)


def _empty(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            _empty(entry)
            entry.rmdir()
        else:
            entry.unlink()
