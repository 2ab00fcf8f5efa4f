"""Modelled serving of qwen3-8b (examples/qwen3-8b/config.json: 36 layers, bf16 weights) on
1, 2, 4, 8 sn40l chips: the time to first token (the ``@prefill`` step of a prompt of S = 128
and 2048 tokens) and the time per output token (one ``@decode`` step), batch 1, a KV cache of
2048 positions, each beside its bound — max(compute bound, physical bound), naming the one that
binds — and the ratio. ``--dry-run`` semantics: shapes only, no weights.

Each program is what ``tp-gen --from-pretrained examples/qwen3-8b --step … --chips N`` writes
(outlined: one ``@layer``; N > 1 split by the family's Hugging Face plan), lowered as
``tp-run --dry-run --mode dataflow --allreduce auto`` lowers it (tp-relocate with all-reduces
picked by the machine model, tp-transfers, tp-link-points) and modelled in dataflow mode.

``python -m benchmarks.serving``
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.machine import MACHINES
from tp_dialect.passes.universe import lowered as lower
from tp_dialect.runtime.model import ModelReport, model
from tp_dialect.tools import tp_gen
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

MODEL_DIR = Path(__file__).resolve().parent.parent / "examples" / "qwen3-8b"
POSITIONS = 2048
PIPELINE = 'tp-relocate{allreduce=auto machine="sn40l"},tp-transfers,tp-link-points'
STEPS: tuple[tuple[str, str, int], ...] = (
    ("TTFT S=128", "prefill", 128),
    ("TTFT S=2048", "prefill", 2048),
    ("TPOT", "decode", 1),
)


def step_program(step: str, tokens: int, chips: int) -> ModuleOp:
    """One step program on ``chips`` chips, as the module docstring writes it (unlowered)."""
    argv = ["--from-pretrained", str(MODEL_DIR), "--step", step, "--chips", str(chips)]
    argv += ["--max-positions", str(POSITIONS)]
    argv += ["--prompt-len", str(tokens)] if step == "prefill" else []
    text = tp_gen.pretrained_text(tp_gen.parser().parse_args(argv))
    module, _ = parse_module(tp_context(), text, f"<{step} N={chips}>")
    return module


def modelled(step: str, tokens: int, chips: int) -> tuple[ModelReport, float]:
    """The dataflow-mode report of one step program on ``chips`` sn40l chips, and the
    seconds it took to write, lower and model it."""
    t0 = time.perf_counter()
    programs = lower(step_program(step, tokens, chips), PIPELINE)
    report = model(programs, MACHINES["sn40l"], "dataflow")[0]
    return report, time.perf_counter() - t0


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def main(chip_counts: tuple[int, ...] = (1, 2, 4, 8)) -> None:
    machine = MACHINES["sn40l"]
    print(
        f"qwen3-8b ({MODEL_DIR.name}/config.json, 36 layers), batch 1, bf16 weights, "
        f"{POSITIONS} cache positions, on sn40l ({machine.peak_flops / 1e12:.0f} TFLOPS, "
        f"HBM {machine.hbm_bandwidth / 1e12:.1f} TB/s, link "
        f"{machine.link_bandwidth / 1e9:.0f} GB/s, {machine.link_latency * 1e6:.0f} us "
        "assumed, all-to-all); dataflow mode, auto all-reduces",
        flush=True,
    )
    rows: list[tuple[int, list[ModelReport]]] = []
    for n in chip_counts:
        reports = []
        for label, step, tokens in STEPS:
            report, seconds = modelled(step, tokens, n)
            reports.append(report)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
            print(
                f"N={n} {label}: {_ms(report.step_time)}, bound {_ms(report.bound.seconds)} "
                f"({report.bound.binding}); written, lowered and modelled in {seconds:.1f} s "
                f"(peak memory {peak:.2f} GB)",
                flush=True,
            )
        rows.append((n, reports))
    print()
    head = " | ".join(f"{label} | bound | ratio" for label, _, _ in STEPS)
    print(f"| N | {head} |")
    print("|---|" + "---|---|---|" * len(STEPS))
    for n, reports in rows:
        cells = []
        for r in reports:
            kind = r.bound.binding.removesuffix("-bound")
            cells.append(
                f"{_ms(r.step_time)} | {_ms(r.bound.seconds)} ({kind}) | "
                f"{r.step_time / r.bound.seconds:.2f}x"
            )
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (1, 2, 4, 8))
