"""tp-opt vs xdsl-opt: parse + verify + print of the same file, measured in one run.

The ratio is what tp-opt's extra work (source locations, the chip-index check) costs on top
of xDSL's own parse and print.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _best_of(cmd: list[str], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def main(path: Path | None = None) -> None:
    source = path or ROOT / "examples" / "megatron_mlp.mlir"
    xdsl = _best_of([str(BIN / "xdsl-opt"), str(source)])
    tp = _best_of([str(BIN / "tp-opt"), str(source)])
    print(
        f"parse+print {source.name}: xdsl-opt {xdsl:.3f}s, tp-opt {tp:.3f}s, ratio {tp / xdsl:.2f}x"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
