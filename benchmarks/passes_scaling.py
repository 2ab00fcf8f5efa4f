"""tp-opt's five lowering passes vs xdsl-opt parse+print of the same file, and how the cost
grows with layers (qwen3-8b, 8 chips; 9, 18 and 36 layers), measured in one run.

Each command runs as a fresh process (as a user runs it), best of ``repeat``; the ratio is
(tp-opt with the passes) / (xdsl-opt parse + print) on the same input file.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
PASSES = ["--tp-verify", "--tp-raise-allreduce", "--tp-relocate", "--tp-transfers", "--tp-phase"]


def _best(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def main(layer_counts: tuple[int, ...] = (9, 18, 36), chips: int = 8, repeat: int = 1) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for layers in layer_counts:
            src = Path(tmp) / f"qwen3-8b-{layers}.mlir"
            subprocess.run(
                [
                    str(BIN / "tp-gen"),
                    "qwen3",
                    "--preset",
                    "qwen3-8b",
                    "--layers",
                    str(layers),
                    "--chips",
                    str(chips),
                    "--fold",
                    "-o",
                    str(src),
                ],
                check=True,
            )
            lines = src.read_text().count("\n")
            out = str(Path(tmp) / "out.mlir")
            base = _best([str(BIN / "xdsl-opt"), str(src), "-o", out], repeat)
            tp = _best([str(BIN / "tp-opt"), str(src), *PASSES, "-o", out], repeat)
            rows.append((layers, lines, base, tp))
            print(
                f"qwen3-8b, {chips} chips, {layers:2d} layers ({lines} lines): xdsl-opt "
                f"parse+print {base:6.1f} s, tp-opt + 5 passes {tp:6.1f} s, ratio "
                f"{tp / base:.2f}x, {tp / layers:.2f} s/layer",
                flush=True,
            )
        if len(rows) > 1:
            (l0, _, _, t0), (l1, _, _, t1) = rows[0], rows[-1]
            print(f"growth {l0}->{l1} layers: time x{t1 / t0:.2f} for layers x{l1 / l0:.1f}")


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (9, 18, 36))
