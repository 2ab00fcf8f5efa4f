"""A seeded slice of ``make fuzz``: inputs 0..999 of seed 0 (the first thousand of the full
campaign), in chunks of 50 so that ``pytest -n auto`` spreads them over the cores. Each
chunk runs its inputs in a forked worker (time limit, memory limit, crash guard) and fails
on any internal error or hang, naming the input, its command and the minimised reproducer
(saved under ``build/fuzz/slice-reproducers``; a failure class already kept in
``tests/fuzz_reproducers`` is named, not minimised again).

``TP_FUZZ_SLICE=N`` changes the slice's size (a multiple of 50).
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
SLICE = int(os.environ.get("TP_FUZZ_SLICE", "1000"))
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
