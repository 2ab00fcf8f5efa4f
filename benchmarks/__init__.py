"""tp's benchmarks: `python -m benchmarks` (or `make bench`) runs them all and prints ratios."""
