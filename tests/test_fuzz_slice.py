"""A seeded smoke of ``make fuzz``: inputs 0..49 of seed 0 (the first fifty of the full
campaign, which ``make fuzz`` runs with the 19,950 after them). Each chunk of 50 runs its
inputs in a forked worker (time limit, memory limit, crash guard) and fails on any internal
error or hang, naming the input, its command and the minimised reproducer (saved under
``build/fuzz/slice-reproducers``; a failure class already kept in ``tests/fuzz_reproducers``
is named, not minimised again).

``TP_FUZZ_SLICE=N`` changes the slice's size (a multiple of 50; chunks spread over the cores
under ``pytest -n auto``): ``TP_FUZZ_SLICE=1000`` is the slice ``make test`` ran before the
campaign's first thousand moved to ``make fuzz``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz.reproducers import DEFAULT_DIR  # noqa: E402
from fuzz.run import campaign  # noqa: E402

SEED = 0
CHUNK = 50
SLICE = int(os.environ.get("TP_FUZZ_SLICE", "50"))
TIMEOUT = 5.0  # seconds per input, as in make fuzz


@pytest.mark.parametrize("chunk", range(SLICE // CHUNK))
def test_fuzz_slice(chunk: int) -> None:
    report = campaign(
        CHUNK,
        seed=SEED,
        start=chunk * CHUNK,
        workers=1,
        timeout=TIMEOUT,
        reproducers=REPO / "build" / "fuzz" / "slice-reproducers",
        known_from=DEFAULT_DIR,
        minimise_seconds=10.0,
    )
    if report.failed or report.inputs != CHUNK:
        pytest.fail(report.summary(), pytrace=False)
