"""A real-dims qwen3-8b decode layer on four backends side by side, f32 and bf16 weights, at
N = 1, 2, 4, 8 chips: tp's interpreter, the IREE backend, plain numpy and JAX ``shard_map``.

One run, one process. The layer is tp-gen's (hidden 4096, 32 heads, 8 KV heads, head_dim
128, intermediate 12288), batch 1, 2048 cache positions, decoding at ``--position`` (2047 by
default: every backend attends over the whole cache). The bf16 weights are random; the f32
weights are the same values widened, so one plain-numpy layer is every row's reference.

Columns (each a median of ``--reps`` runs, interleaved: every rep runs every column once):

- ``interp``: the reference interpreter on the per-chip programs (``tp-run``'s default), the
  chips one after another, weights placed beforehand;
- ``IREE``: the IREE backend's step with every weight and cache slice already on the device
  (`benchmarks.iree_step`: the export, module cache and relay of ``tp-run --backend iree``,
  placed once), outputs brought back to the host;
- ``numpy``: `benchmarks.numpy_qwen3` on the full f32 weights: the memory-bandwidth floor
  (numpy has no bf16 matmul: a bf16 row's numpy is the f32 one);
- ``JAX``: `benchmarks.jax_qwen3`, ``jax.jit(shard_map(...))`` over N of XLA's host devices,
  caches donated; skipped with a note when JAX is not installed (``pip install -e
  '.[bench]'`` installs IREE and JAX).

Threads, the measuring condition: numpy (BLAS) and the interpreter run on one thread
(``OPENBLAS_NUM_THREADS=1`` and friends, set here before numpy loads unless already set);
IREE's ``local-task`` device and XLA use every core of the machine. Compile times: ``cold``
is `run_iree`'s compile into an empty cache directory, ``warm`` the same with the cache
filled (loading the modules).

``python -m benchmarks.backends [--chips 1,2,4,8] [--dtypes f32,bf16] [--reps 7]``
(quick: ``--chips 1,2 --reps 3``). ``--iree-flag FLAG`` (repeatable) adds a flag to the IREE
backend's compile flags for the run; ``--variant NAME='ITEM …'`` adds an IREE column compiled
with more flags (or ``untuned``: without `tp_dialect.runtime.iree_tuning`'s tuning spec,
which tp's CPU builds take), to measure them side by side.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
_DEVICES = "--xla_force_host_platform_device_count=8"
if _DEVICES not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_DEVICES}".strip()

import argparse  # noqa: E402
import gc  # noqa: E402
import resource  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks import jax_qwen3  # noqa: E402
from benchmarks.iree_step import resident_step  # noqa: E402
from benchmarks.numpy_qwen3 import baseline_step  # noqa: E402
from tp_dialect.frontend.qwen3 import Qwen3Config, generate  # noqa: E402
from tp_dialect.runtime import iree_exec  # noqa: E402
from tp_dialect.runtime.checkpoint import (  # noqa: E402
    MemorySource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.reference import run_program  # noqa: E402
from tp_dialect.tools.run_model import per_chip  # noqa: E402
from tp_dialect.tools.source import parse_module  # noqa: E402
from tp_dialect.universe import tp_context  # noqa: E402

BASE = Qwen3Config.preset("qwen3-8b", layers=1)


def _programs(chips: int, dtype: str) -> Any:
    """The qwen3-8b layer on ``chips`` chips with ``dtype`` weights, as per-chip programs."""
    cfg = Qwen3Config.preset("qwen3-8b", layers=1, chips=chips, dtype=dtype)
    module, _ = parse_module(tp_context(), generate(cfg), "<qwen3-8b>")
    return per_chip(module, "fold", False)


def _rel(got: Any, want: np.ndarray) -> float:
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _median(times: list[float]) -> float:
    return sorted(times)[len(times) // 2]


Variant = tuple[str, tuple[str, ...]]
"""An IREE column besides the backend's own: its name and its extra compile flags."""


