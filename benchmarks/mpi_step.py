"""A real-dims qwen3-8b layer (batch 1, f32, position 100) as MPI ranks, against the same
program in one process, plain numpy, and the model calibrated on this machine.

One run, side by side: the machine is calibrated for N = 1 and N = 2 ranks sharing it
(`tp_dialect.runtime.calibrate`, or ``--machine FILE`` for both), one checkpoint of random
weights is written as safetensors, and then:

- measured: ``tp-run --mpi N --stats`` for N = 1, 2 (each rank loads only its share of the
  checkpoint; the step is timed from every rank loaded to every rank done), median of
  ``repeat`` launches, and each rank's peak RSS;
- the single-process interpreter on the N = 2 per-chip programs, its step (median) and, in a
  process of its own, its peak RSS;
- plain numpy (`benchmarks.numpy_qwen3`) on the full weights, median;
- predicted: the model's dataflow step of the same per-chip programs on the calibrated
  machine (direct links, as the ranks run).

``python -m benchmarks.mpi_step [--machine local.json] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from benchmarks.numpy_qwen3 import baseline_step
from tp_dialect.analysis.machine import Machine, machine_from
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.passes.universe import lowered as lower
from tp_dialect.runtime.calibrate import local_machine, measure_local
from tp_dialect.runtime.checkpoint import (
    SafetensorsSource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.model import model
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.common import at_least
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

POSITION = 100
LOWER = "tp-relocate,tp-transfers,tp-link-points"
_ROW = re.compile(
    r"^(\d+)\s+(\d+)\s+([\d.]+ [kMG]?B)\s+([\d.]+ [kMG]?B)\s+([\d.]+) ms\s+([\d.]+) ms"
)
_UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def _bytes(text: str) -> float:
    number, unit = text.split()
    return float(number) * _UNITS[unit]


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def _mpi_step(program: Path, n: int, weights: Path, inputs: Path) -> tuple[float, list[float]]:
    """One ``tp-run --mpi n`` launch: its step time and each rank's peak RSS (bytes)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tp_dialect.tools.tp_run",
            str(program),
            "--mpi",
            str(n),
            "--weights",
            str(weights),
            "--inputs",
            str(inputs),
            "--stats",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    rows = [m for line in out.splitlines() if (m := _ROW.match(line))]
    if len(rows) != n:
        raise RuntimeError(f"tp-run --mpi {n} --stats printed {len(rows)} rank rows:\n{out}")
    step = max(float(m.group(6)) for m in rows) / 1e3
    return step, [_bytes(m.group(4)) for m in rows]


def _single_rss(program: Path, weights: Path, inputs: Path) -> float:
    """Peak RSS (bytes) of one process running ``program`` with tp-run."""
    code = (
        "import resource, sys; from tp_dialect.tools import tp_run; "
        f"rc = tp_run.main([{str(program)!r}, '--weights', {str(weights)!r}, "
        f"'--inputs', {str(inputs)!r}]); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024); sys.exit(rc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    ).stdout
    return float(out.strip().splitlines()[-1])


def main(machine_path: str | None = None, repeat: int = 3) -> None:
    ctx = tp_context()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        machines: dict[int, Machine] = {}
        for n in (1, 2):
            path = machine_path
            if path is None:  # a chip is one of n ranks sharing this machine's memory
                path = str(work / f"local-{n}.json")
                Path(path).write_text(json.dumps(local_machine(measure_local(ranks=n))))
            machines[n] = m = machine_from(path)
            print(
                f"machine {m.name} for N={n}: memory {m.hbm_bandwidth / 1e9:.1f} GB/s a chip, "
                f"{m.peak_flops / 1e9:.0f} GFLOP/s, link {m.link_latency * 1e6:.1f} us + "
                f"{m.link_bandwidth / 1e9:.1f} GB/s, {m.op_overhead * 1e6:.1f} us/op",
                flush=True,
            )
        programs: dict[int, Path] = {}
        predicted: dict[int, float] = {}
        lowered = {}
        for n in (1, 2):
            cfg = Qwen3Config.preset("qwen3-8b", layers=1, chips=n)
            text = generate(cfg)
            programs[n] = work / f"qwen3-8b-n{n}.mlir"
            programs[n].write_text(text)
            module = lower(parse_module(ctx, text, str(programs[n]))[0], LOWER)
            lowered[n] = module
            predicted[n] = model(module, machines[n], "dataflow")[0].step_time
        weights = random_weights(lowered[1], seed=0)
        inputs = random_inputs(lowered[1], seed=1, position=POSITION)
        ckpt, npz = work / "weights.safetensors", work / "inputs.npz"
        save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(ckpt))
        np.savez(npz, **inputs)
        print(f"checkpoint {ckpt.stat().st_size / 1e9:.2f} GB of random f32 weights", flush=True)

        measured: dict[int, float] = {}
        rss: dict[int, list[float]] = {}
        for n in (1, 2):
            runs = [_mpi_step(programs[n], n, ckpt, npz) for _ in range(repeat)]
            measured[n] = sorted(s for s, _ in runs)[repeat // 2]
            rss[n] = runs[0][1]
            print(f"MPI N={n}: step {measured[n] * 1e3:.1f} ms (median of {repeat})", flush=True)

        module = lowered[2]
        placement = place_weights(module, SafetensorsSource(ckpt), inputs)
        values = placement.values

        def interpreted() -> object:
            return run_program(module, values, placement.placed)

        single = _median(interpreted, repeat)
        base = Qwen3Config.preset("qwen3-8b", layers=1)

        def plain() -> object:
            return baseline_step(
                weights,
                inputs,
                POSITION,
                heads=base.heads,
                kv_heads=base.kv_heads,
                head_dim=base.head_dim,
            )

        numpy_s = _median(plain, repeat)
        single_rss = _single_rss(programs[2], ckpt, npz)

    print()
    print("| | step | vs plain numpy |")
    print("|---|---|---|")
    print(f"| plain numpy, whole layer | {numpy_s * 1e3:.1f} ms | 1.00x |")
    print(
        f"| interpreter, one process, N=2 programs | {single * 1e3:.1f} ms | "
        f"{single / numpy_s:.2f}x |"
    )
    for n in (1, 2):
        print(f"| MPI, {n} rank(s) | {measured[n] * 1e3:.1f} ms | {measured[n] / numpy_s:.2f}x |")
    print()
    print("| N | measured (MPI) | predicted (model, dataflow, calibrated) | predicted / measured |")
    print("|---|---|---|---|")
    for n in (1, 2):
        ratio = predicted[n] / measured[n]
        print(f"| {n} | {measured[n] * 1e3:.1f} ms | {predicted[n] * 1e3:.1f} ms | {ratio:.2f} |")
    print()
    worst = max(rss[2])
    print(
        f"peak RSS: one process running the N=2 programs {single_rss / 1e9:.2f} GB; MPI N=2 "
        f"ranks {', '.join(f'{r / 1e9:.2f}' for r in rss[2])} GB "
        f"(largest {worst / single_rss:.2f}x the single process)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mpi_step")
    parser.add_argument("--machine", help="a calibrated machine file (default: calibrate now)")
    parser.add_argument("--repeat", type=at_least(1, int), default=3)
    args = parser.parse_args()
    main(args.machine, args.repeat)
