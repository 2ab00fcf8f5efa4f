"""Relay construction on the 36-layer qwen3-8b program on 8 chips, and its growth with halts.

The program is lowered to per-chip programs once (tp-relocate, tp-transfers,
tp-link-points); then only the relay schedule is timed, for 9, 18 and 36 layers, against the
number of halts it schedules.
"""

from __future__ import annotations

import sys
import time

from xdsl.passes import PassPipeline

from tp_dialect.analysis.rounds import relay_schedule, rounds
from tp_dialect.analysis.schedule.programs import program_halts, programs
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.passes import TP_PASSES
from tp_dialect.signature import entry_function
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


def main(layer_counts: tuple[int, ...] = (9, 18, 36), chips: int = 8) -> None:
    ctx = tp_context()
    for layers in layer_counts:
        cfg = Qwen3Config.preset("qwen3-8b", layers=layers, chips=chips)
        module, _ = parse_module(ctx, generate(cfg), "<qwen3-8b>")
        t0 = time.perf_counter()
        PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers,tp-link-points").apply(
            ctx, module
        )
        lower_s = time.perf_counter() - t0
        halts = {p.chip_index: program_halts(p) for p in programs(entry_function(module))}
        n_halts = sum(len(h) for h in halts.values())
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            steps = relay_schedule(halts)
            best = min(best, time.perf_counter() - t0)
        print(
            f"qwen3-8b, {chips} chips, {layers:2d} layers: {n_halts} halts, {len(steps)} steps, "
            f"{rounds(steps)} rounds; relay schedule {best * 1e3:.1f} ms "
            f"({best / n_halts * 1e6:.1f} us/halt); lowering to per-chip programs {lower_s:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (9, 18, 36))