def measure(
    chips: int,
    dtypes: list[str],
    reps: int,
    position: int,
    weights: dict[str, dict],
    variants: list[Variant],
    target: iree_exec.IreeTarget,
) -> list[dict[str, Any]]:
    """Every column at ``chips`` chips for each of ``dtypes``: medians (s), compile times,
    the errors against numpy."""
    steps: dict[tuple[str, str], Callable[[], Any]] = {}
    rows = []
    inputs: dict[str, np.ndarray] = {}
    for dtype in dtypes:
        program = _programs(chips, dtype)
        inputs = random_inputs(program, seed=1, position=position)
        placement = place_weights(program, MemorySource(weights[dtype]), inputs)
        row: dict[str, Any] = {"chips": chips, "dtype": dtype}
        with tempfile.TemporaryDirectory(prefix="tp-iree-bench-") as tmp:
            cache = iree_exec.ModuleCache(Path(tmp), target)
            cold = iree_exec.run_iree(program, placement.values, placement.placed, cache)
            warm = iree_exec.run_iree(program, placement.values, placement.placed, cache)
            resident = resident_step(program, placement.values, placement.placed, cache)
            for name, flags in variants:
                tuned = replace(
                    target, flags=tuple(f for f in (*target.flags, *flags) if f != UNTUNED)
                )
                other = resident_step(
                    program,
                    placement.values,
                    placement.placed,
                    iree_exec.ModuleCache(Path(tmp), tuned, tuned=UNTUNED not in flags),
                )
                steps[(dtype, name)] = lambda other=other: other.run()["hidden_states"]
                row[f"copies_{name}"] = other.copies
        steps[(dtype, "interp")] = lambda program=program, placement=placement: run_program(
            program, placement.values, placement.placed
        )["hidden_states"]
        steps[(dtype, "IREE")] = lambda resident=resident: resident.run()["hidden_states"]
        if jax_qwen3.available():
            jstep = jax_qwen3.layer_step(
                weights[dtype],
                chips,
                heads=BASE.heads,
                kv_heads=BASE.kv_heads,
                head_dim=BASE.head_dim,
            )
            state = [inputs["past_key.0"], inputs["past_value.0"]]

            def jax_run(jstep=jstep, state=state, x=inputs["hidden_states"]) -> Any:
                out, state[0], state[1] = jstep(x, state[0], state[1], position)
                return out

            steps[(dtype, "JAX")] = jax_run
        row.update(
            cold=cold.compile_s,
            warm=warm.compile_s,
            calls=resident.calls,
            copies=resident.copies,
        )
        rows.append(row)
        del placement
        gc.collect()

    def plain() -> np.ndarray:
        return baseline_step(
            weights["f32"],
            inputs,
            position,
            heads=BASE.heads,
            kv_heads=BASE.kv_heads,
            head_dim=BASE.head_dim,
        )[0]

    steps[("f32", "numpy")] = plain
    want = np.asarray(plain(), np.float64)
    times: dict[tuple[str, str], list[float]] = {k: [] for k in steps}
    errors = {k: _rel(fn(), want) for k, fn in steps.items()}  # a first run, not timed
    for _ in range(reps):
        for key, fn in steps.items():
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    for row in rows:
        row["numpy"] = _median(times[("f32", "numpy")])
        row["min"] = {"numpy": min(times[("f32", "numpy")])}
        for (d, col), ts in times.items():
            if d == row["dtype"]:
                row[col] = _median(ts)
                row["min"][col] = min(ts)
                row[f"err_{col}"] = errors[(d, col)]
    return rows


def _ms(row: dict[str, Any], col: str) -> str:
    return f"{row[col] * 1e3:7.1f}" if col in row else "      -"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def report(rows: list[dict[str, Any]], reps: int, position: int, iree: list[str]) -> None:
    """The tables: times (ms) and compile times, then each IREE column's ratios."""
    by = {(r["chips"], r["dtype"]): r for r in rows}
    cols = ["interp", *iree, "numpy", "JAX"]
    print(
        f"qwen3-8b decode layer (hidden 4096, 32/8 heads, head_dim 128, intermediate 12288), "
        f"batch 1, position {position} of 2048; step medians of {reps} interleaved runs, ms"
    )
    print(
        "  N  weights "
        + " ".join(f"{c:>7s}" for c in cols)
        + "  compile cold   warm  calls copies  max rel err vs numpy"
    )
    for r in rows:
        errs = " ".join(
            f"{c} {r[f'err_{c}']:.0e}" for c in cols if f"err_{c}" in r and c != "numpy"
        )
        copies = "/".join(str(r[k]) for k in ["copies", *(f"copies_{c}" for c in iree)] if k in r)
        print(
            f"{r['chips']:3d}  {r['dtype']:>7s} "
            + " ".join(_ms(r, c) for c in cols)
            + f"  {r['cold']:10.2f} s {r['warm']:5.2f} s {r['calls']:5d} {copies:>6s}  {errs}"
        )
    print("minima of the same runs, ms (a step with the least interference)")
    for r in rows:
        print(f"{r['chips']:3d}  {r['dtype']:>7s} " + " ".join(_ms(r["min"], c) for c in cols))
    print("ratios, of the medians | of the minima (bf16/f32: over the f32 step of the column)")
    print(
        "  N  weights  "
        + "  ".join(f"{c + '/numpy':>18s} {c + '/JAX':>14s} {c + ' bf16/f32':>16s}" for c in iree)
    )
    for r in rows:
        f32 = by.get((r["chips"], "f32"))
        parts = []
        for c in iree:
            cells = []
            for t, t32 in ((r, f32), (r["min"], f32 and f32["min"])):
                bf = _ratio(t.get(c), t32.get(c)) if r["dtype"] != "f32" and t32 else "-"
                cells.append((_ratio(t.get(c), t.get("numpy")), _ratio(t.get(c), t.get("JAX")), bf))
            parts.append(
                " ".join(
                    f"{cells[0][i] + ' | ' + cells[1][i]:>{w}s}" for i, w in enumerate((18, 14, 16))
                )
            )
        print(f"{r['chips']:3d}  {r['dtype']:>7s}  " + "  ".join(parts))


