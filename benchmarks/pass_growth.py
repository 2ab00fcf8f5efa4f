"""How tp-fuse, tp-verify and the link-point pipeline grow: with the ops of an elementwise chain,
and with the chips of a one-shot all-reduce, measured in one run.

(a) A chain of ``n`` elementwise ops twice over in one two-chip program: on the spine (every
op reads the one before) and chip-local on chip 0 (one fusion candidate of ``n`` ops), timed
through ``tp-fuse`` and ``tp-verify``. (b) A one-shot all-reduce over ``N`` chips (one partial
per chip, its sum added to the input), taken through ``tp-relocate=allreduce=oneshot``,
tp-transfers, tp-phase, tp-link-points and tp-relay; the time of each pass and the size of
the IR written (a one-shot all-reduce moves N(N-1) partials: the output is O(N^2) in
transfers, reported per transfer).

Each pass runs in-process on a module parsed once (parsing and printing are not timed; the
bytes printed are counted), timed in CPU seconds of this process (``time.process_time``: the
machine is shared, and wall time there counts the other workers' load too); figures are
still noisy (one run each).
The growth per doubling is time(2n) / time(n): about 2 is linear, 4 quadratic.
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from tp_dialect.passes import TP_PASSES
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

CHAIN_OPS = (625, 1250, 2500, 5000)
ALLREDUCE_CHIPS = (64, 128, 256, 512, 1024)
ONESHOT = (
    "tp-relocate{allreduce=oneshot}",
    "tp-transfers",
    "tp-phase",
    "tp-link-points",
    "tp-relay",
)


def chain_program(n: int) -> str:
    """A two-chip program holding a spine chain and a chip-0 chain of ``n`` elementwise ops
    each (alternating addf and mulf, each reading the one before and the input); the chip
    chain's end is all-reduced with chip 1's input and both ends are returned."""
    spine, chip, chip1 = "tensor<4xf32>", "tensor<4xf32, #tp.chip<0>>", "tensor<4xf32, #tp.chip<1>>"
    lines = [
        "builtin.module attributes {tp.chips = 2 : i64} {",
        f"  func.func @chain(%x: {spine}, %y: {chip}, %z: {chip1}) -> ({spine}, {spine}) {{",
    ]
    for name, ty, arg in (("s", spine, "%x"), ("c", chip, "%y")):
        prev = arg
        for i in range(n):
            op = "arith.mulf" if i % 2 else "arith.addf"
            lines.append(f"    %{name}{i} = {op} {prev}, {arg} : {ty}")
            prev = f"%{name}{i}"
    lines.append(f"    %r = tp.allreduce %c{n - 1}, %z : {chip}, {chip1} -> {spine}")
    lines.append(f"    func.return %s{n - 1}, %r : {spine}, {spine}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def allreduce_program(n: int, width: int = 4) -> str:
    """An ``n``-chip program: chip c squares its row of ``%w`` (``width`` wide), the partials
    are all-reduced (one ``tp.allreduce``) and the sum is added to ``%x``."""
    full = f"tensor<{n}x{width}xf32>"
    row = f"tensor<1x{width}xf32>"
    part = [f"tensor<1x{width}xf32, #tp.chip<{c}>>" for c in range(n)]
    lines = [
        f"builtin.module attributes {{tp.chips = {n} : i64}} {{",
        f"  func.func @mlp(%x: {row}, %w: {full}) -> {row} {{",
    ]
    for c in range(n):
        lines.append(
            f"    %w{c} = tp.shard %w at #tp.slice<axis = 0, ranges = [({c}, 1)], "
            f"full = [{n}, {width}]> : {full} -> {part[c]}"
        )
        lines.append(f"    %h{c} = arith.mulf %w{c}, %w{c} : {part[c]}")
    operands = ", ".join(f"%h{c}" for c in range(n))
    lines.append(f"    %s = tp.allreduce {operands} : {', '.join(part)} -> {row}")
    lines.append(f"    %out = arith.addf %x, %s : {row}")
    lines.append(f"    func.return %out : {row}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _printed_bytes(module: ModuleOp) -> int:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return len(out.getvalue().encode())


def timed_passes(ctx: Context, text: str, passes: Sequence[str]) -> tuple[list[float], ModuleOp]:
    """Each pass's seconds, applied in turn to ``text`` parsed once, and the module after."""
    module, _ = parse_module(ctx, text, "<pass_growth>")
    times = []
    for spec in passes:
        t0 = time.process_time()
        PassPipeline.parse_spec(TP_PASSES, spec).apply(ctx, module)
        times.append(time.process_time() - t0)
    return times, module


