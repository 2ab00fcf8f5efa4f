"""Sums of masked lookups: an all-reduce of the chips' lookups in a table cut by rows.

A vocab-parallel embedding (tp-split's ``embedding_rowwise``) has chip c hold rows
``[o_c, o_c + n_c)`` of a table ``T`` and compute, per point, a masked lookup `check_lookups`
holds to this rule:

**Claim.** Let ``S = Σ_c p_c`` be the all-reduce, and let some ``p_c`` be computed (through
what hands data on unchanged) by a ``linalg.generic`` whose body reads a ``tp.shard`` by
``tensor.extract``. Certification requires, for every chip ``c``:

1. ``p_c`` is such a lookup ``L_c``: one float result; its body reads one ``tp.shard`` of an
   entry argument ``T``, cut along axis ``a`` in one run ``(o_c, n_c)``, by exactly one
   ``tensor.extract`` and nothing else;
2. the extract's index along ``a`` is ``select(in, local, 0)`` with ``local = r - o``,
   ``in = (local >= 0) && (local < n)``, the constants ``o = o_c`` and ``n = n_c`` (the
   shard's run), and the body yields ``select(in, y, 0.0)`` where ``y`` is the extracted
   value, or it widened by ``arith.extf``;
3. the row ``r``, the other indices and the lookups' operands are the same on every chip:
   the same values from outside the body, the same block arguments, the same ops;

and across chips:

4. the runs ``(o_c, n_c)`` of ``T`` along ``a`` are disjoint (``slices-overlap``) and cover
   its axis (``slices-gap``).

Then for every point, exactly one chip holds row ``r`` (when ``r`` is a row of ``T``) and
yields ``T[r, …]`` (widened alike), the others exact zeros, so ``S`` is the unsharded lookup,
bitwise. A lookup breaking 1–3 is refused (``slices-misaligned``); partials of which none is
such a lookup make no claim here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tp_dialect.attrs import chip_of
from tp_dialect.names import value_name
from tp_dialect.ops import ShardOp
from tp_dialect.reject import TpReject

Exact = Callable[[SSAValue], SSAValue]  # a value through what hands data on unchanged


class _Bad(Exception):
    """A partial that reads a shard by lookup but breaks the rule: why."""


def _lookup(op: Operation) -> tuple[tensor.ExtractOp, ...]:
    """The ``tensor.extract``s in ``op``'s body (a lookup has one)."""
    if not isinstance(op, linalg.GenericOp):
        return ()
    return tuple(o for o in op.body.walk() if isinstance(o, tensor.ExtractOp))


def _const(v: SSAValue) -> int | float | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr | FloatAttr):
        return op.value.value.data
    return None


def _is(v: SSAValue, kind: type[Operation]) -> Operation:
    if not isinstance(v.owner, kind):
        raise _Bad(f"%{value_name(v)} is not the mask's '{kind.name}'")  # type: ignore[attr-defined]
    return v.owner


def _mask(extract: tensor.ExtractOp, shard: ShardOp, yielded: SSAValue) -> SSAValue:
    """The row ``r`` chip's lookup reads, once rule 2 holds of ``extract`` and ``yielded``."""
    axis = shard.slice.axis_index
    ((start, size),) = shard.slice.ranges
    safe = _is(extract.indices[axis], arith.SelectOp)
    inside, local = safe.operands[0], safe.operands[1]
    if _const(safe.operands[2]) != 0:
        raise _Bad("the row read where the chip holds none is not 0")
    sub = _is(local, arith.SubiOp)
    if _const(sub.operands[1]) != start:
        raise _Bad(
            f"the row offset is {_const(sub.operands[1])}, not the shard's first row {start}"
        )
    both = _is(inside, arith.AndIOp)
    bounds = {}
    for test in both.operands:
        cmp = _is(test, arith.CmpiOp)
        if cmp.operands[0] is not local:
            raise _Bad("the mask tests another row than the one read")
        bounds[cmp.predicate.value.data] = _const(cmp.operands[1])
    if bounds != {5: 0, 2: size}:  # sge 0, slt n (arith.cmpi's predicate numbers)
        raise _Bad(f"the mask is not 0 <= row - {start} < {size} (the shard's run)")
    masked = _is(yielded, arith.SelectOp)
    if masked.operands[0] is not inside or _const(masked.operands[2]) != 0.0:
        raise _Bad("the body does not yield 0.0 where the chip holds no row")
    value = masked.operands[1]
    if isinstance(value.owner, arith.ExtFOp):
        value = value.owner.input
    if value is not extract.result:
        raise _Bad("the body yields something else than the row it reads")
    return sub.operands[0]


