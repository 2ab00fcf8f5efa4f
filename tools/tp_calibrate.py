"""tp-calibrate: measure the machine this runs on and write it as a machine file.

``tp-calibrate [-o local.json]`` measures (`tp_dialect.runtime.calibrate`) memory bandwidth,
first touch of new memory and matmul FLOP/s with numpy, link latency and bandwidth with an MPI
ping-pong between two ranks, and the reference interpreter's per-op overhead in a first step;
prints every figure, and writes the machine file atomically (then checks `machine_from` reads
it back), for ``tp-run program.mlir --dry-run --machine local.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from tp_dialect.machine import MachineError, machine_from
from tp_dialect.runtime.calibrate import CalibrationError, local_machine, measure_local
from tp_dialect.tools.common import (
    ToolParser,
    at_least,
    check_writable,
    run_tool,
    write_atomically,
)

# How each figure prints: its label, scale and unit.
_UNITS: dict[str, tuple[str, float, str]] = {
    "peak_flops": ("peak FLOP/s (square f32 matmul)", 1e9, "GFLOP/s"),
    "matvec_flops": ("matvec FLOP/s ([1,K]x[K,N] f32)", 1e9, "GFLOP/s"),
    "matvec_seconds": ("matvec time, measured", 1e-3, "ms"),
    "matvec_model_seconds": ("matvec time, roofline", 1e-3, "ms"),
    "hbm_bandwidth": ("memory bandwidth (best read)", 1e9, "GB/s"),
    "read_bandwidth": ("  sum (read)", 1e9, "GB/s"),
    "copy_bandwidth": ("  copy (read + write)", 1e9, "GB/s"),
    "hbm_bytes": ("memory (RAM)", 1e9, "GB"),
    "sram_bytes": ("largest cache", 1e6, "MB"),
    "link_latency": ("MPI latency (8 B, one way)", 1e-6, "us"),
    "link_bandwidth": ("MPI bandwidth (one way)", 1e9, "GB/s"),
    "barrier_latency": ("MPI barrier (2 ranks)", 1e-6, "us"),
    "host_copy_overhead": ("host copy overhead", 1e-6, "us"),
    "op_overhead": ("per-op overhead (the model's)", 1e-6, "us"),
    "first_touch_bandwidth": ("first touch of new memory", 1e9, "GB/s"),
    "interpreter_op_overhead": ("interpreter per op (first step)", 1e-6, "us"),
    "interpreter_ops": ("  ops in the tiny step", 1.0, ""),
    "interpreter_step_seconds": ("  tiny step", 1e-3, "ms"),
    "max_chips": ("max chips (CPUs)", 1.0, ""),
}


def format_figures(figures: dict[str, float]) -> str:
    """Every figure of ``figures`` on its own line, labelled and in readable units."""
    lines = []
    for key, value in figures.items():
        label, scale, unit = _UNITS.get(key, (key, 1.0, ""))
        lines.append(f"{label:<36} {value / scale:12.3f} {unit}".rstrip())
    return "\n".join(lines)


def parser() -> ToolParser:
    """The command line: the output file, the mpiexec to launch and every measurement size."""
    p = ToolParser(
        prog="tp-calibrate",
        description="Measure this machine and write it as a tp machine file.",
    )
    p.add_argument("-o", "--output", default="local.json", help="the machine file to write")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to launch (default: the venv's)")
    p.add_argument(
        "--memory-mb", type=at_least(1, int), default=256, help="bandwidth array size, MB"
    )
    p.add_argument("--matvec", type=at_least(1, int), default=8192, help="K = N of the matvec")
    p.add_argument(
        "--matmul", type=at_least(1, int), default=1024, help="side of the square matmul"
    )
    p.add_argument(
        "--message-mb",
        type=at_least(0, float, strict=True),
        default=4,
        help="ping-pong bandwidth message",
    )
    p.add_argument(
        "--touch-mb",
        type=at_least(0, float, strict=True),
        default=8,
        help="first-touch buffer, MB (the size of the caches the program's updates copy)",
    )
    p.add_argument(
        "--repeat", type=at_least(1, int), default=5, help="timed runs per figure (best kept)"
    )
    p.add_argument(
        "--ranks",
        type=at_least(1, int),
        default=1,
        help="chips = this many MPI ranks sharing the machine",
    )
    p.add_argument(
        "--timeout",
        type=at_least(0, float, strict=True),
        default=60.0,
        help="ping-pong timeout, seconds",
    )
    return p


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    check_writable(args.output)  # before minutes of measuring
    figures = measure_local(
        mpiexec=args.mpiexec,
        memory_bytes=args.memory_mb << 20,
        matvec_k=args.matvec,
        matvec_n=args.matvec,
        matmul_side=args.matmul,
        message_bytes=int(args.message_mb * (1 << 20)),
        repeat=args.repeat,
        timeout=args.timeout,
        ranks=args.ranks,
        touch_bytes=max(int(args.touch_mb * (1 << 20)), 4),
    )
    print(format_figures(figures))
    write_atomically(args.output, json.dumps(local_machine(figures), indent=1) + "\n")
    machine = machine_from(args.output)
    print(
        f"wrote {args.output} (machine '{machine.name}', a chip = one of {args.ranks} rank(s) "
        "sharing this machine)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print, write the machine file: 0 when it is written and `machine_from` reads
    it back, 1 with one line ``tp-calibrate: error: ...`` otherwise (a bad flag included)."""
    return run_tool("tp-calibrate", _main, argv, (CalibrationError, MachineError))


if __name__ == "__main__":
    sys.exit(main())
