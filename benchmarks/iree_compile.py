"""What it costs to get a whole model's per-chip programs ready on IREE, cold and warm.

tp-gen's outlined 36-layer qwen3-8b decode step on 8 chips is lowered to per-chip programs
and the host's relay, inlined (tp-export cuts flat programs), exported, and its distinct
segments compiled by IREE as one module: first into an empty module cache (cold), then again
(warm: every module from the cache). Printed per phase: lowering, tp-export, the segments'
texts (the cache keys), IREE's compile-or-load, and the segment counts (segments differing
only in names are one text: a layer's segments are compiled once for all 36 layers).
No weights are needed. Run: ``python -m benchmarks.iree_compile [--layers L --chips N]``
(a minute or two; needs the ``iree`` extra).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xdsl.dialects.func import FuncOp

from tp_dialect.passes.export import export_module
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.iree_exec import ModuleCache, _Device, bundle_text, iree, segment_text
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

PIPELINE = "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay,tp-inline"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="benchmarks.iree_compile")
    p.add_argument("--layers", type=int, default=36)
    p.add_argument("--chips", type=int, default=8)
    args = p.parse_args(argv)
    try:
        _, runtime = iree()
    except Exception as err:  # the extra absent: say so, measure nothing
        print(f"iree_compile: skipped: {err}")
        return
    gen = [sys.executable, "-m", "tp_dialect.tools.tp_gen", "qwen3", "--preset", "qwen3-8b"]
    gen += ["--layers", str(args.layers), "--chips", str(args.chips), "--outline"]
    text = subprocess.run(gen, capture_output=True, text=True, check=True).stdout
    t = time.perf_counter()
    module, _ = parse_module(tp_context(), text, "<tp-gen>")
    flat = lowered(module, PIPELINE)
    lower_s = time.perf_counter() - t
    print(
        f"qwen3-8b decode, {args.layers} layers outlined, N = {args.chips}: "
        f"parse + lower + inline {lower_s:.1f} s"
    )
    with tempfile.TemporaryDirectory(prefix="tp-iree-bench-") as where:
        cache = ModuleCache(Path(where))
        for run in ("cold", "warm"):
            t0 = time.perf_counter()
            exported = flat.clone()
            export_module(exported)
            t1 = time.perf_counter()
            funcs = [f for f in exported.ops if isinstance(f, FuncOp)]
            distinct: dict[str, FuncOp] = {}
            for f in funcs:
                distinct.setdefault(segment_text(f), f)
            t2 = time.perf_counter()
            vmfb = cache.get(bundle_text(list(distinct.values())), "the bundle")
            _Device(runtime).module(vmfb)
            t3 = time.perf_counter()
            print(
                f"  {run}: tp-export {t1 - t0:.1f} s, segment texts {t2 - t1:.1f} s "
                f"({len(funcs)} functions, {len(distinct)} distinct), IREE compile-or-load "
                f"{t3 - t2:.2f} s (compiled {cache.compiled}, from the cache {cache.hits})"
            )


if __name__ == "__main__":
    main()
