"""A real-dims qwen3-8b layer (batch 1, f32, position 100) as MPI ranks, against the same
program in one process, plain numpy, and the model calibrated on this machine.

One run, side by side: one checkpoint of random weights is written as safetensors; for N = 1
and then N = 2, the machine is calibrated for N ranks sharing it (`tp_dialect.runtime
.calibrate`, first touch into buffers the size of the cache each chip's updates copy; or
``--machine FILE`` for both) right before N is measured; then:

- measured: ``tp-run --mpi N --stats`` for N = 1, 2 (each rank loads only its share of the
  checkpoint; the step is timed from every rank loaded to every rank done), median of
  ``repeat`` launches (and their range), and each rank's peak RSS;
- the single-process interpreter on the N = 2 per-chip programs, its step (median) and, in a
  process of its own, its peak RSS;
- plain numpy (`benchmarks.numpy_qwen3`) on the full weights, median;
- predicted: the model's dataflow step of the same per-chip programs on the calibrated
  machine (direct links, as the ranks run), and what chip 0's sections are charged for:
  roofline, per-op overhead, first touch of the update copies' new buffers.

With ``--iree``: the same per-chip programs on IREE too (the ``iree`` extra), in one process
(weights resident, `benchmarks.iree_step`) and as ranks (``tp-run --mpi N --backend iree``).

``python -m benchmarks.mpi_step [--machine local.json] [--repeat 3] [--iree]``
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
from dataclasses import replace
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from xdsl.dialects.builtin import ModuleOp

from benchmarks.numpy_qwen3 import baseline_step
from tp_dialect.analysis.schedule.programs import placed_sections
from tp_dialect.analysis.timing.cost import first_touch_time, op_cost
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.machine import Machine, machine_from
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
from tp_dialect.signature import entry_function
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


def _mpi_step(
    program: Path, n: int, weights: Path, inputs: Path, iree: bool = False
) -> tuple[float, list[float]]:
    """One ``tp-run --mpi n`` launch (``--backend iree`` with ``iree``): its step time and
    each rank's peak RSS (bytes)."""
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
            *(["--backend", "iree"] if iree else []),
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


def update_copy_bytes(module: ModuleOp) -> int:
    """The largest buffer an update of ``module`` copies where updates copy (a chip's cache),
    in bytes; 8 MiB when it has none."""
    copied = [op_cost(op).copied / 2 for op in module.walk() if op.name == "tensor.insert_slice"]
    return int(max(copied, default=8 << 20))


def charges(module: ModuleOp, machine: Machine) -> tuple[float, float, float]:
    """What chip 0's sections of ``module`` are charged on ``machine``, in seconds: their
    roofline, their per-op overhead and the first touch of their update copies."""
    func = entry_function(module)
    costs = [op_cost(s) for s, chips in placed_sections(func) if 0 in chips]
    bare = replace(machine, op_overhead=0.0, first_touch_bandwidth=0.0)
    return (
        sum(c.time(bare) for c in costs),
        sum(c.ops for c in costs) * machine.op_overhead,
        sum(first_touch_time(c, machine) for c in costs),
    )