def _growth(seconds: Sequence[float | None]) -> str:
    ratios = [
        f"x{b / a:.2f}" if a and b is not None else "-"
        for a, b in zip(seconds, seconds[1:], strict=False)
    ]
    return " ".join(ratios) or "-"


def _report(
    title: str,
    unit: str,
    sizes: Sequence[int],
    names: Sequence[str],
    rows: Sequence[Sequence[float | None]],
    extra: Callable[[int], str] = lambda i: "",
) -> None:
    print(title, flush=True)
    for i, n in enumerate(sizes):
        cells = ", ".join(
            f"{name} {'-' if t is None else f'{t:6.2f} s'}"
            for name, t in zip(names, rows[i], strict=True)
        )
        print(f"  {n:5d} {unit}: {cells}{extra(i)}", flush=True)
    for j, name in enumerate(names):
        print(f"  growth per doubling, {name}: {_growth([r[j] for r in rows])}")


def chain(sizes: Sequence[int] = CHAIN_OPS) -> None:
    """(a): tp-fuse (reference and sn40l shims) and tp-verify on the chain program."""
    ctx = tp_context()
    names = ["tp-fuse", "tp-fuse{shim=sn40l}", "tp-verify"]
    for spec in names:  # imports and first-use caches: not the passes' cost
        timed_passes(ctx, chain_program(8), [spec])
    rows: list[list[float | None]] = []
    for n in sizes:
        text = chain_program(n)
        rows.append([timed_passes(ctx, text, [spec])[0][0] for spec in names])
    _report("elementwise chain (spine + chip 0, 2 chips)", "ops", sizes, names, rows)


def allreduce(sizes: Sequence[int] = ALLREDUCE_CHIPS) -> None:
    """(b): the one-shot all-reduce through the link-point pipeline, per pass, and the IR
    written per transfer."""
    ctx = tp_context()
    timed_passes(ctx, allreduce_program(4), ONESHOT)  # imports and first-use caches
    rows: list[list[float]] = []
    sizes_out: list[int] = []
    for n in sizes:
        times, module = timed_passes(ctx, allreduce_program(n), ONESHOT)
        rows.append(times)
        sizes_out.append(_printed_bytes(module))
    names = [s.split("{")[0] for s in ONESHOT]

    def extra(i: int) -> str:
        n, size = sizes[i], sizes_out[i]
        return (
            f"; total {sum(rows[i]):6.2f} s; output {size / 1e6:.1f} MB, "
            f"{size / (n * (n - 1)):.0f} B per transfer"
        )

    _report("one-shot all-reduce over N chips", "chips", sizes, names, rows, extra)
    totals = [sum(r) for r in rows]
    print(f"  growth per doubling, total: {_growth(totals)}")
    print(f"  growth per doubling, output bytes: {_growth([float(s) for s in sizes_out])}")


def main(chain_sizes: Sequence[int] = CHAIN_OPS, chips: Sequence[int] = ALLREDUCE_CHIPS) -> None:
    """Both measurements: ``python -m benchmarks.pass_growth [chain|allreduce] [sizes...]``."""
    chain(chain_sizes)
    allreduce(chips)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] in ("chain", "allreduce"):
        sizes = tuple(int(a) for a in args[1:])
        if args[0] == "chain":
            chain(sizes or CHAIN_OPS)
        else:
            allreduce(sizes or ALLREDUCE_CHIPS)
    else:
        main()
