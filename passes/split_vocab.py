"""tp-split's rules for a vocabulary cut over the chips: an embedding gather from a cut table,
and a greedy argmax over cut logits.

Invariants (each the chips' program computes what the unsharded op computes, bitwise):

- **Gather.** A ``linalg.generic`` whose body reads a captured table cut in one run per chip
  (``embedding_rowwise``: chip c holds rows ``[o_c, o_c + n_c)``) through exactly one
  ``tensor.extract`` becomes, on chip c, the same generic over the chip's rows, masked: with
  ``r`` the extract's index along the cut axis, ``local = r - o_c``, ``in = 0 <= local <
  n_c``, the extract reads row ``select(in, local, 0)`` and the body yields
  ``select(in, y, 0)`` for its yield ``y``. Exactly one chip holds a row in range, so the sum
  of the chips' results, one ``tp.allreduce`` (the results are partial sums), is ``y``: the
  others add exact zeros. The body may compute anything from the row (an ``arith.extf``, a
  scale): the mask is on what it yields.
- **Argmax.** The greedy head's argmax (`tp_dialect.linalg_kinds.argmax`) reading logits cut
  along its reduced loop runs on each chip over the chip's run ``[s_c, s_c + n_c)``, its
  index offset by ``s_c`` (an ``arith.addi`` of a constant in the body, which ``argmax``
  reads back), and one ``tp.maxloc`` of the chips' (max, index) pairs gives the whole
  argmax: the largest value, and on ties the smallest index — the first maximum, as the
  unsharded loop keeps it (each chip keeps its own first maximum; a chip's runs are
  disjoint and cover the axis, and every chip starts from the same initial pair).

Anything else is refused (``cannot-split``), naming the op, the value and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.analysis.split.layouts import Split
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.linalg_kinds import Argmax
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import MaxLocOp


class Walk(Protocol):
    """What these rules use of tp-split's walk (`tp_dialect.passes.split_walk.Splitter`,
    which calls them): named here so that the walk imports the rules, never the reverse."""

    n: int
    cut: dict[SSAValue, Split]
    dead: list[Operation]

    def refuse(self, op: Operation, value: SSAValue, why: str) -> TpDiagnostic: ...
    def chip_type(self, v: SSAValue, chip: int) -> TensorType: ...
    def chip_value(self, v: SSAValue, chip: int) -> SSAValue: ...
    def view(self, v: SSAValue, cut: Split | None, chip: int) -> SSAValue: ...
    def emit(self, op: Operation) -> Operation: ...
    def clone_on(
        self,
        op: Operation,
        chip: int,
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        **properties: Attribute,
    ) -> Operation: ...
    def bind(
        self, op: Operation, per_chip: list[Operation], cuts: Sequence[Split | None]
    ) -> None: ...


def split_gather(s: Walk, op: linalg.GenericOp, captured: list[SSAValue]) -> None:
    """``op``, whose body reads the cut values ``captured``, as the chips' masked gathers
    whose results are partial sums (see the module docstring), or refused."""
    table = captured[0]
    cut = s.cut[table]
    if any(v is not table for v in captured):
        other = next(v for v in captured if v is not table)
        raise s.refuse(op, other, f"its body reads two cut tables (and %{value_name(table)})")
    if any(v in s.cut for v in op.operands):
        v = next(v for v in op.operands if v in s.cut)
        raise s.refuse(op, v, "a gather from a cut table takes whole operands only")
    body = op.body.block
    reads = [u.operation for u in table.uses if op.is_ancestor(u.operation)]
    extract = reads[0]
    if (
        len(reads) != 1
        or not isinstance(extract, tensor.ExtractOp)
        or extract.tensor is not table
        or extract.parent_block() is not body
    ):
        raise s.refuse(
            op,
            table,
            "its body reads the cut table otherwise than by one tensor.extract: only a "
            "gather (an embedding lookup) from a cut table is split",
        )
    if any(len(runs) != 1 for runs in cut.ranges):
        raise s.refuse(op, table, "a gather takes a table cut in one run per chip")
    if len(op.results) != 1 or not _is_float(op.results[0].type):
        raise s.refuse(
            op,
            table,
            "a gather from a cut table is summed over the chips: it must yield one float",
        )
    at = list(body.ops).index(extract)
    per_chip = []
    for c in range(s.n):
        shard = s.chip_value(table, c)  # loaded before the op that reads it
        outs = [s.view(v, None, c) for v in op.outputs]  # each chip writes its own buffer
        made = s.clone_on(op, c, [*op.inputs, *outs], [s.chip_type(r, c) for r in op.results])
        block = made.regions[0].block
        chip_extract = list(block.ops)[at]
        assert isinstance(chip_extract, tensor.ExtractOp)
        start, n = cut.ranges[c][0]
        _mask(block, chip_extract, cut.axis, start, n, shard)
        per_chip.append(made)
    s.bind(op, per_chip, [None])


def _is_float(t: Attribute) -> bool:
    element = t.element_type if isinstance(t, TensorType) else t
    return isinstance(element, BFloat16Type | Float16Type | Float32Type | Float64Type)


def _mask(
    block: Block, extract: tensor.ExtractOp, axis: int, start: int, n: int, shard: SSAValue
) -> None:
    """Chip-local lookup in ``block``: ``extract`` reads ``shard`` at the row it holds (0
    when it holds none), and the yield is 0 where the row is not the chip's."""
    rw = Rewriter()
    index = IndexType()
    row = extract.indices[axis]
    o = arith.ConstantOp(IntegerAttr(start, index))
    size = arith.ConstantOp(IntegerAttr(n, index))
    zero = arith.ConstantOp(IntegerAttr(0, index))
    local = arith.SubiOp(row, o)
    ge = arith.CmpiOp(local, zero, "sge")
    lt = arith.CmpiOp(local, size, "slt")
    inside = arith.AndIOp(ge, lt)
    safe = arith.SelectOp(inside, local, zero)
    for made, hint in (
        (o, "row_start"),
        (size, "rows"),
        (local, "local_row"),
        (inside, "holds_row"),
        (safe, "safe_row"),
    ):
        made.results[0].name_hint = hint
    rw.insert_op([o, size, zero, local, ge, lt, inside, safe], InsertPoint.before(extract))
    indices = [safe.result if i == axis else v for i, v in enumerate(extract.indices)]
    extract.operands = [shard, *indices]
    yielded = block.last_op
    assert isinstance(yielded, linalg.YieldOp)
    y = yielded.operands[0]
    none = arith.ConstantOp(FloatAttr(0.0, y.type))
    masked = arith.SelectOp(inside, y, none)
    masked.result.name_hint = "masked"
    rw.insert_op([none, masked], InsertPoint.before(yielded))
    yielded.operands = [masked.result]


