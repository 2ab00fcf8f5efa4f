"""Delta debugging: the smallest case (lines, then tokens, of each text file; then entries
of each ``.npz``; then flags) that still fails with the same signature, within a time budget.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from fuzz.case import Case, Outcome

T = TypeVar("T")


def ddmin(units: Sequence[T], fails: Callable[[list[T]], bool], deadline: float) -> list[T]:
    """Guarantees a sub-list of ``units`` (order kept) for which ``fails`` held when last
    tried — ``units`` itself when it cannot do better before ``deadline`` (a
    ``time.monotonic()`` instant) — that is 1-minimal (no single unit can go) if the
    deadline was not reached. ``fails(units)`` is assumed true."""
    current = list(units)
    n = 2
    while len(current) >= 2 and time.monotonic() < deadline:
        size = -(-len(current) // n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        reduced = False
        for i in range(len(chunks)):
            if time.monotonic() >= deadline:
                return current
            complement = [u for j, c in enumerate(chunks) if j != i for u in c]
            if complement and fails(complement):
                current = complement
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(current):
                break
            n = min(n * 2, len(current))
    if len(current) == 1 and time.monotonic() < deadline and fails([]):
        return []
    return current


_TOKEN = re.compile(r"\s+|[%@#^!]?[\w.$-]+|\"[^\"\n]*\"?|.", re.S)


def tokens(text: str) -> list[str]:
    """``text`` as tokens whose concatenation is ``text`` (whitespace runs are tokens)."""
    return _TOKEN.findall(text)


def _is_text(name: str) -> bool:
    """Whether a file is reduced as text (by lines and tokens): anything but the binary
    formats tp reads (its bytes round-trip through ``surrogateescape``)."""
    return not name.endswith((".npz", ".npy", ".safetensors"))


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _npz_entries(data: bytes) -> dict[str, np.ndarray] | None:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as found:
            return {k: found[k] for k in found.files}
    except Exception:  # noqa: BLE001 - not a readable npz: left whole
        return None


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _flag_groups(argv: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """``argv`` as its leading positional arguments and groups (a flag and the values
    after it that are not flags)."""
    head: list[str] = []
    groups: list[list[str]] = []
    for arg in argv:
        if arg.startswith("-") and arg != "-":
            groups.append([arg])
        elif groups:
            groups[-1].append(arg)
        else:
            head.append(arg)
    return head, groups


def minimise(
    case: Case,
    target: Outcome,
    run: Callable[[Case], Outcome],
    seconds: float,
    substitutes: Mapping[str, Sequence[bytes]] | None = None,
) -> tuple[Case, Outcome, int]:
    """Guarantees a case no larger than ``case`` whose outcome (by ``run``) has ``target``'s
    verdict and signature, with that outcome and the number of runs tried, reduced for at
    most about ``seconds`` (plus one run): the flags; then each file from the largest: first
    replaced whole by the smallest of its ``substitutes`` (say, a smaller program) that
    keeps the failure, then by lines and by tokens, or a ``.npz`` by entries."""
    deadline = time.monotonic() + seconds
    best = [case, target]
    tried = 0

    def same(candidate: Case) -> bool:
        nonlocal tried
        tried += 1
        outcome = run(candidate)
        if outcome.verdict == target.verdict and outcome.signature == target.signature:
            best[0], best[1] = candidate, outcome
            return True
        return False

    head, groups = _flag_groups(case.argv)
    if groups:  # flags first: cheap, and a shorter command runs faster below
        ddmin(
            groups,
            lambda gs: same(case.with_argv(tuple(head + [a for g in gs for a in g]))),
            deadline,
        )
    names = sorted(case.files, key=lambda n: -len(case.files[n]))
    for name in names:
        for other in sorted((substitutes or {}).get(name, ()), key=len):
            if time.monotonic() >= deadline or len(other) >= len(best[0].files[name]):
                break
            if same(best[0].with_file(name, other)):
                break
        data = best[0].files[name]
        if _is_text(name):
            base = best[0]
            kept = ddmin(
                _decode(data).split("\n"),
                lambda ls, base=base, name=name: same(base.with_file(name, _encode("\n".join(ls)))),
                deadline,
            )
            base = best[0]
            ddmin(  # best[0] holds the last failing candidate
                tokens("\n".join(kept)),
                lambda ts, base=base, name=name: same(base.with_file(name, _encode("".join(ts)))),
                deadline,
            )
        elif name.endswith(".npz"):
            entries = _npz_entries(data)
            if entries:
                base = best[0]
                keys = ddmin(
                    sorted(entries),
                    lambda ks, base=base, name=name, entries=entries: same(
                        base.with_file(name, _npz({k: entries[k] for k in ks}))
                    ),
                    deadline,
                )
                del keys
    return best[0], best[1], tried
