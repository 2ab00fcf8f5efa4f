"""What the harness runs and what it saw: a `Case` (one tool invocation over its own files)
and its `Outcome` (one of four verdicts, with a signature that names the failure class).

A case's argv names its files as ``@{name}``; `materialise` writes them into a directory and
returns the argv with real paths. A case is saved as a folder holding ``case.json`` and its
files, and loaded back bit for bit (`save_case`, `load_case`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# The four verdicts, in the order the summary prints them.
CLEAN = "clean"  # exit 1 with one located (or tool-named) error line
SUCCESS = "success"  # exit 0
INTERNAL = "internal"  # anything else: "internal error", a traceback, another exit code
HANG = "hang"  # over the per-input time limit
VERDICTS: tuple[str, ...] = (CLEAN, SUCCESS, INTERNAL, HANG)
FAILURES: frozenset[str] = frozenset({INTERNAL, HANG})

TOOLS: tuple[str, ...] = ("tp-opt", "tp-run")

_PLACEHOLDER = re.compile(r"@\{([A-Za-z0-9_.\-/]+)\}")


@dataclass(frozen=True)
class Case:
    """One tool invocation: ``tool`` run with ``argv`` over ``files`` (name -> bytes; a
    ``@{name}`` in argv is that file's path once materialised). ``origin`` and
    ``mutations`` say where it came from; neither changes how it runs."""

    tool: str
    argv: tuple[str, ...]
    files: Mapping[str, bytes] = field(default_factory=dict)
    origin: str = ""
    mutations: tuple[str, ...] = ()

    def with_file(self, name: str, data: bytes) -> Case:
        """The same case with file ``name`` replaced by ``data``."""
        return Case(self.tool, self.argv, {**self.files, name: data}, self.origin, self.mutations)

    def with_argv(self, argv: tuple[str, ...]) -> Case:
        """The same case with ``argv`` in place of its own."""
        return Case(self.tool, argv, self.files, self.origin, self.mutations)

    def command(self) -> str:
        """The invocation as a shell-like line, files named as ``@{name}`` (for messages)."""
        return " ".join([self.tool, *(_quote(a) for a in self.argv)])


@dataclass(frozen=True)
class Outcome:
    """What one run of a case did: its ``verdict`` (one of `VERDICTS`), a ``signature`` that
    is equal for two runs failing the same way (empty for clean errors and successes), the
    tool's message (its error line, or what went wrong), its exit code (None for a hang or a
    dead worker) and the seconds it took."""

    verdict: str
    signature: tuple[str, ...] = ()
    message: str = ""
    exit_code: int | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        """True exactly for an internal error or a hang."""
        return self.verdict in FAILURES


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@{}.,=/:+\-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def materialise(case: Case, directory: Path) -> list[str]:
    """Guarantees every file of ``case`` is written under ``directory`` (sub-folders made as
    needed) and returns its argv with each ``@{name}`` replaced by ``directory/name``; a
    placeholder naming no file still becomes a path (a file the tool will not find)."""
    for name, data in case.files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return [_PLACEHOLDER.sub(lambda m: str(directory / m.group(1)), a) for a in case.argv]


def save_case(case: Case, directory: Path, found: Mapping[str, object]) -> None:
    """Guarantees ``directory`` holds ``case.json`` (tool, argv, file names, origin,
    mutations and ``found``: what the harness saw) and each of the case's files beside it,
    so that `load_case` gives back an equal case."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    meta = {
        "tool": case.tool,
        "argv": list(case.argv),
        "files": sorted(case.files),
        "origin": case.origin,
        "mutations": list(case.mutations),
        "found": dict(found),
    }
    (directory / "case.json").write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")


def load_case(directory: Path) -> tuple[Case, dict[str, object]]:
    """The case saved in ``directory`` by `save_case`, and what was recorded as found."""
    meta = json.loads((directory / "case.json").read_text())
    files = {name: (directory / name).read_bytes() for name in meta["files"]}
    case = Case(
        tool=meta["tool"],
        argv=tuple(meta["argv"]),
        files=files,
        origin=meta.get("origin", ""),
        mutations=tuple(meta.get("mutations", ())),
    )
    return case, dict(meta.get("found", {}))
