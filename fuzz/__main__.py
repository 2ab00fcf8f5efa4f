"""``python -m fuzz``: a fuzz campaign over tp-opt and tp-run (see `fuzz.run`).

Exit status 0 when no input was an internal error or a hang, 1 otherwise, 2 on bad flags.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from fuzz.reproducers import DEFAULT_DIR
from fuzz.run import campaign, reminimise, say, write_json


def parser() -> argparse.ArgumentParser:
    """The command line (every flag has a default: ``make fuzz``'s figures)."""
    p = argparse.ArgumentParser(
        prog="python -m fuzz",
        description="Mutate tp programs, inputs and flags; run tp-opt and tp-run on them "
        "in-process; fail on any internal error or hang, saving a minimised reproducer.",
    )
    p.add_argument("--inputs", type=int, default=20000, help="how many inputs (default 20000)")
    p.add_argument("--seed", type=int, default=0, help="the campaign's seed (default 0)")
    p.add_argument("--start", type=int, default=0, help="the first input's index (default 0)")
    p.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="stop starting inputs after this long (default: no limit)",
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument(
        "--timeout", type=float, default=5.0, help="per-input limit in seconds (default 5)"
    )
    p.add_argument(
        "--minimise-seconds",
        type=float,
        default=30.0,
        help="time to minimise each new failure class (default 30; 0: save as found)",
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=4096,
        help="address-space limit per worker in MiB (default 4096; 0: none)",
    )
    p.add_argument(
        "--tp-run-share",
        type=float,
        default=None,
        help="fraction of inputs that exercise tp-run (default 0.12)",
    )
    p.add_argument(
        "--reproducers",
        type=Path,
        default=DEFAULT_DIR,
        help="where new reproducers go, and which failure classes are known "
        "(default tests/fuzz_reproducers)",
    )
    p.add_argument("--no-save", action="store_true", help="save no reproducer")
    p.add_argument("--json", type=Path, help="also write the report here as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--reminimise",
        action="store_true",
        help="run no campaign: minimise again every reproducer in --reproducers that still "
        "fails as found (--minimise-seconds each), keeping it where smaller",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Runs a campaign and prints its summary; 0 when it found no internal error or hang."""
    args = parser().parse_args(argv)
    if args.inputs < 0 or args.workers < 1 or args.timeout <= 0:
        print(
            "python -m fuzz: error: --inputs >= 0, --workers >= 1, --timeout > 0", file=sys.stderr
        )
        return 2
    if args.reminimise:
        reminimise(
            args.reproducers,
            args.minimise_seconds,
            args.workers,
            args.timeout,
            args.memory_mb << 20,
            say_=say,
        )
        return 0
    extra = {} if args.tp_run_share is None else {"tp_run_share": args.tp_run_share}
    report = campaign(
        args.inputs,
        seed=args.seed,
        start=args.start,
        workers=args.workers,
        timeout=args.timeout,
        minutes=args.minutes,
        reproducers=None if args.no_save else args.reproducers,
        known_from=args.reproducers,
        minimise_seconds=args.minimise_seconds,
        memory=args.memory_mb << 20,
        progress=None if args.quiet else say,
        **extra,
    )
    print(report.summary())
    if args.json:
        write_json(report, args.json)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
