"""Modelled qwen3-8b decode step (batch 1, bf16 weights) on 1, 2, 4, 8 sn40l chips: time,
speedup over one chip, ratio to the lower bound; the seed's fold vs a ring all-reduce (phase
mode), and phase mode vs relay mode, side by side. ``--dry-run`` semantics: shapes only.
"""

from __future__ import annotations

import sys
import time

from xdsl.passes import PassPipeline

from tp_dialect.analysis.machine import MACHINES
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.model import model
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


def main(layers: int = 36, chip_counts: tuple[int, ...] = (1, 2, 4, 8)) -> None:
    ctx = tp_context()
    machine = MACHINES["sn40l"]
    base: float | None = None
    print(
        f"qwen3-8b, {layers} layer(s), batch 1, bf16 weights, on sn40l "
        f"(link {machine.link_bandwidth / 1e9:.0f} GB/s, {machine.link_latency * 1e6:.0f} us "
        "assumed)"
    )
    for n in chip_counts:
        t0 = time.perf_counter()
        cfg = Qwen3Config.preset("qwen3-8b", layers=layers, chips=n, dtype="bf16")
        module, _ = parse_module(ctx, generate(cfg), "<qwen3-8b>")
        parse_s = time.perf_counter() - t0
        rows = {}
        for algorithm in ("fold", "ring"):
            lowered = module.clone()
            t1 = time.perf_counter()
            PassPipeline.parse_spec(
                TP_PASSES, f"tp-relocate{{allreduce={algorithm}}},tp-transfers,tp-phase"
            ).apply(ctx, lowered)
            rows[f"phase/{algorithm}"] = model(lowered, machine, "phase")[0]
            if algorithm == "fold":
                PassPipeline.parse_spec(TP_PASSES, "tp-link-points").apply(ctx, lowered)
                rows["relay/fold"] = model(lowered, machine, "relay")[0]
            lower_s = time.perf_counter() - t1
        fold = rows["phase/fold"]
        base = base or fold.step_time
        print(
            f"N={n}: phase/fold {fold.step_time * 1e3:7.3f} ms (x{base / fold.step_time:.2f}, "
            f"{fold.step_time / fold.lower_bound:.2f} of bound {fold.lower_bound * 1e3:.3f} ms, "
            f"compute {fold.compute_time * 1e3:.3f} / comm {fold.communication_time * 1e3:.3f})"
            f" | phase/ring {rows['phase/ring'].step_time * 1e3:7.3f} ms | relay/fold "
            f"{rows['relay/fold'].step_time * 1e3:7.3f} ms | moved "
            f"{fold.bytes_moved / 1e6:.2f} MB | parse {parse_s:.1f} s, lower+model "
            f"{lower_s:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 36)
