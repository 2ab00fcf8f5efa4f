"""Run every benchmark side by side in one process and print its figures."""

from __future__ import annotations

from benchmarks import parse_print


def main() -> None:
    parse_print.main()


if __name__ == "__main__":
    main()
