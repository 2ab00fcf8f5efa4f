"""What it costs to get a whole model's per-chip programs ready on IREE, cold and warm.

tp-gen's outlined 36-layer qwen3-8b decode step on 8 chips is lowered to per-chip programs
and the host's relay and exported as it is (tp-export cuts each per-chip ``@layer`` function
once; one manifest entry per call), and its distinct segments compiled by IREE as one module:
first into an empty module cache (cold), then again (warm: the module from the cache). Printed
per phase: lowering, tp-export, the segments' texts (the cache key), IREE's compile-or-load,
and the counts: entries (what the relay runs), functions written, distinct texts compiled.
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

from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.iree_exec import Device, ModuleCache, compile_entries, iree
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

PIPELINE = "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay"


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
        f"parse + lower {lower_s:.1f} s"
    )
    with tempfile.TemporaryDirectory(prefix="tp-iree-bench-") as where:
        cache = ModuleCache(Path(where))
        for run in ("cold", "warm"):
            t0 = time.perf_counter()
            exported = flat.clone()
            export_module(exported)
            t1 = time.perf_counter()
            manifest = manifest_of(exported)
            funcs = {f.sym_name.data: f for f in exported.ops if isinstance(f, FuncOp)}
            entries = [*manifest["segments"], manifest["host"]]
            t2 = time.perf_counter()
            called = compile_entries(funcs, entries, cache, Device(runtime), {})
            t3 = time.perf_counter()
            distinct = len({id(f) for f in called.values()})
            print(
                f"  {run}: tp-export {t1 - t0:.2f} s, compile-or-load {t3 - t2:.2f} s "
                f"(entries {len(entries)}, functions {len(funcs)}, distinct {distinct}; "
                f"compiled {cache.compiled}, from the cache {cache.hits}); "
                f"ready in {t3 - t0:.2f} s"
            )


if __name__ == "__main__":
    main()