def _load() -> str:
    """The machine's 1-minute load average: other work on the cores shows in every column."""
    return f"{os.getloadavg()[0]:.1f}"


UNTUNED = "untuned"
"""A variant's item: built without the tuning spec tp's CPU builds take."""


def _variant(text: str) -> Variant:
    """``NAME=ITEM ...``: ``untuned`` (without `tp_dialect.runtime.iree_tuning`'s tuning
    spec) or an IREE compile flag."""
    name, _, items = text.partition("=")
    return name, tuple(items.split())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.backends", description=__doc__)
    parser.add_argument("--chips", default="1,2,4,8", help="chip counts (default 1,2,4,8)")
    parser.add_argument("--dtypes", default="f32,bf16", help="weight types (default f32,bf16)")
    parser.add_argument("--reps", type=int, default=7, help="interleaved runs (default 7)")
    parser.add_argument("--position", type=int, default=2047, help="decode position")
    parser.add_argument(
        "--iree-flag", action="append", default=[], help="an extra IREE compile flag"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="another IREE column, NAME='ITEM ...': untuned (without the bf16 tuning spec) or "
        "an IREE compile flag",
    )
    args = parser.parse_args(argv)
    try:
        iree_exec.iree()
    except iree_exec.IreeError as err:
        raise SystemExit(f"benchmarks.backends: error: {err}") from None
    chip_counts = [int(c) if c.isdigit() else -1 for c in args.chips.split(",")]
    dtypes = args.dtypes.split(",")
    if not set(chip_counts) <= {1, 2, 4, 8}:
        parser.error(f"--chips {args.chips}: qwen3-8b's 8 KV heads split over 1, 2, 4 or 8")
    if not set(dtypes) <= {"f32", "bf16"}:
        parser.error(f"--dtypes {args.dtypes}: f32 and/or bf16")
    if args.reps < 1 or not 0 <= args.position < BASE.max_positions:
        parser.error(f"--reps at least 1, --position 0..{BASE.max_positions - 1}")
    target = replace(iree_exec.CPU, flags=(*iree_exec.CPU.flags, *args.iree_flag))
    load = _load()
    print(
        f"threads: numpy and the interpreter 1 ({os.environ['OPENBLAS_NUM_THREADS']} BLAS "
        f"thread), IREE local-task and XLA every core ({os.cpu_count()}); IREE flags "
        f"{' '.join(target.compile_flags)}"
    )
    if not jax_qwen3.available():
        print("JAX is not installed: its column is skipped (pip install -e '.[bench]')")
    bf16 = random_weights(_programs(1, "bf16"), seed=0)
    weights = {"bf16": bf16, "f32": {k: v.astype(np.float32) for k, v in bf16.items()}}
    rows = []
    variants = [_variant(v) for v in args.variant]
    for chips in chip_counts:
        rows += measure(chips, dtypes, args.reps, args.position, weights, variants, target)
        gc.collect()
    report(rows, args.reps, args.position, ["IREE", *(v[0] for v in variants)])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak RSS {peak:.1f} GiB; load average {_load()} (at start {load})")


if __name__ == "__main__":
    main()
