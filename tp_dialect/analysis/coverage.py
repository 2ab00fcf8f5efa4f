"""Sums over slices that cover: an all-reduce of contractions over one weight's slices.

Megatron's row-parallel projection sums, over chips, a contraction of each chip's activation
with its slice of the weight cut along the contracted axis; the sum is the unsharded
contraction only when those slices are disjoint and cover that axis. `check_coverage` holds an
all-reduce (or a valid fold) to it: for each partial, the contraction computing it (any linalg
structured op with a reduction iterator), and each operand of it that is a ``tp.shard`` — seen
through what hands data on unchanged: sections, chip programs, links (`values.origin`),
``tensor.cast``, ``linalg.copy``, an identity ``tensor.extract_slice``, calls (into the callee's
return, and back out through its arguments) — gives the ranges of the weight's contracted axes
that chip covers: the slice's ranges on its cut axis, the whole axis on any other. Weights are
the same when they are the same value or entry arguments bound to the same checkpoint name.
Overlapping ranges are refused (``slices-overlap``), uncovered ones too (``slices-gap``), and
so is a shard read in a way whose covered part cannot be proven (a windowing slice, an index
expression other than the loop dimension itself): ``slices-gap``. Partials that are not
contractions over shards (an elementwise chip value, say) make no claim.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import DictionaryAttr, StringAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.traits import SymbolTable

from tp_dialect.analysis.provenance import Solver
from tp_dialect.analysis.values import origin
from tp_dialect.names import value_name
from tp_dialect.ops import ShardOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import NAME_ATTR


@dataclass(frozen=True)
class ContractedSlice:
    """A ``tp.shard`` that a partial's contraction reads, on one axis the contraction sums:
    the ranges of ``weight``'s ``axis`` (of ``size``) that the partial covers; ``unproven``
    says how it is read when its covered part cannot be told."""

    shard: ShardOp
    weight: SSAValue
    axis: int
    size: int
    ranges: list[tuple[int, int]]
    unproven: str | None = None


def _unchanged(value: SSAValue, sends: dict[str, SSAValue]) -> tuple[SSAValue, str | None]:
    """The value ``value`` hands on unchanged, and the op that changed it in a way whose
    effect on a slice cannot be told (None: none met)."""
    calls: list[tuple[func.CallOp, func.FuncOp]] = []
    unproven: str | None = None
    seen: set[SSAValue] = set()
    while value not in seen:
        seen.add(value)
        value = origin(value, sends)
        owner = value.owner
        if isinstance(owner, tensor.CastOp):
            value = owner.source
        elif isinstance(owner, linalg.CopyOp) and len(owner.inputs) == 1:
            value = owner.inputs[0]
        elif isinstance(owner, tensor.ExtractSliceOp):
            if not _identity(owner):
                unproven = unproven or f"'{owner.name}'"
            value = owner.source
        elif isinstance(owner, func.CallOp):
            callee = SymbolTable.lookup_symbol(owner, owner.callee)
            if not isinstance(callee, func.FuncOp) or len(callee.body.blocks) != 1:
                return value, unproven
            ret = callee.body.block.last_op
            if not isinstance(ret, func.ReturnOp):
                return value, unproven
            calls.append((owner, callee))
            value = ret.operands[value.index]  # type: ignore[attr-defined]
        elif (
            isinstance(value, BlockArgument)
            and calls
            and isinstance(owner, Block)
            and owner.parent_op() is calls[-1][1]
        ):
            value = calls.pop()[0].arguments[value.index]
        else:
            return value, unproven
    return value, unproven


def _identity(op: tensor.ExtractSliceOp) -> bool:
    """Whether a slice takes its whole source: offsets 0, strides 1, sizes the source's."""
    shape = tuple(getattr(op.source.type, "get_shape", lambda: ())())
    return (
        not op.offsets
        and not op.sizes
        and not op.strides
        and all(o == 0 for o in op.static_offsets.get_values())
        and all(s == 1 for s in op.static_strides.get_values())
        and tuple(op.static_sizes.get_values()) == shape
    )


def _weight_key(weight: SSAValue) -> object:
    """Entry arguments bound to one checkpoint name are one weight."""
    if isinstance(weight, BlockArgument) and isinstance(f := weight.owner.parent_op(), func.FuncOp):
        attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
        if weight.index < len(attrs) and isinstance(d := attrs[weight.index], DictionaryAttr):
            if isinstance(name := d.data.get(NAME_ATTR), StringAttr):
                return ("checkpoint", name.data)
    return weight


def contracted_slices(partial: SSAValue, solver: Solver) -> Iterator[ContractedSlice]:
    """For each ``tp.shard`` operand of the contraction computing ``partial`` and each axis
    of its weight that the contraction sums: the ranges that partial covers (see the module
    docstring)."""
    sends = solver.sends
    op = _unchanged(partial, sends)[0].owner
    if not isinstance(op, linalg.LinalgStructuredOperation):
        return
    iterators = op.get_iterator_types().data
    reduced = {i for i, it in enumerate(iterators) if it.data == IteratorType.REDUCTION}
    if not reduced:
        return
    for operand, amap in zip(op.inputs, op.get_indexing_maps().data, strict=False):
        value, unproven = _unchanged(operand, sends)
        shard = value.owner
        if not isinstance(shard, ShardOp):
            continue
        weight = _unchanged(shard.source, sends)[0]
        sl = shard.slice
        for axis, expr in enumerate(amap.data.results):
            if isinstance(expr, AffineDimExpr):
                if expr.position not in reduced:
                    continue
                how = unproven
            elif expr.used_dims() & reduced:
                how = f"the index {expr}"  # a strided or shifted read of the contracted axis
            else:
                continue
            size = sl.full_shape[axis]
            ranges = sl.ranges if axis == sl.axis_index else [(0, size)]
            yield ContractedSlice(shard, weight, axis, size, ranges, how)


def check_coverage(partials: Sequence[SSAValue], at: Operation, solver: Solver) -> None:
    """Raise SLICES_OVERLAP / SLICES_GAP when the contractions summed by the all-reduce at
    ``at`` read slices of one weight that overlap on, leave out, or cannot be shown to cover
    the contracted axis (see the module docstring)."""
    held: dict[tuple[object, int], list[tuple[int, int, int]]] = {}  # (start, end, chip)
    sizes: dict[tuple[object, int], int] = {}
    names: dict[tuple[object, int], str] = {}
    for chip, partial in enumerate(partials):
        for cut in contracted_slices(partial, solver):
            what = f"axis {cut.axis} of %{value_name(cut.weight)}"
            if cut.unproven is not None:
                raise TpReject.SLICES_GAP.at(
                    at,
                    f"the all-reduce sums contractions over {what}, but which part of it "
                    f"chip {chip}'s partial sums cannot be proven (it reads its slice through "
                    f"{cut.unproven}): the partials' slices must cover the contracted axis",
                )
            key = (_weight_key(cut.weight), cut.axis)
            sizes[key] = cut.size
            names[key] = what
            held.setdefault(key, []).extend((s, s + n, chip) for s, n in cut.ranges)
    for key, spans in held.items():
        what = names[key]
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
        if reach < sizes[key]:
            raise _gap(at, what, reach, sizes[key])


def _gap(at: Operation, what: str, start: int, end: int) -> Exception:
    return TpReject.SLICES_GAP.at(
        at,
        f"the all-reduce sums contractions over {what}, but no chip holds [{start}, {end}): "
        "the partials' slices must cover the contracted axis, or the sum misses it",
    )
