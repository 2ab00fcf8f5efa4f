"""The suite's two tiers, chosen by what each test runs: `make test` runs every test not listed
in tests/slow.txt, and those run every line of tp that the whole suite runs (`make tiers`
checks it); `make test-slow` runs the listed ones (CI runs both).

    python tests/tiers.py choose COVERAGE_DATA JUNIT_XML...   # rewrite tests/slow.txt
    python tests/tiers.py check COVERAGE_DATA              # lines per module, each tier

COVERAGE_DATA is a combined coverage file recorded with per-test contexts (`make tiers`:
pytest-cov's --cov-context=test for a test's own lines, --tier-contexts for the tools and MPI
ranks it starts); each JUNIT_XML gives each test's time, from a run without coverage, and a
test costs the most any of them gives: a whole-suite run charges the set-up tests share
(a program generated once per worker, a module's fixture, an IREE compile) to whichever runs
first, often a slow one, so give the fast tier's own run too (`pytest -m "not slow"
--junitxml=...`: 394 s of test time by the whole suite's report was 691 s alone). A test is
slow only when it takes at least `CHEAP` seconds, runs some line of tp, and every such line is
run by a fast test;
among the expensive tests, the fast ones are chosen greedily by new lines per second, then
any made redundant by later picks dropped, costliest first."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOW = ROOT / "tests" / "slow.txt"
CHEAP = 0.25  # seconds: a test this cheap stays fast whatever it runs
HEADER = """\
# Tests `make test` leaves to `make test-slow` (CI runs both). Every line of tp these run is
# also run by a test `make test` keeps (`make tiers` measures it per module); most are the same
# check at more chips, another family or more examples. Written by `python tests/tiers.py
# choose`; a listed id that no longer names a test fails the run (tests/conftest.py).
"""

Line = tuple[str, int]


def read_slow() -> set[str]:
    """The node ids tests/slow.txt lists (comments and blank lines skipped)."""
    if not SLOW.exists():
        return set()
    lines = (line.strip() for line in SLOW.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def test_lines(data_file: str) -> tuple[dict[str, set[Line]], set[Line]]:
    """Each test's lines of tp, and the lines run outside any test (imports at collection)."""
    from coverage import CoverageData  # test extra; conftest imports this module without it

    data = CoverageData(data_file)
    data.read()
    per_test: dict[str, set[Line]] = defaultdict(set)
    unattributed: set[Line] = set()
    for path in data.measured_files():
        name = str(Path(path).resolve().relative_to(ROOT))
        for lineno, contexts in data.contexts_by_lineno(path).items():
            for context in contexts:
                test = context.split("|")[0]
                if test:
                    per_test[test].add((name, lineno))
                else:
                    unattributed.add((name, lineno))
    return per_test, unattributed


def durations(*junit_xml: str) -> dict[str, float]:
    """Seconds per node id, the most any of the junit reports gives (classname
    `tests.test_x[.Class]`)."""
    times: dict[str, float] = {}
    for report in junit_xml:
        for case in ET.parse(report).iter("testcase"):
            parts = case.get("classname", "").split(".")
            module = next(i for i, p in enumerate(parts) if p.startswith("test_"))
            path = "/".join(parts[: module + 1]) + ".py"
            node = "::".join([path, *parts[module + 1 :], case.get("name", "")])
            times[node] = max(times.get(node, 0.0), float(case.get("time", "0")))
    return times


def choose(per_test: dict[str, set[Line]], times: dict[str, float]) -> set[str]:
    """The slow tier: expensive tests whose every line some chosen fast test also runs."""
    fast = {t for t in per_test if times.get(t, 0.0) < CHEAP}
    covered: set[Line] = set().union(*(per_test[t] for t in fast))
    candidates = {t: per_test[t] - covered for t in per_test if t not in fast}
    while True:
        gains = {t: len(new) / max(times.get(t, 0.0), 1e-3) for t, new in candidates.items() if new}
        if not gains:
            break
        best = max(sorted(gains), key=gains.__getitem__)
        fast.add(best)
        won = candidates.pop(best)
        for t in candidates:
            candidates[t] -= won
    # Greedy picks can be made redundant by later ones: drop, costliest first, every expensive
    # test whose lines all stay run by another fast test.
    runs = Counter(line for t in fast for line in per_test[t])
    for t in sorted(fast, key=lambda t: (-times.get(t, 0.0), t)):
        if times.get(t, 0.0) >= CHEAP and all(runs[line] > 1 for line in per_test[t]):
            fast.discard(t)
            runs.subtract(per_test[t])
    # A test that runs no line of tp (docs, packaging, lit inputs) checks what coverage cannot
    # see: it stays fast.
    return {t for t in times if t in per_test and t not in fast}


def check(per_test: dict[str, set[Line]], unattributed: set[Line], slow: set[str]) -> int:
    """Print lines run per module by the whole suite and by `make test`; 1 if any differ."""
    whole: dict[str, set[int]] = defaultdict(set)
    fast: dict[str, set[int]] = defaultdict(set)
    for test, lines in [*per_test.items(), ("", unattributed)]:
        for name, lineno in lines:
            whole[name].add(lineno)
            if test not in slow:
                fast[name].add(lineno)
    short = 0
    for name in sorted(whole):
        lost = len(whole[name]) - len(fast[name])
        short += lost > 0
        mark = f"  {lost} lines not run by make test" if lost else ""
        print(f"{name:60} {len(whole[name]):6} {len(fast[name]):6}{mark}")
    total, kept = sum(map(len, whole.values())), sum(map(len, fast.values()))
    print(f"{'lines run':60} {total:6} {kept:6}  (whole suite, make test)")
    return 1 if short else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "choose":
        per_test, _ = test_lines(argv[1])
        times = durations(*argv[2:])
        slow = choose(per_test, times)
        body = "".join(f"{t}\n" for t in sorted(slow))
        SLOW.write_text(HEADER + body)
        spared = sum(times[t] for t in slow)
        print(
            f"{len(slow)} of {len(times)} tests slow: {spared:.0f} of {sum(times.values()):.0f} s"
        )
        return 0
    if len(argv) == 2 and argv[0] == "check":
        per_test, unattributed = test_lines(argv[1])
        return check(per_test, unattributed, read_slow())
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
