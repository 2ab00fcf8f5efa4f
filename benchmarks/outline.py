"""The outlined form against the flat one: qwen3-8b dims on 8 chips at 1, 9 and 36 layers.

``python -m benchmarks.outline [LAYERS ...]``: for each layer count, the flat program (``tp-gen``)
and the outlined one (``tp-gen --outline``: ``@decode`` calling ``@layer`` once a layer), each
measured once, in this process:

- ``gen lines`` / ``tp-gen``: the generated file's lines and the time to write its text;
- ``->phased``: parse + tp-verify, tp-relocate, tp-transfers, tp-phase + print (what
  ``tp-opt`` does, without starting Python), and the printed program's lines;
- ``->relay``: the same run carried on through tp-link-points and tp-relay (parse, every
  pass, print of the per-chip programs; the phased print not counted), its lines and its
  size in kB — the outlined form's per-chip programs call one per-chip function per chip
  once a layer, and its relay writes one layer's rounds once (``tp.relay_repeat``);
- ``gen+relay``: ``tp-gen`` and ``->relay`` together: the issue's "generate and lower to the
  relay" figure;
- ``dry phase`` / ``dry relay``: ``tp-run --dry-run`` (its ``main``, in this process: parse
  and model) in phase mode on the phased program and in relay mode on the per-chip programs.

``--outlined-only`` leaves out the flat rows; ``--skip-flat-relay-above L`` leaves out the flat
relay lowering (and its dry run) above L layers, printing ``skipped``; by default everything
runs once (the flat 36-layer row takes about two minutes of the whole on this 2-core machine).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from tp_dialect.frontend.families import generate
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.passes import TP_PASSES
from tp_dialect.tools import tp_run
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

PHASED = "tp-verify,tp-relocate,tp-transfers,tp-phase"
RELAY = "tp-link-points,tp-relay"
T = TypeVar("T")


def _timed(work: Callable[[], T]) -> tuple[float, T]:
    gc.collect()  # the last measurement's garbage is not this one's to collect
    t0 = time.perf_counter()
    out = work()
    return time.perf_counter() - t0, out


def _print(module: object) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)  # type: ignore[arg-type]
    return out.getvalue()


def _dry_run(path: Path, mode: str) -> float:
    """Seconds for ``tp-run PATH --dry-run --mode MODE`` (its ``main``, output swallowed)."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        seconds, code = _timed(lambda: tp_run.main([str(path), "--dry-run", "--mode", mode]))
    if code != 0:
        raise RuntimeError(f"tp-run --dry-run --mode {mode} {path} failed:\n{sink.getvalue()}")
    return seconds


def row(layers: int, outline: bool, tmp: Path, relay: bool = True) -> dict[str, object]:
    """One line of the table (module docstring), each figure measured once."""
    ctx = tp_context()
    cfg = Qwen3Config.preset("qwen3-8b", layers=layers, chips=8)
    gen_s, text = _timed(lambda: generate(cfg, outline=outline))
    gc.collect()
    t0 = time.perf_counter()
    module, _ = parse_module(ctx, text, "<qwen3-8b>")
    PassPipeline.parse_spec(TP_PASSES, PHASED).apply(ctx, module)
    passes_s = time.perf_counter() - t0
    print_s, phased = _timed(lambda: _print(module))
    name = "outlined" if outline else "flat"
    phased_path = tmp / f"{name}-{layers}-phased.mlir"
    phased_path.write_text(phased)
    out: dict[str, object] = {
        "layers": layers,
        "form": name,
        "gen_lines": text.count("\n"),
        "gen_s": gen_s,
        "phased_s": passes_s + print_s,
        "phased_lines": phased.count("\n"),
        "dry_phase_s": _dry_run(phased_path, "phase"),
    }
    if not relay:
        return out
    relay_s, programs = _timed(
        lambda: (PassPipeline.parse_spec(TP_PASSES, RELAY).apply(ctx, module), _print(module))[1]
    )
    relay_path = tmp / f"{name}-{layers}-relay.mlir"
    relay_path.write_text(programs)
    out |= {
        "relay_s": passes_s + relay_s,
        "gen_relay_s": gen_s + passes_s + relay_s,
        "relay_lines": programs.count("\n"),
        "relay_kb": len(programs.encode()) // 1000,
        "dry_relay_s": _dry_run(relay_path, "relay"),
    }
    return out


def _cell(value: object, width: int) -> str:
    if value is None:
        return f"{'skipped':>{width}}"
    if isinstance(value, float):
        return f"{value:>{width - 2}.2f} s"
    return f"{value!s:>{width}}"


COLUMNS = [
    ("layers", "layers", 6),
    ("form", "form", 8),
    ("gen_lines", "gen lines", 9),
    ("gen_s", "tp-gen", 8),
    ("phased_s", "->phased", 9),
    ("phased_lines", "lines", 7),
    ("relay_s", "->relay", 9),
    ("relay_lines", "lines", 7),
    ("relay_kb", "kB", 6),
    ("gen_relay_s", "gen+relay", 9),
    ("dry_phase_s", "dry phase", 9),
    ("dry_relay_s", "dry relay", 9),
]


def main(
    layer_counts: tuple[int, ...] = (1, 9, 36),
    skip_flat_relay_above: int | None = None,
    outlined_only: bool = False,
) -> None:
    print("qwen3-8b dims, 8 chips, flat vs outlined (each figure measured once, in process):")
    print("  " + "  ".join(f"{title:>{w}}" for _, title, w in COLUMNS))
    with tempfile.TemporaryDirectory() as tmp:
        for layers in layer_counts:
            for outline in (True,) if outlined_only else (False, True):
                skip = not outline and skip_flat_relay_above is not None
                relay = not (skip and layers > skip_flat_relay_above)  # type: ignore[operator]
                r = row(layers, outline, Path(tmp), relay)
                print("  " + "  ".join(_cell(r.get(k), w) for k, _, w in COLUMNS), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", nargs="*", type=int, default=[1, 9, 36])
    parser.add_argument("--skip-flat-relay-above", type=int, default=None)
    parser.add_argument("--outlined-only", action="store_true", help="leave out the flat rows")
    args = parser.parse_args()
    main(tuple(args.layers), args.skip_flat_relay_above, args.outlined_only)
