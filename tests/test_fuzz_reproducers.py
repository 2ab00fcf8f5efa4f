"""Every reproducer the fuzz harness ever found (``tests/fuzz_reproducers/*/``) is now a
clean error or a success: each is run as the campaign ran it (in a forked worker, with its
time and memory limits) and must not be an internal error or a hang. A reproducer fails here
for as long as tp still has its bug; none is skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz.case import CLEAN, SUCCESS, load_case  # noqa: E402
from fuzz.pool import run_isolated  # noqa: E402
from fuzz.reproducers import DEFAULT_DIR, cases_in  # noqa: E402

CASES = cases_in(DEFAULT_DIR)


def test_reproducers_are_kept() -> None:
    assert CASES, f"no reproducer under {DEFAULT_DIR}"
    for path in CASES:
        _, found = load_case(path)
        assert found.get("signature") and found.get("verdict"), path


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_reproducer_is_a_clean_error_or_a_success(path: Path) -> None:
    case, found = load_case(path)
    outcome = run_isolated(case, timeout=5.0)
    if outcome.verdict not in (CLEAN, SUCCESS):
        pytest.fail(
            f"{path.relative_to(REPO)}: {case.command()}\n"
            f"  now: {outcome.verdict}: {outcome.message}\n"
            f"  signature: {' | '.join(outcome.signature)}\n"
            f"  found: {found.get('verdict')}: {found.get('message')}",
            pytrace=False,
        )
