"""A fuzz campaign: inputs ``start .. start+inputs-1`` of seed ``seed`` run on worker
processes, every internal error and hang grouped by signature, the first of each new class
minimised and saved as a reproducer, and a summary.

`campaign` returns a `Report`; `Report.summary` is the printed summary, whose first line is
``fuzz: N inputs in T s (...): C clean errors, S successes, I internal errors (K classes),
H hangs (L classes)``. The run has failed exactly when ``I + H > 0``.
"""

from __future__ import annotations

import collections
import functools
import json
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fuzz.case import CLEAN, HANG, INTERNAL, SUCCESS, VERDICTS, Case, Outcome
from fuzz.cases import TP_RUN_SHARE, make_case
from fuzz.corpus import build_corpus
from fuzz.pool import Pool, Reply, Settings, Task
from fuzz.reproducers import known_signatures, save_reproducer


@dataclass
class FailureClass:
    """Every input that failed with one signature: how many, the first one's index,
    command, origin, mutations and message, and its reproducer (folder, whether it was
    already known, and how far it was minimised)."""

    signature: tuple[str, ...]
    verdict: str
    count: int
    first_index: int
    command: str
    origin: str
    mutations: tuple[str, ...]
    message: str
    reproducer: str | None = None
    known: bool = False
    minimised_runs: int = 0
    minimised_size: int = 0
    original_size: int = 0