def _same(
    a: SSAValue, b: SSAValue, block_a: Block, block_b: Block, exact: Exact, depth: int = 0
) -> bool:
    """``a`` (in ``block_a``) and ``b`` (in ``block_b``) are the same computation: the same
    outside value (through what hands it on unchanged: each chip program's argument stands
    for the one value the host binds to every chip's), the same block argument, or the same
    op of the same operands."""
    if a is b or exact(a) is exact(b):
        return True
    if isinstance(a, BlockArgument) and isinstance(b, BlockArgument):
        return a.block is block_a and b.block is block_b and a.index == b.index
    oa, ob = a.owner, b.owner
    if not (isinstance(oa, Operation) and isinstance(ob, Operation)) or depth > 32:
        return False
    if oa.parent_block() is not block_a or ob.parent_block() is not block_b:
        return False
    return (
        oa.name == ob.name
        and oa.properties == ob.properties
        and oa.attributes == ob.attributes
        and len(oa.operands) == len(ob.operands)
        and all(
            _same(x, y, block_a, block_b, exact, depth + 1)
            for x, y in zip(oa.operands, ob.operands, strict=True)
        )
    )


def check_lookups(partials: Sequence[SSAValue], at: Operation, exact: Exact) -> None:
    """Raise a `TpReject` (``slices-misaligned``, ``slices-overlap``, ``slices-gap``) when
    the all-reduce at ``at`` sums partials of which some is a lookup in a shard and they
    break the rule of the module docstring."""
    found = []
    for position, partial in enumerate(partials):
        chip = chip_of(partial.type)
        chip = position if chip is None else chip
        op = exact(partial).owner
        reads = _lookup(op) if isinstance(op, Operation) else ()
        shards = [s for r in reads if isinstance(s := exact(r.tensor).owner, ShardOp)]
        found.append((chip, partial, op, reads, shards))
    if not any(shards for *_, shards in found):
        return
    rows: list[tuple[int, int, int]] = []
    first: tuple[linalg.GenericOp, SSAValue, tensor.ExtractOp] | None = None
    table: ShardOp | None = None
    for chip, partial, op, reads, shards in found:
        try:
            if len(reads) != 1 or len(shards) != 1 or len(shards[0].slice.ranges) != 1:
                raise _Bad("it is not one lookup (one tensor.extract) of one run of a shard")
            assert isinstance(op, linalg.GenericOp)
            (extract,), shard = reads, shards[0]
            yielded = op.body.block.last_op
            if len(op.results) != 1 or extract.parent_block() is not op.body.block:
                raise _Bad("a lookup yields one value, read in its body")
            assert yielded is not None
            row = _mask(extract, shard, yielded.operands[0])
            if first is None or table is None:
                first, table = (op, row, extract), shard
            elif exact(shard.source) is not exact(table.source) or not _alike(
                first, (op, row, extract), shard, exact
            ):
                raise _Bad(
                    f"it looks up another table or row than chip {found[0][0]}'s, or "
                    "computes otherwise"
                )
            ((start, size),) = shard.slice.ranges
            rows.append((start, start + size, chip))
        except _Bad as why:
            raise TpReject.SLICES_MISALIGNED.at(
                at, f"the all-reduce sums chip {chip}'s lookup %{value_name(partial)}: {why}"
            ) from None
    assert table is not None
    _cover(at, rows, table.slice.full_shape[table.slice.axis_index])


def _alike(
    a: tuple[linalg.GenericOp, SSAValue, tensor.ExtractOp],
    b: tuple[linalg.GenericOp, SSAValue, tensor.ExtractOp],
    shard: ShardOp,
    exact: Exact,
) -> bool:
    """Two chips' lookups read the same row and columns of the same inputs (rule 3): the same
    values once followed through what hands them on (chip programs' arguments included)."""
    (op_a, row_a, ex_a), (op_b, row_b, ex_b) = a, b
    block_a, block_b = op_a.body.block, op_b.body.block
    axis = shard.slice.axis_index
    return (
        [exact(v) for v in op_a.inputs] == [exact(v) for v in op_b.inputs]
        and op_a.indexing_maps == op_b.indexing_maps
        and op_a.iterator_types == op_b.iterator_types
        and _same(row_a, row_b, block_a, block_b, exact)
        and all(
            _same(x, y, block_a, block_b, exact)
            for i, (x, y) in enumerate(zip(ex_a.indices, ex_b.indices, strict=True))
            if i != axis
        )
    )


def _cover(at: Operation, rows: list[tuple[int, int, int]], size: int) -> None:
    """Rule 4: the chips' rows are disjoint and cover ``[0, size)``."""
    end = 0
    for start, stop, chip in sorted(rows):
        if start < end:
            raise TpReject.SLICES_OVERLAP.at(
                at, f"the all-reduce sums lookups of rows that overlap at row {start} (chip {chip})"
            )
        if start > end:
            raise TpReject.SLICES_GAP.at(
                at, f"the all-reduce sums lookups that miss rows [{end}, {start}) of {size}"
            )
        end = stop
    if end != size:
        raise TpReject.SLICES_GAP.at(
            at, f"the all-reduce sums lookups that miss rows [{end}, {size}) of {size}"
        )
