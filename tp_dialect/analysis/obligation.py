"""The shard obligation, checked on any IR at any stage, from chip provenance.

A module meets it when, with every value's `Placement` (analysis/provenance.py):

- nothing is opaque: every op is one the analysis sees through, every call is followed;
- every spine-typed tensor holds no chip's data (an all-reduce over every chip, or the seed's
  valid fold of adds, is the only way chip data reaches the spine), and every chip-typed
  tensor holds only its own chip's data (and the spine's); a scalar, index, memref or vector
  holds at most one chip's data;
- a fold of adds over chip partials is a valid all-reduce (one partial per chip, in chip
  order, no partial sum read by anything but the next add);
- a host output (``tp.unshard``) is only returned;
- work placed on chips (a ``tp.section``, a ``tp.chip_program``) touches only data of its own
  chips, save a collective reading each partial where it lives; a scalar is read only where
  it was computed (scalars do not cross chips);
- every result of an entry function (one no call reaches) is spine or a host output;
- per-chip programs fit together (`analysis/programs.py`: one program a chip, each buffer sent
  once and received as the type it was sent as, never by its own sender);
- an all-reduce whose partials are contractions over ``tp.shard`` slices of one weight sums
  slices that are disjoint and cover the contracted axis.

`check_obligation` raises the first violation, in program order (the contents of a region
before the op holding it), as a `TpReject` diagnostic naming the op, the value and the chip.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType, UnregisteredOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from tp_dialect.analysis.programs import check_programs
from tp_dialect.analysis.provenance import Provenance, Solver
from tp_dialect.analysis.touch import captured
from tp_dialect.analysis.values import defined_within, origin, shard_of
from tp_dialect.attrs import chip_of
from tp_dialect.names import value_name
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp, RelayOp
from tp_dialect.reject import TpReject

_SPINE_RULE = "chip data reaches the spine only through an all-reduce over every chip"
_PASSING = (YieldOp, FinishOp, LinkOp, TransferOp, BarrierOp, func.ReturnOp)


def check_obligation(module: ModuleOp) -> Provenance:
    """The module's provenance, once every rule of the obligation holds; else the first
    violation raised as a TpDiagnostic."""
    for op in module.walk():
        if (
            isinstance(op, func.FuncOp)
            and len(op.body.blocks) == 1  # more blocks mean branches: refused as opaque below
            and any(isinstance(inner, ChipProgramOp) for inner in op.body.block.ops)
        ):
            check_programs(op)  # one program a chip, buffers sent once, received as sent
    prov = Provenance(module)
    called = {op.callee.string_value() for op in module.walk() if isinstance(op, func.CallOp)}
    entries = {
        op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data not in called
    }
    for solver in prov.solvers:
        for op in solver.root.walk(region_first=True):
            _check_op(prov, solver, op, entries)
    for op in module.walk():
        if isinstance(op, AllReduceOp):
            check_coverage(op.partials, op, prov.top)
        elif op in prov.fold_sums:
            check_coverage(prov.fold_of[op].partials, op, prov.top)
    return prov


def _check_op(prov: Provenance, solver: Solver, op: Operation, entries: set[func.FuncOp]) -> None:
    if (why := prov.opaque.get(op)) is not None:
        reason, what = why
        raise reason.at(
            op, f"'{_op_name(op)}' {what}: the shard obligation cannot be checked through it"
        )
    fold = prov.fold_of.get(op)
    if fold is not None and not fold.is_allreduce(prov.n_chips):
        raise fold.refusal(prov.n_chips)
    if not isinstance(op, func.ReturnOp | YieldOp | scf.YieldOp):  # they only hand it on
        for v in op.operands:
            if solver.placement(v).host:
                raise TpReject.HOST_STORE_USED.at(
                    op,
                    f"'{op.name}' computes on %{value_name(v)}, a host output (a tp.unshard's "
                    "result): only the function's return may use it, computing on it would "
                    "move chip data to the spine without an all-reduce",
                )
    parent = op.parent_op()
    if isinstance(parent, linalg.LinalgStructuredOperation) and not isinstance(
        parent, linalg.GenericOp
    ):
        return  # a named op's body (its elements): the op itself is judged, as written
    _check_values(prov, solver, op)
    _check_residency(solver, op)
    if isinstance(op, func.ReturnOp) and op.parent_op() in entries:
        for i, v in enumerate(op.operands):
            p = solver.placement(v)
            if p.chips:
                chip = min(p.chips)
                raise TpReject.CHIP_RESULT.at(
                    op,
                    f"result #{i} {_describe(v, chip)} is chip {chip}'s data: the host gets "
                    "the spine (an all-reduce's sum) or a host store (tp.unshard), never one "
                    "chip's data",
                )


def _check_values(prov: Provenance, solver: Solver, op: Operation) -> None:
    if isinstance(op, SectionOp | ChipProgramOp | ModuleOp | func.FuncOp | RelayOp | UnshardOp):
        # A host store's result is a host output; the others hand on what their bodies
        # compute, which is checked there.
        return
    if op in prov.fold_of:
        return  # a valid fold (an invalid one is refused before): its sums are sanctioned
    for v in op.results:  # a region's block arguments never hold more than its results
        chips = solver.placement(v).chips
        owner = chip_of(v.type)
        if owner is not None:
            if chips - {owner}:
                other = min(chips - {owner})
                raise TpReject.MIXED_CHIPS.at(op, _mixed(op, solver, owner, other, v))
        elif isinstance(v.type, TensorType):
            if chips and v not in prov.partial_sums:
                chip = min(chips)
                raise TpReject.LEAK_TO_SPINE.at(
                    op,
                    f"'{op.name}' computes spine value %{value_name(v)} from "
                    f"{_witness(op, solver, chip)}: {_SPINE_RULE}",
                )
        elif len(chips) > 1:
            a, b = sorted(chips)[:2]
            raise TpReject.MIXED_CHIPS.at(op, _mixed(op, solver, a, b, v))


def _op_name(op: Operation) -> str:
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def _mixed(op: Operation, solver: Solver, a: int, b: int, v: SSAValue) -> str:
    first = _witness(op, solver, a, default=f"%{value_name(v)} on chip {a}")
    return (
        f"'{op.name}' mixes {first} with {_witness(op, solver, b)}: a statement works on "
        "one chip's tensors (and the spine)"
    )


def _describe(v: SSAValue, chip: int) -> str:
    name = f"%{value_name(v)}"
    return f"{name} on chip {chip}" if chip_of(v.type) == chip else f"{name} (chip {chip}'s data)"


def _witness(op: Operation, solver: Solver, chip: int, default: str | None = None) -> str:
    """Where ``op`` gets ``chip``'s data from: an operand, a value its regions capture, or an
    operand of a region op it is nested in (control dependence)."""
    for v in op.operands:
        if chip in solver.placement(v).chips:
            return _origin(v, solver, chip)
    for inner in op.walk():
        for v in inner.operands if inner is not op else ():
            if not defined_within(v, op) and chip in solver.placement(v).chips:
                return f"{_origin(v, solver, chip)}, read inside its region"
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, SectionOp | ChipProgramOp | func.FuncOp):
        for v in parent.operands:
            if chip in solver.placement(v).chips:
                return f"{_origin(v, solver, chip)}, an operand of the enclosing '{parent.name}'"
        parent = parent.parent_op()
    return default or f"chip {chip}'s data"


def _origin(v: SSAValue, solver: Solver, chip: int) -> str:
    """``v`` described; a region's block argument traced to the region op's operand that
    brings ``chip``'s data in (a loop's bound, rather than its iteration argument)."""
    owner = v.owner
    region_op = owner.parent_op() if isinstance(owner, Block) else None
    if region_op is not None and not isinstance(region_op, SectionOp | ChipProgramOp | func.FuncOp):
        for u in region_op.operands:
            if chip in solver.placement(u).chips:
                return f"{_describe(v, chip)} through '{region_op.name}' from {_describe(u, chip)}"
    return _describe(v, chip)


def _where(op: Operation) -> tuple[str, tuple[int, ...]] | None:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, SectionOp):
            return f"its section runs on chips {list(parent.chip_list)}", parent.chip_list
        if isinstance(parent, ChipProgramOp):
            return f"it is in chip {parent.chip_index}'s program", (parent.chip_index,)
        parent = parent.parent_op()
    return None


def _check_residency(solver: Solver, op: Operation) -> None:
    """Work placed on chips touches only their data; a collective reads partials where they
    live; a scalar is read only where its section computed it."""
    if isinstance(op, SectionOp):
        _check_scalars_read(op)
    if isinstance(op, (AllReduceOp, UnshardOp, SectionOp, *_PASSING)):
        return
    where = _where(op)
    if where is None:
        return
    text, chips = where
    for v in (*op.results, *op.operands):
        foreign = solver.placement(v).chips - set(chips)
        if foreign:
            chip = min(foreign)
            verb = "is on" if chip_of(v.type) == chip else "derives from data on"
            raise TpReject.SECTION_CHIP.at(op, f"%{value_name(v)} {verb} chip {chip}, but {text}")


def _check_scalars_read(section: SectionOp) -> None:
    for v in captured(section):
        owner = v.owner
        if isinstance(v.type, TensorType) or not isinstance(owner, SectionOp):
            continue
        missing = sorted(set(section.chip_list) - set(owner.chip_list))
        if missing:
            raise TpReject.SECTION_CHIP.at(
                section,
                f"%{value_name(v)} is computed by a section on chips {list(owner.chip_list)}, "
                f"but is read on chip {missing[0]}: a scalar does not cross chips, so it is "
                "computed wherever it is read",
            )


# -- sums over slices that cover ------------------------------------------------------------


@dataclass(frozen=True)
class ContractedSlice:
    """A ``tp.shard`` that a partial's contraction reads, on one axis the contraction sums:
    the ranges of ``weight``'s ``axis`` (of ``size``) that the partial covers."""

    shard: ShardOp
    weight: SSAValue
    axis: int
    size: int
    ranges: list[tuple[int, int]]


