"""The reproducers folder: one sub-folder per failure class the harness found, kept as a
regression case (``tests/test_fuzz_reproducers.py`` runs each and wants a clean error or a
success).

Each sub-folder holds ``case.json`` (tool, argv with ``@{file}`` placeholders, origin,
mutations, and ``found``: verdict, signature, message, seed and index of the first input
that showed it, the unreduced command) and the case's files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from fuzz.case import Case, load_case, save_case
from fuzz.execute import REPO

DEFAULT_DIR = REPO / "tests" / "fuzz_reproducers"


def slug(signature: tuple[str, ...]) -> str:
    """A folder name for a failure class: verdict, tool, what and where, and a short hash
    of the whole signature (``internal-tp-opt-ValueError-statements-1a2b3c4d``)."""
    digest = hashlib.sha1("\x1f".join(signature).encode()).hexdigest()[:8]
    words = [signature[0], signature[1] if len(signature) > 1 else ""]
    if signature[0] == "hang":
        words += [signature[-1].rsplit("/", 1)[-1].removesuffix(".py")]
    else:
        words += list(signature[2:3])
        site = next((s for s in signature[3:] if ":" in s), "")
        words += [site.rsplit(":", 1)[-1]] if site else list(signature[3:4])
    name = "-".join(re.sub(r"[^A-Za-z0-9_-]+", "_", w).strip("_-") for w in words if w)
    return f"{name[:80]}-{digest}"


def cases_in(folder: Path = DEFAULT_DIR) -> list[Path]:
    """Every reproducer sub-folder of ``folder`` (sorted; none if it does not exist)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / "case.json").is_file())


def known_signatures(folder: Path = DEFAULT_DIR) -> dict[tuple[str, ...], Path]:
    """The signature each reproducer in ``folder`` was found with -> its folder."""
    known: dict[tuple[str, ...], Path] = {}
    for path in cases_in(folder):
        _, found = load_case(path)
        signature = found.get("signature")
        if isinstance(signature, list):
            known[tuple(str(s) for s in signature)] = path
    return known


def save_reproducer(
    folder: Path, case: Case, signature: tuple[str, ...], found: Mapping[str, object]
) -> Path:
    """Guarantees ``folder/<slug>`` holds ``case`` and what was ``found`` (signature
    included), replacing any earlier reproducer of the same class; returns that folder."""
    target = folder / slug(signature)
    if target.exists():
        for entry in sorted(target.rglob("*"), reverse=True):
            entry.unlink() if not entry.is_dir() else entry.rmdir()
    save_case(case, target, {**found, "signature": list(signature)})
    return target