@dataclass
class Report:
    """What a campaign saw: counts by verdict and by tool, the failure classes, the time,
    whether the time limit stopped it early, and corpus problems."""

    seed: int
    start: int
    requested: int
    inputs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's and its workers' CPU time (user + system)
    workers: int = 2
    timeout: float = 5.0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    by_tool: dict[str, dict[str, int]] = field(default_factory=dict)  # tool, tool + source
    seconds_by_tool: dict[str, float] = field(default_factory=dict)  # tools' own run time
    classes: dict[tuple[str, ...], FailureClass] = field(default_factory=dict)
    stopped_early: bool = False
    problems: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """True exactly when some input was an internal error or a hang."""
        return self.counts[INTERNAL] + self.counts[HANG] > 0

    def headline(self) -> str:
        """The summary's first line: inputs, each verdict's count, failure classes, time."""
        internal = sum(c.verdict == INTERNAL for c in self.classes.values())
        hangs = sum(c.verdict == HANG for c in self.classes.values())
        return (
            f"fuzz: {self.inputs:,} inputs in {self.seconds:.1f} s ({self.cpu_seconds:.0f} CPU-s; "
            f"seed {self.seed}, "
            f"inputs {self.start}..{self.start + self.inputs - 1}, {self.workers} worker(s), "
            f"limit {self.timeout:g} s): {self.counts[CLEAN]:,} clean errors, "
            f"{self.counts[SUCCESS]:,} successes, {self.counts[INTERNAL]:,} internal errors "
            f"({internal} classes), {self.counts[HANG]:,} hangs ({hangs} classes)"
        )

    def summary(self) -> str:
        """The headline, counts per tool, and one paragraph per failure class (count,
        signature, message, reproducer, first input's command)."""
        lines = [self.headline()]
        if self.stopped_early:
            lines.append(
                f"fuzz: stopped at the time limit after {self.inputs:,} of "
                f"{self.requested:,} inputs"
            )
        for tool, counts in sorted(self.by_tool.items()):
            parts = ", ".join(f"{counts.get(v, 0):,} {v}" for v in VERDICTS)
            n = sum(counts.values())
            mean = self.seconds_by_tool.get(tool, 0.0) / max(n, 1) * 1e3
            lines.append(f"  {tool}: {n:,} inputs ({mean:.0f} ms each): {parts}")
        for problem in self.problems:
            lines.append(f"  corpus: {problem}")
        ordered = sorted(self.classes.values(), key=lambda c: (-c.count, c.signature))
        for cls in ordered:
            lines.append(f"{cls.verdict.upper()} x{cls.count}: {' | '.join(cls.signature[1:])}")
            lines.append(f"    message: {cls.message}")
            if cls.reproducer:
                how = "known" if cls.known else "new"
                size = (
                    f", minimised {cls.original_size} -> {cls.minimised_size} bytes in "
                    f"{cls.minimised_runs} runs"
                    if cls.minimised_runs > 0
                    else ""
                )
                lines.append(f"    reproducer ({how}{size}): {cls.reproducer}")
            lines.append(f"    first: input {cls.first_index} from {cls.origin}: {cls.command}")
            if cls.mutations:
                lines.append(f"    mutations: {'; '.join(cls.mutations)}")
        verdict = "FAILED" if self.failed else "ok"
        lines.append(f"fuzz: {verdict}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        """The report as JSON-able data."""
        data = asdict(self)
        data["classes"] = [asdict(c) for c in self.classes.values()]
        data["headline"] = self.headline()
        return data


def _size(case: Case) -> int:
    return sum(len(d) for d in case.files.values())


def campaign(
    inputs: int,
    seed: int = 0,
    start: int = 0,
    workers: int = 2,
    timeout: float = 5.0,
    minutes: float | None = None,
    reproducers: Path | None = None,
    known_from: Path | None = None,
    minimise_seconds: float = 30.0,
    memory: int = 4 << 30,
    tp_run_share: float = TP_RUN_SHARE,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Guarantees inputs ``start .. start+inputs-1`` of campaign ``seed`` were each run
    once (fewer if ``minutes`` ran out first: `Report.stopped_early`), classified, and
    counted; that for each failure class not already in ``known_from`` (a reproducers
    folder) the first input was minimised (at most ``minimise_seconds``; 0: saved as
    found) and saved under ``reproducers`` (None: not saved). ``progress`` is told how it
    goes every 15 s."""
    t0 = time.monotonic()
    cpu0 = _cpu()
    corpus = build_corpus()
    known = known_signatures(known_from) if known_from is not None else {}
    make = functools.partial(make_case, corpus, seed, tp_run_share=tp_run_share)
    programs = tuple(s.text.encode() for s in corpus.run_seeds)
    settings = Settings(make, timeout, memory, {"program.mlir": programs})
    report = Report(seed, start, inputs, workers=workers, timeout=timeout)
    report.problems = corpus.problems
    deadline = t0 + minutes * 60 if minutes else float("inf")
    next_index, end = start, start + inputs
    to_minimise: collections.deque[tuple[Case, Outcome]] = collections.deque()
    shown = t0
    with Pool(workers, settings) as pool:
        try:
            while True:
                while pool.idle():
                    if to_minimise:
                        case, outcome = to_minimise.popleft()
                        pool.submit(("minimise", case, outcome, minimise_seconds))
                    elif next_index < end and time.monotonic() < deadline:
                        pool.submit(("case", next_index))
                        next_index += 1
                    else:
                        break
                if not pool.busy():
                    break
                for _, reply in pool.collect(1.0):
                    if reply[0] == "case":
                        _, index, outcome, case, group = reply
                        _count(
                            report,
                            index,
                            outcome,
                            case,
                            group,
                            known,
                            to_minimise,
                            minimise_seconds,
                        )
                        if outcome.failed and reproducers is not None and minimise_seconds <= 0:
                            _save(report, reproducers, case, outcome, 0)
                    elif reply[0] == "minimise":
                        _, small, outcome, tried = reply
                        if reproducers is not None:
                            _save(report, reproducers, small, outcome, tried)
                if progress and time.monotonic() - shown > 15:
                    shown = time.monotonic()
                    progress(
                        f"fuzz: {report.inputs:,}/{inputs:,} inputs, {shown - t0:.0f} s, "
                        f"{report.counts[INTERNAL]} internal, {report.counts[HANG]} hangs"
                    )
        except KeyboardInterrupt:  # ^C: the summary of what ran so far
            print("fuzz: interrupted", file=sys.stderr)
    report.stopped_early = report.inputs < inputs
    report.seconds = time.monotonic() - t0
    report.cpu_seconds = _cpu() - cpu0
    return report


def _cpu() -> float:
    """CPU seconds used so far by this process and its finished (joined) children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _count(
    report: Report,
    index: int,
    outcome: Outcome,
    case: Case | None,
    group: tuple[str, str],
    known: dict[tuple[str, ...], Path],
    to_minimise: collections.deque[tuple[Case, Outcome]],
    minimise_seconds: float,
) -> None:
    """One input's outcome counted; the first of a new failure class queued for
    minimisation (or linked to the reproducer that already has it)."""
    report.inputs += 1
    report.counts[outcome.verdict] += 1
    for key in (group[0], f"{group[0]} {group[1]}"):
        tally = report.by_tool.setdefault(key, dict.fromkeys(VERDICTS, 0))
        tally[outcome.verdict] += 1
        report.seconds_by_tool[key] = report.seconds_by_tool.get(key, 0.0) + outcome.seconds
    if not outcome.failed or case is None:
        return
    cls = report.classes.get(outcome.signature)
    if cls is not None:
        cls.count += 1
        return
    cls = FailureClass(
        outcome.signature,
        outcome.verdict,
        1,
        index,
        case.command(),
        case.origin,
        case.mutations,
        outcome.message,
        original_size=_size(case),
    )
    report.classes[outcome.signature] = cls
    if outcome.signature in known:
        cls.reproducer, cls.known = str(known[outcome.signature]), True
    elif minimise_seconds > 0:
        to_minimise.append((case, outcome))


def _save(report: Report, folder: Path, case: Case, outcome: Outcome, tried: int) -> None:
    cls = report.classes.get(outcome.signature)
    if cls is None or cls.known:
        return
    found = {
        "verdict": outcome.verdict,
        "message": outcome.message,
        "seed": report.seed,
        "index": cls.first_index,
        "first_command": cls.command,
        "first_message": cls.message,
    }
    path = save_reproducer(folder, case, outcome.signature, found)
    cls.reproducer = str(path)
    cls.minimised_runs = tried
    cls.minimised_size = _size(case)


def reminimise(
    folder: Path,
    seconds: float = 120.0,
    workers: int = 2,
    timeout: float = 5.0,
    memory: int = 4 << 30,
    say_: Callable[[str], None] | None = None,
) -> list[tuple[Path, int, int]]:
    """Guarantees every reproducer in ``folder`` that still fails as it was found (same
    verdict and signature) was minimised again for at most ``seconds`` (flags, a smaller
    program, lines, tokens, ``.npz`` entries) and rewritten when that made it smaller;
    returns (folder, bytes before, bytes after) for each one rewritten."""
    from fuzz.case import load_case
    from fuzz.reproducers import cases_in

    corpus = build_corpus()
    programs = tuple(s.text.encode() for s in corpus.run_seeds)

    def no_index(index: int) -> Case:
        raise AssertionError("reminimise builds no case by index")

    todo = []
    for path in cases_in(folder):
        case, found = load_case(path)
        signature = tuple(str(x) for x in found.get("signature", ()))
        if signature:
            todo.append((path, case, found, Outcome(str(found.get("verdict")), signature)))
    done: list[tuple[Path, int, int]] = []
    settings = Settings(no_index, timeout, memory, {"program.mlir": programs})
    with Pool(workers, settings) as pool:
        still = [
            t
            for t, seen in zip(todo, _all(pool, [("run", t[1]) for t in todo]), strict=True)
            if seen[2].verdict == t[3].verdict and seen[2].signature == t[3].signature
        ]
        tasks = [("minimise", case, outcome, seconds) for _, case, _, outcome in still]
        for (path, case, found, _), reply in zip(still, _all(pool, tasks), strict=True):
            _, small, outcome, tried = reply
            before, after = _size(case), _size(small)
            if tried > 0 and after < before:
                for entry in sorted(path.rglob("*"), reverse=True):
                    entry.unlink() if not entry.is_dir() else entry.rmdir()
                save_reproducer(path.parent, small, outcome.signature, found)
                done.append((path, before, after))
            if say_:
                say_(f"fuzz: {path.name}: {before} -> {after} bytes ({tried} runs)")
    return done


def _all(pool: Pool, tasks: list[Task]) -> list[Reply]:
    """Every task's reply, in the tasks' order."""
    replies: dict[int, Reply] = {}
    next_task = 0
    slots: dict[int, int] = {}
    while len(replies) < len(tasks):
        while next_task < len(tasks) and pool.idle():
            slots[id(tasks[next_task])] = next_task
            pool.submit(tasks[next_task])
            next_task += 1
        for task, reply in pool.collect(1.0):
            replies[slots.pop(id(task))] = reply
    return [replies[i] for i in range(len(tasks))]


def write_json(report: Report, path: Path) -> None:
    """Guarantees ``path`` holds the report as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_json(), indent=1, default=list) + "\n")


def say(text: str) -> None:
    """Progress to stderr."""
    print(text, file=sys.stderr, flush=True)