def contracted_slices(partial: SSAValue, solver: Solver) -> Iterator[ContractedSlice]:
    """For each ``tp.shard`` operand of the contraction computing ``partial`` (seen through
    sections, programs and links) and each axis of its weight that the contraction sums: the
    slice's ranges on its cut axis, the whole axis on any other."""
    sends = solver.sends
    op = origin(partial, sends).owner
    if not isinstance(op, linalg.GenericOp):
        return
    reduced = {
        i for i, it in enumerate(op.iterator_types.data) if it.data == IteratorType.REDUCTION
    }
    if not reduced:
        return
    for operand, amap in zip(op.inputs, op.indexing_maps.data, strict=False):
        shard = shard_of(operand, sends)
        if shard is None:
            continue
        weight = origin(shard.source, sends)
        sl = shard.slice
        for axis, expr in enumerate(amap.data.results):
            if isinstance(expr, AffineDimExpr) and expr.position in reduced:
                size = sl.full_shape[axis]
                ranges = sl.ranges if axis == sl.axis_index else [(0, size)]
                yield ContractedSlice(shard, weight, axis, size, ranges)


def check_coverage(partials: Sequence[SSAValue], at: Operation, solver: Solver) -> None:
    """Raise SLICES_OVERLAP / SLICES_GAP when the contractions summed by the all-reduce at
    ``at`` read slices of one weight that overlap on, or leave out part of, the contracted
    axis. Partials that are not contractions over shards make no claim and pass."""
    held: dict[tuple[SSAValue, int], list[tuple[int, int, int]]] = {}  # (start, end, chip)
    sizes: dict[tuple[SSAValue, int], int] = {}
    for chip, partial in enumerate(partials):
        for cut in contracted_slices(partial, solver):
            key = (cut.weight, cut.axis)
            sizes[key] = cut.size
            held.setdefault(key, []).extend((s, s + n, chip) for s, n in cut.ranges)
    for (weight, axis), spans in held.items():
        what = f"axis {axis} of %{value_name(weight)}"
        spans.sort()
        reach = 0
        reacher = -1
        for start, end, chip in spans:
            if start < reach:
                raise TpReject.SLICES_OVERLAP.at(
                    at,
                    f"the all-reduce sums contractions over {what}, and chips {reacher} and "
                    f"{chip} both hold [{start}, {min(end, reach)}): each chip's partial must "
                    "sum its own part of the contracted axis, or the sum counts it twice",
                )
            if start > reach:
                raise _gap(at, what, reach, start)
            reach, reacher = end, chip
        if reach < sizes[(weight, axis)]:
            raise _gap(at, what, reach, sizes[(weight, axis)])


def _gap(at: Operation, what: str, start: int, end: int) -> Exception:
    return TpReject.SLICES_GAP.at(
        at,
        f"the all-reduce sums contractions over {what}, but no chip holds [{start}, {end}): "
        "the partials' slices must cover the contracted axis, or the sum misses it",
    )
