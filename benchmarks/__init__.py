"""tp's benchmarks: `python -m benchmarks` (or `make bench`) runs every one of them side by side
and prints their ratios; `numpy_qwen3` is not one but the plain-numpy baseline `decode_step`
measures the interpreter against."""
