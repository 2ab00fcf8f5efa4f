"""tp-sequence-parallel{mode=auto|on tiles=0 machine=sn40l report=false}: the work after an
all-reduce that goes row by row runs on each chip's block of the rows (Megatron-LM's sequence
parallelism), and the partials' exchange hides under their contraction, tile by tile.

Invariant: an all-reduce whose sum feeds spine work that treats one axis row by row (the
residual add, an RMSNorm's sum of squares and scaling: elementwise ops and ``linalg.generic``s
reading that axis by one parallel loop) becomes a ``tp.reduce_scatter`` along that axis; that
work is done once per chip on the chip's block of rows (its other operands windowed to the
block: the residual stream's rows, an init made afresh; a norm's weight, which has no such
axis, read whole), and each value the rest of the program reads whole is assembled by a
``tp.all_gather`` where it is made. Two all-reduces whose row-wise work meets (a layer's two
residual adds) share one region. Every chip computes each of its rows exactly as the spine did
(the same ops on the same values), so the numbers are the source's to f32 rounding, bitwise
with the default reduce-scatter; the certificate is checked again and stamped anew (the
all-gather rule: each block holds its rows).

The axis of each all-reduce is the one (of at least N positions, so every chip has a row)
along which the most work goes row by row: a prefill's tokens. A decode step has one token: its
only such axis is the hidden one, where an RMSNorm ends the region at once. ``mode=on`` takes
every all-reduce with a region; ``mode=auto`` (the default) takes a function's regions only
when the model (`tp_dialect.analysis.timing.cost`, on ``machine=``) says they pay: the rows'
work on 1/N of the rows, a reduce-scatter and an all-gather per value read whole, against the
all-reduces (each its cheapest algorithm) and the work on every row, every chip.
``report=true`` prints both estimates per function. ``tiles=K`` cuts the rows into K tiles
(`row_pieces`): each partial made and reduce-scattered tile by tile, so that a tile's exchange
crosses the links while the chip computes the next, and what reads the gathered tiles row by
row reads them tile by tile (`tile_readers`); ``tiles=0`` (the default) chooses K by a
pipeline estimate (`tiles_for`). A certified program the rewrite would leave uncertified is
put back as it was, with a line saying why. Runs on statements, before tp-relocate; a
function of several blocks is refused where it branches.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.rows import Rows, plan
from tp_dialect.analysis.timing.cost import (
    Cost,
    all_gather_time,
    allreduce_time,
    best_allreduce,
    nbytes,
    op_cost,
    reduce_scatter_time,
)
from tp_dialect.certificate import drop, status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import stated_chips
from tp_dialect.machine import Machine, MachineError, machine_from
from tp_dialect.names import value_name
from tp_dialect.ops import SectionOp
from tp_dialect.passes.preconditions import every_function
from tp_dialect.passes.row_pieces import RowRewrite, tileable
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.scatter_ops import DIRECT

TILES = (1, 2, 4, 8)
"""The tile counts ``tiles=0`` (chosen by cost) weighs."""


def tiles_for(rows: Rows, n: int, machine: Machine) -> tuple[int, dict[int, float]]:
    """The tile count (of `TILES`, every tile at least ``n`` rows) with the least modelled
    time of each all-reduce's partials and reduce-scatter, and every candidate's: K tiles of
    the partials' contraction (each tile its 1/K of the FLOPs and of the rows it reads, and
    all of what it reads whole: the weights) and of the reduce-scatter (each tile's ``l``)
    run as a pipeline, ``g + (K-1) max(g, l) + l``, each tile's exchange under the next
    tile's contraction; 1 when a partial is not one contraction read by its all-reduce
    alone (`row_pieces.tileable`)."""
    times: dict[int, float] = {}
    for k in TILES:
        total = 0.0
        for seed in rows.seeds:
            t = seed.result.type
            assert isinstance(t, TensorType)
            shape = list(t.get_shape())
            axis = rows.axis[seed.result]
            if shape[axis] < k * n or (k > 1 and not tileable(seed, axis)):
                total = float("inf")
                break
            g = max((_tile_time(p, axis, k, machine) for p in seed.partials), default=0.0)
            shape[axis] = -(-shape[axis] // k)
            tile = TensorType(t.element_type, shape, t.encoding)
            link = reduce_scatter_time(DIRECT, tile, n, machine)
            total += g + (k - 1) * max(g, link) + link
        times[k] = total
    return min(times, key=lambda k: (times[k], k)), times


def _tile_time(partial: SSAValue, axis: int, k: int, machine: Machine) -> float:
    """One of ``k`` tiles of the contraction making ``partial`` (rows along ``axis``)."""
    op = partial.owner
    if not isinstance(op, linalg.GenericOp):
        return 0.0
    whole = op_cost(op)
    d = [m.data for m in op.indexing_maps][-1].results[axis]
    fixed = sum(
        nbytes(v.type)
        for v, m in zip(op.inputs, op.indexing_maps, strict=False)
        if not any(d == e for e in m.data.results)
    )
    return Cost(whole.flops / k, fixed + (whole.bytes - fixed) / k).time(machine)


def estimate(rows: Rows, n: int, machine: Machine) -> tuple[float, float]:
    """Modelled time of the region's collectives and work as it stands (all-reduces, each its
    cheapest algorithm; the work on every row) and sequence-parallel (a reduce-scatter per
    all-reduce, an all-gather per value read whole; the work on 1/N of the rows)."""
    work = sum(op_cost(op).time(machine) for op in rows.ops)
    before = work + sum(
        allreduce_time(best_allreduce(s.result.type, n, machine)[0], s.result.type, n, machine)
        for s in rows.seeds
    )
    after = work / n
    after += sum(reduce_scatter_time(DIRECT, s.result.type, n, machine) for s in rows.seeds)
    after += sum(all_gather_time(DIRECT, v.type, n, machine) for v in rows.exits())
    return before, after


@dataclass(frozen=True)
class TpSequenceParallel(ModulePass):
    """Run the row-wise work after each all-reduce on each chip's block of the rows, between
    a reduce-scatter and an all-gather (``mode=on``), or where the model says it pays
    (``mode=auto``, on ``machine=``; ``report=true`` prints the estimates)."""

    name = "tp-sequence-parallel"

    mode: Literal["auto", "on"] = "auto"
    tiles: int = 0
    machine: str = "sn40l"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode not in ("auto", "on"):
            raise TpDiagnostic(None, f"{self.name}: mode={self.mode} is not one of auto, on")
        if not 0 <= self.tiles <= max(TILES):
            raise TpDiagnostic(
                None, f"{self.name}: tiles={self.tiles} is not 0 (by cost) or 1..{max(TILES)}"
            )
        try:
            machine = machine_from(self.machine)
        except MachineError as err:
            raise TpDiagnostic(None, f"{self.name}: {err}") from None
        n = stated_chips(op) or 1
        for inner in op.walk():
            if isinstance(inner, SectionOp | ChipProgramOp):
                raise TpDiagnostic(
                    inner, f"{self.name} runs on statements: run it before tp-relocate"
                )
        if n < 2:
            return
        every_function(op, self.name)  # one block each: a located refusal otherwise
        certified = status(op) == "valid"
        original = op.clone() if certified else None
        changed = False
        for func in [f for f in op.walk() if isinstance(f, FuncOp) and f.body.blocks]:
            rows = plan(func, n)
            if rows is None:
                continue
            before, after = estimate(rows, n, machine)
            take = self.mode == "on" or after < before
            if self.report:
                print(
                    f"{self.name}: @{func.sym_name.data}: {len(rows.seeds)} all-reduce(s), "
                    f"{len(rows.ops)} row-wise op(s), {len(rows.exits())} gathered; "
                    f"{before * 1e6:.2f} us as it is, {after * 1e6:.2f} us sequence-parallel "
                    f"({machine.name}) -> {'sequence-parallel' if take else 'kept'}",
                    file=sys.stderr,
                )
            if take:
                tiles = self.tiles
                if tiles == 0:
                    tiles, times = tiles_for(rows, n, machine)
                    if self.report:
                        listed = ", ".join(
                            f"{k}: {t * 1e6:.2f} us" for k, t in times.items() if t < float("inf")
                        )
                        print(
                            f"{self.name}: @{func.sym_name.data}: tiles {listed} -> {tiles}",
                            file=sys.stderr,
                        )
                elif tiles > 1 and (why := _untileable(rows, n, tiles)) is not None:
                    raise TpDiagnostic(rows.seeds[0], f"{self.name}: tiles={tiles}: {why}")
                RowRewrite(rows, n, tiles).run()
                changed = True
        if changed:
            drop(op)
            if original is not None and not certify_if_sound(op):
                _restore(op, original, self.name)


def _untileable(rows: Rows, n: int, tiles: int) -> str | None:
    """Why ``rows``' all-reduces cannot be made in ``tiles`` tiles, or None."""
    for seed in rows.seeds:
        axis = rows.axis[seed.result]
        extent = seed.result.type.get_shape()[axis]  # type: ignore[attr-defined]
        if extent < tiles * n:
            return f"%{value_name(seed.result)} has {extent} rows, fewer than a row per chip a tile"
        if not tileable(seed, axis):
            return (
                f"a partial of %{value_name(seed.result)} is not one contraction read by its "
                "all-reduce alone, so it cannot be made tile by tile"
            )
    return None


def _restore(module: ModuleOp, original: ModuleOp, name: str) -> None:
    """Put ``original`` (certified) back in place of what would not be certified, saying why:
    a certified program never leaves the pass uncertified."""
    try:
        check_obligation(module)
        why = "it would not be certified"
    except TpDiagnostic as err:
        why = f"the result would not be certified ({err.message})"
    done = module.body.block
    module.body.detach_block(done)
    done.erase(safe_erase=False)
    kept = original.body.block
    original.body.detach_block(kept)
    module.body.add_block(kept)
    module.attributes.clear()
    module.attributes.update(original.attributes)
    print(f"{name}: kept every all-reduce: {why}", file=sys.stderr)
