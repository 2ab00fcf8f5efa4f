"""Which all-reduce algorithm wins on which machine: the dataflow-mode step of a 2-layer
program with qwen3-8b dims (batch 1, bf16 weights, 2048 cache positions) over link latency
0.5, 2, 5, 10 us x link bandwidth 25, 64, 200 GB/s x topology all-to-all and ring x N = 2..8
(sn40l otherwise), for each fixed algorithm per-chip programs can hold (fold, oneshot,
twoshot, ring) and for ``auto`` (tp-relocate choosing per all-reduce by the machine model); the
best fixed algorithm and auto's ratio to it.

qwen3-8b's 8 KV heads split over N = 2, 4, 8 only; for N = 3, 5, 6, 7 the program keeps
hidden 4096 and head_dim 128 but takes the nearest dims N divides: ``kv_heads`` the least
multiple of N from 8, 4 query heads per KV head, ``intermediate`` the least multiple of N from
12288 (printed). Each program is generated and parsed once per N, lowered once per fixed
algorithm, and once per distinct choice auto makes (tp-relocate runs per machine; the rest of
the lowering is shared by machines on which it chooses alike).

With ``--prefill S`` the program is instead the whole model's ``@prefill`` of a prompt of S
tokens (qwen3-8b's config.json with ``layers`` layers, no LM head, split by the Hugging Face
plan; `benchmarks.serving` writes it), at N = 2, 4, 8 (the dims qwen3-8b's own heads divide).

``python -m benchmarks.machine_sweep [layers] [--prefill S] [--chips 2,4,8]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from benchmarks import serving
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.frontend.registry import Pretrained, read_model
from tp_dialect.frontend.split import split_text
from tp_dialect.machine import MACHINES, Machine
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes.universe import lowered as lower
from tp_dialect.runtime.model import model
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

LATENCIES = (0.5e-6, 2e-6, 5e-6, 10e-6)
BANDWIDTHS = (25e9, 64e9, 200e9)
TOPOLOGIES = ("all-to-all", "ring")
FIXED = ("fold", "oneshot", "twoshot", "ring")


def config(n: int, layers: int) -> Qwen3Config:
    """qwen3-8b dims for ``n`` chips (the nearest N divides, module docstring)."""
    kv = n * math.ceil(8 / n)
    return Qwen3Config.preset(
        "qwen3-8b",
        layers=layers,
        chips=n,
        dtype="bf16",
        max_positions=2048,
        kv_heads=kv,
        heads=4 * kv,
        intermediate=n * math.ceil(12288 / n),
    )


def machine_file(m: Machine, directory: str) -> str:
    """``m`` as a JSON file tp-relocate's ``machine=`` option reads."""
    path = os.path.join(
        directory, f"m{int(m.link_latency * 1e9)}_{int(m.link_bandwidth / 1e9)}_{m.topology}.json"
    )
    data = {k: v for k, v in dataclasses.asdict(m).items() if k != "name"}
    with open(path, "w") as f:
        json.dump({"base": "sn40l", **data}, f)
    return path


def relocate_auto(module: ModuleOp, machine_path: str) -> ModuleOp:
    """A copy of ``module`` after tp-relocate{allreduce=auto} for the machine in the file."""
    return lower(module, f'tp-relocate{{allreduce=auto machine="{machine_path}"}}')


def choices(module: ModuleOp) -> tuple[str, ...]:
    """The algorithm of every all-reduce, in program order."""
    return tuple(op.algorithm_name for op in module.walk() if isinstance(op, AllReduceOp))


def prefill_text(n: int, layers: int, tokens: int) -> str:
    """The whole qwen3-8b's ``@prefill`` of ``tokens`` tokens, ``layers`` layers, over ``n``
    chips (split by the Hugging Face plan)."""
    model = read_model(serving.MODEL_DIR)
    config = {**model.config, "num_hidden_layers": layers}
    pretrained = Pretrained(model.entry, model.entry.read(config), config)
    text = pretrained.write(pretrained.step("prefill", tokens, 1, tokens, False))
    return split_text(text, n, model.entry.plan) if n > 1 else text


