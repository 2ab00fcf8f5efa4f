"""Modelled qwen3-8b decode step (batch 1, bf16 weights, 2048 cache positions) on 1, 2, 4, 8
sn40l chips: the seed's fold and a ring all-reduce in phase mode, ``auto`` all-reduces
(tp-relocate picks per all-reduce by the machine model) in phase and dataflow mode, against
the physical bound; the ratio to it, the speedup over one chip, the modelling time per layer,
and where the dataflow step's time goes (its critical path). ``--dry-run`` semantics: shapes
only. Each program is generated and parsed once per chip count and lowered in this process.

``python -m benchmarks.model_qwen3 36``
"""

from __future__ import annotations

import sys
import time

from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.machine import MACHINES
from tp_dialect.passes.universe import lowered as lower
from tp_dialect.runtime.model import ModelReport, model
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

AUTO = "auto machine=sn40l"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def main(layers: int = 36, chip_counts: tuple[int, ...] = (1, 2, 4, 8)) -> None:
    ctx = tp_context()
    machine = MACHINES["sn40l"]
    print(
        f"qwen3-8b, {layers} layer(s), batch 1, bf16 weights, 2048 cache positions, on sn40l "
        f"(link {machine.link_bandwidth / 1e9:.0f} GB/s, {machine.link_latency * 1e6:.0f} us "
        "assumed, all-to-all)",
        flush=True,
    )
    rows: list[tuple[int, dict[str, ModelReport], float]] = []
    details: list[str] = []
    for n in chip_counts:
        t0 = time.perf_counter()
        cfg = Qwen3Config.preset(
            "qwen3-8b", layers=layers, chips=n, dtype="bf16", max_positions=2048
        )
        module, _ = parse_module(ctx, generate(cfg), "<qwen3-8b>")
        parse_s = time.perf_counter() - t0
        reports: dict[str, ModelReport] = {}
        model_s = 0.0
        t1 = time.perf_counter()
        for name, algorithm in (("fold", "fold"), ("ring", "ring"), ("auto", AUTO)):
            relocate = f"tp-relocate{{allreduce={algorithm}}},tp-transfers"
            sectioned = lower(module, relocate)
            phased = lower(sectioned, "tp-phase")
            t2 = time.perf_counter()
            reports[f"{name}/phase"] = model(phased, machine, "phase")[0]
            model_s += time.perf_counter() - t2
            if name == "auto":
                programs = lower(sectioned, "tp-link-points")
                t2 = time.perf_counter()
                reports["auto/dataflow"] = model(programs, machine, "dataflow")[0]
                model_s += time.perf_counter() - t2
        lower_s = time.perf_counter() - t1 - model_s
        rows.append((n, reports, model_s))
        flow = reports["auto/dataflow"]
        print(
            f"N={n}: parse {parse_s:.1f} s, lower {lower_s:.1f} s, model {model_s:.1f} s "
            f"({model_s / layers * 1e3:.1f} ms per layer over 4 runs); auto/dataflow "
            f"{_ms(flow.step_time)}, physical bound {_ms(flow.physical_bound)}",
            flush=True,
        )
        path = flow.critical_path or {}
        top = ", ".join(f"{t['role']} {t['seconds'] * 1e3:.3f}" for t in path.get("top", []))
        details.append(
            f"N={n} auto/dataflow: compute {_ms(flow.compute_time)}, communication "
            f"{_ms(flow.communication_time)}, idle {_ms(flow.idle_time)}; critical path: "
            f"compute {_ms(float(path.get('compute_s', 0.0)))}, all-reduce adds "
            f"{_ms(float(path.get('collective_s', 0.0)))}, links "
            f"{_ms(float(path.get('link_s', 0.0)))} ({path.get('transfer_hops', 0)} hops, "
            f"{path.get('queued_hops', 0)} queued); physical bound = HBM "
            f"{_ms(flow.physical.hbm_s)} + {flow.physical.allreduce_count} all-reduces "
            f"{_ms(flow.physical.link_s)}; top of the path (ms): {top}"
        )
    base = rows[0][1]["auto/dataflow"].step_time
    print()
    print(
        "| N | fold/phase | ring/phase | auto/phase | auto/dataflow | physical bound | "
        "dataflow / bound | speedup vs N=1 | model time / layer |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n, r, model_s in rows:
        flow = r["auto/dataflow"]
        print(
            f"| {n} | {_ms(r['fold/phase'].step_time)} | {_ms(r['ring/phase'].step_time)} | "
            f"{_ms(r['auto/phase'].step_time)} | {_ms(flow.step_time)} | "
            f"{_ms(flow.physical_bound)} | {flow.step_time / flow.physical_bound:.2f}x | "
            f"{base / flow.step_time:.2f}x | {model_s / layers / 4 * 1e3:.1f} ms |"
        )
    print()
    for line in details:
        print(line)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 36)
