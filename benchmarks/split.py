"""tp-split: its cost against parse + print of the same program, how it grows with layers, and
both families' figures after the split.

``python -m benchmarks.split``: qwen3-8b dims at 9, 18 and 36 layers split over 8 chips
(tp-split's time and parse + print's, measured in this process, side by side); then Qwen3
(qwen3-8b) and GPT-2 (gpt2) one layer at N = 2, 4, 8 through tp-relocate and tp-transfers:
sections, transfers and bytes moved per layer.
"""

from __future__ import annotations

import time
from io import StringIO

from xdsl.printer import Printer

from tp_dialect.analysis.schedule.stats import pipeline_stats
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.passes.split import TpSplit
from tp_dialect.passes.universe import lowered
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


def _parse_print(text: str) -> tuple[float, object]:
    """Seconds for parse + print of ``text``, and the parsed module."""
    t0 = time.perf_counter()
    module, _ = parse_module(tp_context(), text, "<bench>")
    out = StringIO()
    Printer(stream=out).print_op(module)
    return time.perf_counter() - t0, module


def _timed_split(text: str, chips: int, plan: str) -> tuple[float, float, float]:
    """Seconds for parse + print of ``text``, for tp-split on it, and for parse + print of
    what tp-split wrote (N copies of each chip's work: the program it is fair to size it by)."""
    pp_in, module = _parse_print(text)
    t0 = time.perf_counter()
    TpSplit(chips=chips, plan=plan).apply(tp_context(), module)  # type: ignore[arg-type]
    split = time.perf_counter() - t0
    out = StringIO()
    Printer(stream=out).print_op(module)  # type: ignore[arg-type]
    pp_out, _ = _parse_print(out.getvalue())
    return pp_in, split, pp_out


def scaling(layers: tuple[int, ...] = (9, 18, 36), chips: int = 8) -> None:
    print(f"tp-split, qwen3-8b dims over {chips} chips (best of 2; parse+print of its input")
    print("and of its output, which holds the chips' copies):")
    print("  layers  p+p input  tp-split  p+p output  split/input  split/output  per layer")
    for n in layers:
        cfg = qwen3.Qwen3Config.preset("qwen3-8b", layers=n).unsharded()
        text = qwen3.generate(cfg)
        runs = [_timed_split(text, chips, "qwen3") for _ in range(2)]
        pin, sp, pout = (min(r[i] for r in runs) for i in range(3))
        print(
            f"  {n:6d}  {pin:8.2f}s  {sp:7.2f}s  {pout:9.2f}s  {sp / pin:10.2f}  "
            f"{sp / pout:11.2f}  {1000 * sp / n:6.1f} ms"
        )


def figures(chips: tuple[int, ...] = (2, 4, 8)) -> None:
    print("after tp-split, tp-relocate, tp-transfers (one layer, batch 1, f32):")
    print("  family  N  sections  transfers  bytes moved")
    sources = {
        "qwen3": (qwen3.generate(qwen3.Qwen3Config.preset("qwen3-8b").unsharded()), "qwen3"),
        "gpt2": (gpt2.generate(gpt2.GPT2Config.preset("gpt2")), "gpt2"),
    }
    for family, (text, plan) in sources.items():
        source, _ = parse_module(tp_context(), text, family)
        for n in chips:
            spec = f'tp-split{{chips={n} plan="{plan}"}},tp-relocate,tp-transfers'
            try:
                module = lowered(source, spec)
            except TpDiagnostic as err:  # 8 chips and GPT-2's 12 heads, say
                print(f"  {family:6s} {n:2d}  refused: {str(err).split(': ', 2)[-1][:70]}")
                continue
            rows = pipeline_stats(module)  # one layer: its rows and the prologue's
            sections = sum(r.sections for r in rows)
            transfers = sum(r.transfers for r in rows)
            moved = sum(r.bytes_moved for r in rows)
            print(f"  {family:6s} {n:2d}  {sections:8d}  {transfers:9d}  {moved / 1024:8.1f} KiB")


def main() -> None:
    scaling()
    figures()


if __name__ == "__main__":
    main()
