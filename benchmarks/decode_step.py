"""The reference interpreter's decode step on a real-dims Qwen3-8B layer vs plain numpy.

Same process, same weights: the TP program for N chips (weights already placed on the chips;
placing them is timed separately) against `numpy_qwen3.decode_layer` on the full weights.
Prints best-of-3 times, their ratio, the load time and the peak memory of the process.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from benchmarks.numpy_qwen3 import baseline_step
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


def _median_ratio(fn_a, fn_b, repeat: int = 9) -> tuple[float, float]:
    """Median times of ``fn_a`` and ``fn_b``, run interleaved so drift hits both alike."""
    a, b = [], []
    for _ in range(repeat):
        for fn, times in ((fn_a, a), (fn_b, b)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return sorted(a)[repeat // 2], sorted(b)[repeat // 2]


def main(chip_counts: tuple[int, ...] = (4, 8), position: int = 100) -> None:
    ctx = tp_context()
    base = Qwen3Config.preset("qwen3-8b", layers=1)
    weights: dict[str, np.ndarray] = {}
    inputs: dict[str, np.ndarray] = {}
    for chips in chip_counts:
        cfg = Qwen3Config.preset("qwen3-8b", layers=1, chips=chips)
        t0 = time.perf_counter()
        module, _ = parse_module(ctx, generate(cfg), "<qwen3-8b>")
        parse_s = time.perf_counter() - t0
        if not weights:
            weights = random_weights(module, seed=0)
            inputs = random_inputs(module, seed=1, position=position)
        t0 = time.perf_counter()
        placement = place_weights(module, MemorySource(weights))
        load_s = time.perf_counter() - t0
        values = {**placement.values, **inputs}

        def interpreted(module=module, values=values, placed=placement.placed):
            return run_program(module, values, placed)

        def plain(weights=weights, inputs=inputs):
            return baseline_step(
                weights,
                inputs,
                position,
                heads=base.heads,
                kv_heads=base.kv_heads,
                head_dim=base.head_dim,
            )

        interp_s, numpy_s = _median_ratio(interpreted, plain)
        err = float(np.max(np.abs(interpreted()["hidden_states"] - plain()[0])))
        peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(
            f"qwen3-8b layer, N={chips}, batch 1, position {position}: interpreter "
            f"{interp_s * 1e3:.0f} ms vs numpy {numpy_s * 1e3:.0f} ms (medians of 9, "
            f"interleaved) = {interp_s / numpy_s:.2f}x; place weights {load_s:.2f} s "
            f"({placement.placed_bytes / 2**30:.2f} GiB), parse {parse_s:.2f} s, "
            f"max |diff| {err:.1e}, peak RSS {peak_gib:.1f} GiB"
        )


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (4, 8))