def split_argmax(s: Walk, op: linalg.GenericOp, logits: SSAValue, kind: Argmax) -> None:
    """``op``, the greedy argmax of ``logits`` cut along its reduced loop, as each chip's
    argmax over its run (index offset by the run's start) and one ``tp.maxloc``."""
    cut: Split = s.cut[logits]
    for init in op.outputs:
        if init in s.cut:
            raise s.refuse(op, init, "the argmax's result is cut: it reduces the cut axis away")
    if kind.offset is None:
        raise s.refuse(op, logits, "the argmax's index offset is not a constant")
    if any(len(runs) != 1 for runs in cut.ranges):
        raise s.refuse(
            op, logits, "an argmax over cut logits takes one run per chip (its index offset)"
        )
    per_chip = []
    for c in range(s.n):
        outs = [s.view(v, None, c) for v in op.outputs]
        types = [s.chip_type(r, c) for r in op.results]
        made = s.clone_on(op, c, [s.chip_value(logits, c), *outs], types)
        _offset(made.regions[0].block, kind.offset + cut.ranges[c][0][0])
        for r, whole in zip(made.results, op.results, strict=True):
            r.name_hint = value_hint(f"{value_name(whole)}_c{c}")
        per_chip.append(made)
    value_t, index_t = (r.type for r in op.results)
    maxloc = s.emit(
        MaxLocOp(
            [m.results[0] for m in per_chip],
            [m.results[1] for m in per_chip],
            value_t,  # type: ignore[arg-type]
            index_t,  # type: ignore[arg-type]
        )
    )
    for whole, got in zip(op.results, maxloc.results, strict=True):
        got.name_hint = value_hint(value_name(whole))
        whole.replace_all_uses_with(got)
    s.dead.append(op)


def _offset(block: Block, offset: int) -> None:
    """The argmax body in ``block`` yields ``linalg.index + offset``: its constant offset
    replaced, or an ``arith.addi`` of one added (none when ``offset`` is 0 and there is none)."""
    yielded = block.last_op
    assert isinstance(yielded, linalg.YieldOp)
    pick = yielded.operands[1].owner
    assert isinstance(pick, arith.SelectOp)
    index = pick.lhs
    rw = Rewriter()
    if isinstance(index.owner, arith.AddiOp):
        add = index.owner
        old = add.rhs.owner
        constant = arith.ConstantOp(IntegerAttr(offset, add.rhs.type))
        constant.result.name_hint = "vocab_start"
        rw.insert_op(constant, InsertPoint.before(add))
        add.operands = [add.lhs, constant.result]
        if isinstance(old, arith.ConstantOp) and old.parent is block and not old.result.uses:
            rw.erase_op(old)  # argmax() admits no other op in the body
        return
    if offset == 0:
        return
    constant = arith.ConstantOp(IntegerAttr(offset, index.type))
    constant.result.name_hint = "vocab_start"
    add = arith.AddiOp(index, constant)
    add.result.name_hint = "vocab_index"
    rw.insert_op([constant, add], InsertPoint.before(pick))
    pick.operands = [pick.cond, add.result, pick.rhs]