def main(machine_path: str | None = None, repeat: int = 3, iree: bool = False) -> None:
    ctx = tp_context()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        programs: dict[int, Path] = {}
        lowered: dict[int, ModuleOp] = {}
        for n in (1, 2):
            cfg = Qwen3Config.preset("qwen3-8b", layers=1, chips=n)
            text = generate(cfg)
            programs[n] = work / f"qwen3-8b-n{n}.mlir"
            programs[n].write_text(text)
            lowered[n] = lower(parse_module(ctx, text, str(programs[n]))[0], LOWER)
        weights = random_weights(lowered[1], seed=0)
        inputs = random_inputs(lowered[1], seed=1, position=POSITION)
        ckpt, npz = work / "weights.safetensors", work / "inputs.npz"
        save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(ckpt))
        np.savez(npz, **inputs)
        print(f"checkpoint {ckpt.stat().st_size / 1e9:.2f} GB of random f32 weights", flush=True)

        # Each N calibrated right before it is measured: this machine's memory moves by
        # tens of percent within a minute (other virtual machines share its host).
        predicted: dict[int, float] = {}
        measured: dict[int, float] = {}
        on_iree: dict[int, float] = {}
        rss: dict[int, list[float]] = {}
        for n in (1, 2):
            path = machine_path
            if path is None:  # a chip is one of n ranks sharing this machine's memory
                path = str(work / f"local-{n}.json")
                figures = measure_local(ranks=n, touch_bytes=update_copy_bytes(lowered[n]))
                Path(path).write_text(json.dumps(local_machine(figures)))
            m = machine_from(path)
            print(
                f"machine {m.name} for N={n}: memory {m.hbm_bandwidth / 1e9:.1f} GB/s a chip, "
                f"{m.peak_flops / 1e9:.0f} GFLOP/s, link {m.link_latency * 1e6:.1f} us + "
                f"{m.link_bandwidth / 1e9:.1f} GB/s, {m.op_overhead * 1e6:.1f} us/op, "
                f"first touch {m.first_touch_bandwidth / 1e9:.2f} GB/s",
                flush=True,
            )
            predicted[n] = model(lowered[n], m, "dataflow")[0].step_time
            roof, ops, touch = charges(lowered[n], m)
            print(
                f"model N={n}: step {predicted[n] * 1e3:.1f} ms; chip 0 charged roofline "
                f"{roof * 1e3:.1f} ms + per-op {ops * 1e3:.1f} ms + first touch "
                f"{touch * 1e3:.1f} ms",
                flush=True,
            )
            runs = [_mpi_step(programs[n], n, ckpt, npz) for _ in range(repeat)]
            steps = sorted(s for s, _ in runs)
            measured[n] = steps[repeat // 2]
            rss[n] = runs[0][1]
            print(
                f"MPI N={n}: step {measured[n] * 1e3:.1f} ms (median of {repeat}; from "
                f"{steps[0] * 1e3:.1f} to {steps[-1] * 1e3:.1f} ms)",
                flush=True,
            )
            if iree:
                _mpi_step(programs[n], n, ckpt, npz, iree=True)  # compiles into the cache
                native = sorted(
                    _mpi_step(programs[n], n, ckpt, npz, iree=True)[0] for _ in range(repeat)
                )
                on_iree[n] = native[repeat // 2]
                print(f"MPI N={n} on IREE: step {on_iree[n] * 1e3:.1f} ms", flush=True)

        module = lowered[2]
        placement = place_weights(module, SafetensorsSource(ckpt), inputs)
        values = placement.values

        def interpreted() -> object:
            return run_program(module, values, placement.placed)

        single = _median(interpreted, repeat)
        in_process = 0.0
        if iree:  # IREE in one process: weights resident, the relay's rounds a step
            from benchmarks.iree_step import resident_step
            from tp_dialect.runtime.iree_exec import ModuleCache, default_cache_dir

            ready = resident_step(
                module, values, placement.placed, ModuleCache(default_cache_dir())
            )
            in_process = _median(ready.run, repeat)
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
    if iree:
        print(
            f"| IREE, one process, N=2 programs | {in_process * 1e3:.1f} ms | "
            f"{in_process / numpy_s:.2f}x |"
        )
    for n in (1, 2):
        print(f"| MPI, {n} rank(s) | {measured[n] * 1e3:.1f} ms | {measured[n] / numpy_s:.2f}x |")
        if iree:
            print(
                f"| MPI on IREE, {n} rank(s) | {on_iree[n] * 1e3:.1f} ms | "
                f"{on_iree[n] / numpy_s:.2f}x |"
            )
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
    parser.add_argument(
        "--iree", action="store_true", help="IREE beside: in one process and as ranks"
    )
    args = parser.parse_args()
    main(args.machine, args.repeat, args.iree)
