"""Worker processes that run cases in-process, under a watchdog.

Each worker is a fork of this process (it inherits the corpus), limited in address space
(``RLIMIT_AS``: a runaway allocation is a MemoryError, not the machine's memory), with its
own scratch folder. It runs one task at a time under a SIGALRM limit (`fuzz.execute`); the
parent also gives each task a deadline, and a worker past it (stuck where Python cannot
interrupt it) is killed and replaced, the task reported as a hang. A worker that dies is
reported as an internal error ("worker died") and replaced.

Tasks are tuples: ``("case", index)`` builds and runs case ``index`` of the campaign;
``("run", case)`` runs a given case; ``("minimise", case, outcome, seconds)`` reduces a
failing case in the worker (`fuzz.minimise`).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import resource
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fuzz.case import HANG, INTERNAL, Case, Outcome

Task = tuple[Any, ...]
Reply = tuple[Any, ...]

GRACE = 5.0  # seconds the parent waits beyond a task's own limit before killing its worker
RECYCLE = 2000  # a worker is replaced after this many tasks (bounds any slow leak), and after
# a run the time limit interrupted or that ran out of memory


def group_of(case: Case) -> tuple[str, str]:
    """The tool and the kind of input a case is, for the summary's per-tool and per-source
    counts: ``("tp-opt", "lit")``, ``("tp-opt", "generated")``, ``("tp-run", "machine")``."""
    if case.tool == "tp-run":
        kind = case.mutations[0].split(":")[0] if case.mutations else "?"
        return case.tool, kind
    origin = case.origin
    if origin.startswith("lit_tests/"):
        return case.tool, "lit"
    if origin.startswith("gen:"):
        return case.tool, "generated"
    return case.tool, "example" if origin.startswith("examples/") else origin


@dataclass(frozen=True)
class Settings:
    """What every worker needs: how to build case ``i`` (``make``: index -> Case), the
    per-run time limit, the address-space limit (bytes; 0: none), and smaller files the
    minimiser may try in place of a case's (file name -> candidates)."""

    make: Callable[[int], Case]
    timeout: float = 5.0
    memory: int = 4 << 30
    substitutes: Mapping[str, tuple[bytes, ...]] = field(default_factory=dict)


def _limit_memory(limit: int) -> None:
    if limit <= 0:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _serve(conn: Connection, settings: Settings) -> None:
    """A worker's loop: receive a task, send its reply, until told to stop (None)."""
    from fuzz.execute import cache_plugin_lookup, execute
    from fuzz.minimise import minimise

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and stops us
    cache_plugin_lookup()
    _limit_memory(settings.memory)
    scratch = Path(tempfile.mkdtemp(prefix="tp-fuzz-"))
    work = scratch / "case"
    try:
        while True:
            task = conn.recv()
            if task is None:
                return
            kind = task[0]
            if kind == "case":
                case = settings.make(task[1])
                outcome = execute(case, work, settings.timeout)
                kept = case if outcome.failed else None
                conn.send(("case", task[1], outcome, kept, group_of(case)))
            elif kind == "run":
                conn.send(("run", task[1], execute(task[1], work, settings.timeout)))
            elif kind == "minimise":
                _, case, outcome, seconds = task
                small, seen, tried = minimise(
                    case,
                    outcome,
                    lambda c: execute(c, work, settings.timeout),
                    seconds,
                    settings.substitutes,
                )
                conn.send(("minimise", small, seen, tried))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _unsettling(reply: Reply) -> bool:
    """Whether a reply's run may have left its worker's state in doubt (a run interrupted
    by the time limit, a MemoryError): such a worker is replaced."""
    outcome = reply[2] if reply[0] in ("case", "run") else None
    if not isinstance(outcome, Outcome):
        return False
    return outcome.verdict == HANG or "MemoryError" in outcome.signature


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    task: Task | None = None
    deadline: float = 0.0
    done: int = 0