def main(
    layers: int = 2,
    chip_counts: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8),
    prefill_tokens: int = 0,
) -> None:
    ctx = tp_context()
    base = MACHINES["sn40l"]
    machines = [
        dataclasses.replace(base, link_latency=lat, link_bandwidth=bw, topology=top)
        for top in TOPOLOGIES
        for lat in LATENCIES
        for bw in BANDWIDTHS
    ]
    what = (
        f"prefill of {prefill_tokens} tokens, {layers}-layer qwen3-8b (whole model, no LM head)"
        if prefill_tokens
        else f"step of a {layers}-layer qwen3-8b-dims program (bf16, batch 1, 2048 cache positions)"
    )
    print(f"dataflow {what} on sn40l chips with the links below; ms", flush=True)
    rows: list[str] = []
    grid: dict[tuple[str, float, float], dict[int, str]] = {}
    ratios: list[float] = []
    wins = 0
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        files = {m: machine_file(m, tmp) for m in machines}
        for n in chip_counts:
            cfg = config(n, layers)
            t0 = time.perf_counter()
            text = prefill_text(n, layers, prefill_tokens) if prefill_tokens else generate(cfg)
            module, _ = parse_module(ctx, text, "<qwen3>")
            fixed: dict[str, ModuleOp] = {}
            by_choice: dict[tuple[str, ...], ModuleOp] = {}
            for a in FIXED:
                relocated = lower(module, f"tp-relocate{{allreduce={a}}}")
                fixed[a] = lower(relocated, "tp-transfers,tp-link-points")
                by_choice.setdefault(choices(relocated), fixed[a])
            for m in machines:
                times = {a: model(p, m, "dataflow")[0].step_time for a, p in fixed.items()}
                relocated = relocate_auto(module, files[m])
                picked = choices(relocated)
                if picked not in by_choice:
                    by_choice[picked] = lower(relocated, "tp-transfers,tp-link-points")
                auto = model(by_choice[picked], m, "dataflow")[0].step_time
                best = min(times, key=lambda a: (times[a], FIXED.index(a)))
                ratio = auto / times[best]
                ratios.append(ratio)
                wins += ratio <= 1 + 1e-9
                picked_text = "+".join(sorted(set(picked)))
                cell = f"{picked_text} {ratio:.3f}" + ("" if picked_text == best else f" ({best})")
                grid.setdefault((m.topology, m.link_latency, m.link_bandwidth), {})[n] = cell
                rows.append(
                    f"| {m.topology} | {m.link_latency * 1e6:g} | {m.link_bandwidth / 1e9:g} | "
                    f"{n} | "
                    + " | ".join(f"{times[a] * 1e3:.4f}" for a in FIXED)
                    + f" | {best} | {auto * 1e3:.4f} ({picked_text}) | {ratio:.3f} |"
                )
            print(
                f"N={n} (heads {cfg.heads}, kv_heads {cfg.kv_heads}, intermediate "
                f"{cfg.intermediate}): {len(machines)} machines in "
                f"{time.perf_counter() - t0:.1f} s",
                flush=True,
            )
    print()
    print("auto's choice and its time / the best fixed algorithm's (the best, where it differs)")
    print()
    print("| topology | latency us | GB/s | " + " | ".join(f"N={n}" for n in chip_counts) + " |")
    print("|---|---|---|" + "---|" * len(chip_counts))
    for (top, lat, bw), cells in grid.items():
        print(
            f"| {top} | {lat * 1e6:g} | {bw / 1e9:g} | "
            + " | ".join(cells[n] for n in chip_counts)
            + " |"
        )
    print()
    print(
        "| topology | latency us | bandwidth GB/s | N | "
        + " | ".join(FIXED)
        + " | best fixed | auto (its choice) | auto / best |"
    )
    print("|---|---|---|---|" + "---|" * len(FIXED) + "---|---|---|")
    for row in rows:
        print(row)
    print()
    print(
        f"{len(ratios)} machines x N: auto is the best fixed algorithm (or ties it) on {wins}; "
        f"auto / best: median {sorted(ratios)[len(ratios) // 2]:.3f}, worst {max(ratios):.3f}; "
        f"sweep {time.perf_counter() - t_start:.0f} s"
    )


def cli(argv: Sequence[str] | None = None) -> None:
    """``python -m benchmarks.machine_sweep [layers] [--prefill S] [--chips 2,4,8]``."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.machine_sweep")
    p.add_argument("layers", nargs="?", type=int, default=2)
    p.add_argument("--prefill", type=int, default=0, help="a prompt of S tokens (0: decode)")
    p.add_argument("--chips", help="the chip counts N, comma-separated")
    args = p.parse_args(argv)
    default = "2,4,8" if args.prefill else "2,3,4,5,6,7,8"
    chips = tuple(int(n) for n in (args.chips or default).split(","))
    main(args.layers, chips, args.prefill)


if __name__ == "__main__":
    cli()
