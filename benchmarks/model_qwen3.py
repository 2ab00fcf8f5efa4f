"""Modelled qwen3-8b decode step (batch 1, bf16 weights, 2048 cache positions) on 1, 2, 4, 8
sn40l chips: the seed's fold and a ring all-reduce in phase mode, ``auto`` all-reduces
(tp-relocate picks per all-reduce by the machine model) in phase and dataflow mode, against
the physical bound; the ratio to it, the speedup over one chip, the modelling time per layer,
and where the dataflow step's time goes (its critical path). Then the prefill of a prompt of
S tokens (the whole model's ``@prefill`` step, 36 layers, as `benchmarks.serving` writes
it; no LM head) in dataflow mode, sequence-parallel where the model says it pays
(tp-sequence-parallel's ``auto``), fused as the sn40l shim allows (tp-fuse), with ``auto``
all-reduces: its modelled time to first token against its compute bound.
``--dry-run`` semantics: shapes only. Each program is generated and parsed once per chip
count and lowered in this process.

``python -m benchmarks.model_qwen3 36 [--json FILE] [--prefill-tokens 2048] [--chips 1,2,4,8]
[--wire bf16|int8]`` (``--wire``: tp-narrow-wire before tp-relocate, collectives in bf16;
int8: the all-gathers sn40l-int8's matmuls read in int8, the rest in bf16);
``--json``
writes ``{"prefill": {N: {"ttft_s", "compute_bound_s", "schedule"}}, "decode": {N:
{"step_s", "bound_s"}}}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp

from benchmarks import serving
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.machine import MACHINES
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes.universe import lowered as lower
from tp_dialect.runtime.model import ModelReport, model
from tp_dialect.scatter_ops import AllGatherOp
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

AUTO = "auto machine=sn40l"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def prefill(
    chips: int, tokens: int, narrow: str = "", fuse: bool = True, sequence: bool = True
) -> tuple[ModelReport, str, float]:
    """The modelled prefill of ``tokens`` tokens of the whole qwen3-8b (`serving`'s program,
    no LM head) on ``chips`` sn40l chips, dataflow mode: sequence parallelism where the model
    says it pays (``sequence``: tp-sequence-parallel's ``auto``), its partials in the tiles
    the pass picks when the modelled step is faster so than untiled (its estimate weighs one
    all-reduce at a time), the program inlined first (tp-inline) when that is faster (the
    region then crosses the layers, and tp-fuse sees the layers' statements), its
    statements fused as the sn40l shim allows (``fuse``: tp-fuse, so a chip's attention
    keeps its scores on chip), ``auto`` all-reduces: its report, the schedule (what of these
    it took, and the algorithms tp-relocate's ``auto`` wrote on its all-reduces) and the
    seconds writing, lowering and modelling took."""
    t0 = time.perf_counter()
    source = serving.step_program("prefill", tokens, chips)
    best: tuple[ModelReport, str] | None = None
    # As written (`@layer` called per layer), untiled, and inlined (tp-inline: one function,
    # so the region crosses the layers and tp-fuse sees every statement).
    variants = [("", 0), ("", 1), ("tp-inline,", 0)] if sequence else [("", 1)]
    for inline, tiles in variants:
        module = lower(source, inline) if inline else source
        if sequence:  # first: tp-narrow-wire then narrows its reduce-scatters and gathers
            module = lower(module, f"tp-sequence-parallel{{machine=sn40l tiles={tiles}}}")
        made = _tiles(module)
        if not inline and tiles == 1 and best is not None and "tiles" not in best[1]:
            continue  # the pass chose no tiles: the same program
        fused = "tp-fuse{shim=sn40l}," if fuse else ""
        relocated = lower(module, f"{narrow}{fused}tp-relocate{{allreduce={AUTO}}}")
        picked = {op.algorithm_name for op in relocated.walk() if isinstance(op, AllReduceOp)}
        programs = lower(relocated, "tp-transfers,tp-link-points")
        report = model(programs, MACHINES["sn40l"], "dataflow")[0]
        how = ["dataflow"] + (["inlined"] if inline else []) + (["fused (sn40l)"] if fuse else [])
        if any(isinstance(op, AllGatherOp) for op in module.walk()):
            how += [f"sequence-parallel in {made} tiles" if made > 1 else "sequence-parallel"]
        schedule = f"{', '.join(how)}, {'+'.join(sorted(picked)) or 'no'} all-reduces"
        if best is None or report.step_time < best[0].step_time:
            best = (report, schedule)
    assert best is not None
    return best[0], best[1], time.perf_counter() - t0


def _tiles(module: ModuleOp) -> int:
    """How many all-gathered tiles a value of ``module`` is joined from (1: none)."""
    return max(
        (
            len(op.inputs)
            for op in module.walk()
            if isinstance(op, tensor.ConcatOp)
            and all(isinstance(v.owner, AllGatherOp) for v in op.inputs)
        ),
        default=1,
    )


def main(
    layers: int = 36,
    chip_counts: tuple[int, ...] = (1, 2, 4, 8),
    json_path: str | None = None,
    prefill_tokens: int = 2048,
    wire: str | None = None,
) -> None:
    # tp-narrow-wire first where asked: all-reduces carry bf16 (their readers read bf16)
    # int8 is what sn40l-int8's matmuls read: its shim says where (bf16 elsewhere).
    shim = " shim=sn40l-int8" if wire == "int8" else ""
    narrow = f"tp-narrow-wire{{wire={wire}{shim}}}," if wire else ""
    ctx = tp_context()
    figures: dict[str, dict[str, dict[str, object]]] = {"prefill": {}, "decode": {}}
    machine = MACHINES["sn40l"]
    print(
        f"qwen3-8b, {layers} layer(s), batch 1, bf16 weights, 2048 cache positions, "
        f"all-reduces in {wire or 'f32'}, on sn40l "
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
            relocate = f"{narrow}tp-relocate{{allreduce={algorithm}}},tp-transfers"
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
            f"{path.get('queued_hops', 0)} queued), weights awaited "
            f"{_ms(float(path.get('prefetch_s', 0.0)))}; physical bound = "
            f"{'max' if flow.physical.overlapped else 'sum'} of HBM "
            f"{_ms(flow.physical.hbm_s)} and {flow.physical.allreduce_count} all-reduces' "
            f"chain {_ms(flow.physical.link_s)}; top of the path (ms): {top}"
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
    for n, r, _ in rows:
        flow = r["auto/dataflow"]
        figures["decode"][str(n)] = {"step_s": flow.step_time, "bound_s": flow.physical_bound}
    if prefill_tokens:
        print()
        print(
            f"prefill of {prefill_tokens} tokens (the whole model, 36 layers, no LM head), "
            "dataflow, fused as the sn40l shim allows (tp-fuse), auto all-reduces:"
        )
        print("| N | TTFT | compute bound | ratio | binding | schedule | model time |")
        print("|---|---|---|---|---|---|---|")
        for n in chip_counts:
            report, schedule, seconds = prefill(n, prefill_tokens, narrow)
            bound = report.compute.seconds
            figures["prefill"][str(n)] = {
                "ttft_s": report.step_time,
                "compute_bound_s": bound,
                "schedule": schedule,
            }
            print(
                f"| {n} | {_ms(report.step_time)} | {_ms(bound)} | "
                f"{report.step_time / bound:.2f}x | {report.bound.binding} | {schedule} | "
                f"{seconds:.1f} s |",
                flush=True,
            )
    if json_path:
        with open(json_path, "w") as out:
            json.dump(figures, out, indent=1)


def cli(argv: Sequence[str] | None = None) -> None:
    """``python -m benchmarks.model_qwen3 [layers] [--json FILE] [--prefill-tokens S]``."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.model_qwen3")
    p.add_argument("layers", nargs="?", type=int, default=36)
    p.add_argument("--json", help="also write the figures as JSON here")
    p.add_argument(
        "--prefill-tokens", type=int, default=2048, help="the prompt's tokens S (0: no prefill)"
    )
    p.add_argument("--chips", default="1,2,4,8", help="the chip counts N, comma-separated")
    p.add_argument(
        "--wire",
        choices=["bf16", "int8"],
        help="collectives carry this format where their readers read it (tp-narrow-wire)",
    )
    args = p.parse_args(argv)
    chips = tuple(int(n) for n in args.chips.split(","))
    main(args.layers, chips, args.json, args.prefill_tokens, args.wire)


if __name__ == "__main__":
    cli()