class Pool:
    """``size`` forked workers running tasks (see the module docstring) with a watchdog.

    Use: `submit` a task to an idle worker (`idle`), then `collect` replies; every
    submitted task gets exactly one reply, from its worker or made up by the watchdog."""

    def __init__(self, size: int, settings: Settings) -> None:
        self.settings = settings
        self._ctx = multiprocessing.get_context("fork")
        self._workers = [self._start() for _ in range(max(1, size))]

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_serve, args=(child, self.settings), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent)

    def idle(self) -> int:
        """How many workers have no task."""
        return sum(w.task is None for w in self._workers)

    def busy(self) -> int:
        """How many workers are running a task."""
        return sum(w.task is not None for w in self._workers)

    def limit_of(self, task: Task) -> float:
        """How long the watchdog lets ``task`` run before killing its worker."""
        timeout = self.settings.timeout
        if task[0] == "minimise":
            # ddmin's last probe may start just before its budget ends; a probe that fails
            # internally is run twice (once more for its traceback).
            return float(task[3]) + 2 * timeout + 2 * GRACE
        return 2 * timeout + GRACE

    def submit(self, task: Task) -> None:
        """Guarantees ``task`` is running on an idle worker (there must be one)."""
        worker = next(w for w in self._workers if w.task is None)
        worker.conn.send(task)
        worker.task = task
        worker.deadline = time.monotonic() + self.limit_of(task)

    def collect(self, wait: float) -> list[tuple[Task, Reply]]:
        """Replies that arrived within ``wait`` seconds (possibly none), each with its task;
        a worker past its deadline is killed and its task answered as a hang, a dead one's
        as an internal error; both are replaced."""
        busy = [w for w in self._workers if w.task is not None]
        if not busy:
            return []
        now = time.monotonic()
        wait = max(0.0, min(wait, min(w.deadline for w in busy) - now))
        ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=wait)
        replies: list[tuple[Task, Reply]] = []
        for i, worker in enumerate(self._workers):
            if worker.task is None:
                continue
            task = worker.task
            if worker.conn in ready:
                try:
                    reply = worker.conn.recv()
                except (EOFError, OSError):
                    replies.append((task, self._dead(i, task)))
                    continue
                worker.task = None
                worker.done += 1
                replies.append((task, reply))
                if worker.done >= RECYCLE or _unsettling(reply):
                    self._replace(i)
            elif time.monotonic() > worker.deadline:
                replies.append((task, self._killed(i, task)))
        return replies

    def _made_up(self, task: Task, outcome: Outcome) -> Reply:
        if task[0] == "case":
            case = self.settings.make(task[1])
            return ("case", task[1], outcome, case, group_of(case))
        if task[0] == "run":
            return ("run", task[1], outcome)
        return ("minimise", task[1], task[2], -1)

    def _killed(self, i: int, task: Task) -> Reply:
        self._replace(i, kill=True)
        tool = self._tool(task)
        limit = self.limit_of(task)
        outcome = Outcome(HANG, (HANG, tool, "uninterruptible"), f"killed after {limit:g} s")
        return self._made_up(task, outcome)

    def _dead(self, i: int, task: Task) -> Reply:
        code = self._replace(i, kill=True)
        tool = self._tool(task)
        how = f"signal {-code}" if isinstance(code, int) and code < 0 else f"exit {code}"
        outcome = Outcome(INTERNAL, (INTERNAL, tool, "worker died", how), f"worker died ({how})")
        return self._made_up(task, outcome)

    def _tool(self, task: Task) -> str:
        if task[0] == "case":
            return self.settings.make(task[1]).tool
        return task[1].tool

    def _replace(self, i: int, kill: bool = False) -> int | None:
        """Worker ``i`` stopped (killed, or asked to stop) and replaced; its exit code."""
        old = self._workers[i]
        if kill:
            old.process.kill()
        else:
            try:
                old.conn.send(None)
            except OSError:
                old.process.kill()
        old.process.join(timeout=10)
        if old.process.is_alive():
            old.process.kill()
            old.process.join()
        exit_code = old.process.exitcode
        old.conn.close()
        self._workers[i] = self._start()
        return exit_code

    def close(self) -> None:
        """Guarantees every worker has stopped (asked to, then killed if it must be)."""
        for worker in self._workers:
            try:
                if worker.task is None:
                    worker.conn.send(None)
                else:
                    worker.process.kill()
            except OSError:
                pass
        for worker in self._workers:
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_isolated(case: Case, timeout: float = 5.0, memory: int = 4 << 30) -> Outcome:
    """Guarantees ``case`` ran once in a fresh forked worker (time, memory and crash
    guarded as in a campaign) and returns its outcome."""

    def no_index(index: int) -> Case:
        raise AssertionError("run_isolated builds no case by index")

    with Pool(1, Settings(no_index, timeout, memory)) as pool:
        pool.submit(("run", case))
        while True:
            for _, reply in pool.collect(3600.0):
                return reply[2]
