"""tp-export's pieces: a segment's ports, the builder writing a chip's ops as plain MLIR, and
the rewrites that leave no tp type or removed op behind (`tp_dialect.passes.export`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    TensorType,
    i64,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.dialects.linalg.abstract_ops import ElementwiseOperation, LinalgStructuredOperation
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    TypeConversionPattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.linalg_generalize_named_ops import GeneralizeNamedOpPattern

from tp_dialect.attrs import ChipAttr
from tp_dialect.ops import AllReduceOp, MaxLocOp, SectionOp, ShardOp, YieldOp
from tp_dialect.reject import TpReject
from tp_dialect.scatter_ops import AllGatherOp


@dataclass(frozen=True)
class PortInfo:
    """What one argument or result of a segment is: ``input`` (a host input, whole, by its
    name), ``shard`` (the chip's slice of a host input: ``axis`` and ``ranges``), ``receive``
    / ``send`` (a link's buffer, by name), ``carry`` (a value of the chip kept between its
    segments, by key), ``output`` (the chip's ``index``-th output; as ``@host``'s argument, of
    ``chip``), ``result`` (``@host``'s result, by the entry function's result name)."""

    kind: str
    name: str = ""
    axis: int | None = None
    ranges: tuple[tuple[int, int], ...] = ()
    index: int | None = None
    chip: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.chip is not None:
            out["chip"] = self.chip
        if self.name:
            out["name"] = self.name
        if self.axis is not None:
            out["axis"] = self.axis
            out["ranges"] = [list(r) for r in self.ranges]
        if self.index is not None:
            out["index"] = self.index
        return out


def refuse(op: Operation, message: str) -> Exception:
    return TpReject.NOT_EXPORTABLE.at(op, f"tp-export: {message}")


def port_type(t: Attribute) -> Attribute:
    """The type a value crosses a segment's boundary as: a tensor as it is, a scalar as a
    0-d tensor (an ``index`` as ``i64``)."""
    if isinstance(t, TensorType):
        return t
    return TensorType(i64 if isinstance(t, IndexType) else t, [])


class SegmentBuilder:
    """One segment's function being written: its block, arguments and value map."""

    def __init__(self) -> None:
        self.block = Block()
        self.mapping: dict[SSAValue, SSAValue] = {}
        self.args: list[Any] = []
        """What each argument stands for (a `PortInfo`, or what a call binds it to)."""

    def add_arg(self, value: SSAValue, port: Any) -> None:
        arg = self.block.insert_arg(port_type(value.type), len(self.block.args))
        arg.name_hint = value.name_hint
        self.args.append(port)
        if isinstance(value.type, TensorType):
            self.mapping[value] = arg
            return
        scalar = self.emit(tensor.ExtractOp(arg, [], port_type(value.type).element_type))
        if isinstance(value.type, IndexType):
            scalar = self.emit(arith.IndexCastOp(scalar, IndexType()))
        self.mapping[value] = scalar

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def result(self, value: SSAValue) -> SSAValue:
        """``value`` as it leaves the segment (a scalar in a 0-d tensor)."""
        v = self.mapping[value]
        if isinstance(value.type, TensorType):
            return v
        if isinstance(value.type, IndexType):
            v = self.emit(arith.IndexCastOp(v, i64))
        return self.emit(tensor.FromElementsOp(v, result_type=port_type(value.type)))

    def clone_in(self, op: Operation) -> None:
        """``op`` written into the segment: a section's body in its place, a collective as
        plain arithmetic, a ``tp.shard`` of a host input as the argument already mapped."""
        if isinstance(op, SectionOp):
            for inner in op.body.block.ops:
                if isinstance(inner, YieldOp):
                    for r, v in zip(op.results, inner.operands, strict=True):
                        self.mapping[r] = self.mapping[v]
                else:
                    self.clone_in(inner)
        elif isinstance(op, ShardOp) and op.result in self.mapping:
            pass  # an argument: the chip's slice, placed by the host
        elif isinstance(op, ShardOp):  # a slice of a value the chip computed: cut here
            self._shard(op)
        elif isinstance(op, AllReduceOp):
            parts = [self.mapping[p] for p in op.partials]
            total = parts[0]
            for p in parts[1:]:  # the left fold in chip order, as the reference adds
                total = self.emit(arith.AddfOp(total, p))
            self.mapping[op.result] = total
        elif isinstance(op, MaxLocOp):
            self._maxloc(op)
        elif isinstance(op, AllGatherOp):  # the blocks, one run each in chip order
            parts = [self.mapping[p] for p in op.parts]
            self.mapping[op.result] = self.emit(
                tensor.ConcatOp(parts, op.axis, port_type(op.result.type))
            )
        elif op.dialect_name() == "tp":
            raise refuse(op, f"'{op.name}' has no plain form inside a chip's program")
        else:
            for inner in op.walk():
                if inner.dialect_name() == "tp":
                    raise refuse(inner, f"'{inner.name}' has no plain form inside '{op.name}'")
            new = op.clone(value_mapper=self.mapping)
            self.block.add_op(new)
            self.mapping.update(zip(op.results, new.results, strict=True))

    def _shard(self, op: ShardOp) -> None:
        """``op``'s ranges of its source along its axis, one after another."""
        sl, source = op.slice, self.mapping[op.source]
        full = list(sl.full_shape)
        t = op.result.type
        assert isinstance(t, TensorType)
        total = self.emit(tensor.EmptyOp([], t))
        at = 0  # where the next run lands in the slice
        for start, size in sl.ranges:
            shape = [*full]
            shape[sl.axis_index] = size
            offsets = [0] * len(full)
            offsets[sl.axis_index] = start
            piece = self.emit(tensor.ExtractSliceOp.from_static_parameters(source, offsets, shape))
            offsets[sl.axis_index] = at
            total = self.emit(
                tensor.InsertSliceOp.from_static_parameters(piece, total, offsets, shape)
            )
            at += size
        self.mapping[op.result] = total

    def _maxloc(self, op: MaxLocOp) -> None:
        """The pairwise pick of `NumpyFunctions.run_maxloc` as one ``linalg.generic`` over
        the pairs' elements: a larger value wins, an equal one only with a smaller index."""
        value_t, index_t = op.value.type, op.index.type
        assert isinstance(value_t, TensorType) and isinstance(index_t, TensorType)
        rank = len(value_t.get_shape())
        ins = [self.mapping[v] for v in (*op.values, *op.indices)]
        outs = [self.emit(tensor.EmptyOp([], t)) for t in (value_t, index_t)]
        n = len(op.values)
        body = Block(
            arg_types=[value_t.element_type] * n
            + [index_t.element_type] * n
            + [value_t.element_type, index_t.element_type]
        )
        best, where = body.args[0], body.args[n]
        for k in range(1, n):
            v, i = body.args[k], body.args[n + k]
            greater = arith.CmpfOp(v, best, "ogt")
            equal = arith.CmpfOp(v, best, "oeq")
            smaller = arith.CmpiOp(i, where, "slt")
            tie = arith.AndIOp(equal, smaller)
            take = arith.OrIOp(greater, tie)
            pick_v = arith.SelectOp(take, v, best)
            pick_i = arith.SelectOp(take, i, where)
            body.add_ops([greater, equal, smaller, tie, take, pick_v, pick_i])
            best, where = pick_v.result, pick_i.result
        body.add_op(LinalgYieldOp(best, where))
        identity = AffineMapAttr(AffineMap.identity(rank))
        generic = GenericOp(
            ins,
            outs,
            Region(body),
            [identity] * (2 * n + 2),
            [IteratorTypeAttr.parallel()] * rank,
            [value_t, index_t],
        )
        self.emit(generic)
        self.mapping[op.value], self.mapping[op.index] = generic.results


_VIEWS = (
    tensor.ExpandShapeOp,
    tensor.CollapseShapeOp,
    tensor.ExtractSliceOp,
    tensor.CastOp,
    tensor.ReshapeOp,
)
"""Ops whose result may be a view of their operand's storage once bufferized."""


def written(arg: SSAValue) -> bool:
    """Whether IREE may write ``arg``'s buffer: it (or a view of it) is the destination of
    a linalg op or an insert. IREE's bufferization writes such a function argument in
    place (iree-org/iree#16168), so the host must not hand it a buffer it reads again."""
    work, seen = [arg], set()
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if isinstance(user, LinalgStructuredOperation):
                if use.index >= len(user.inputs):
                    return True
            elif isinstance(user, tensor.InsertSliceOp | tensor.InsertOp):
                if use.operation.operands[use.index] is user.dest:
                    return True
            elif isinstance(user, _VIEWS):
                for r in user.results:
                    if r not in seen:
                        seen.add(r)
                        work.append(r)
            elif user.regions or isinstance(user, CallOp):
                return True  # a loop carrying it, a callee IREE inlines: assume written
    return False


@dataclass(frozen=True)
class PortFlags:
    """What a segment's code says of its ports, whatever they stand for: which arguments
    IREE may write (`written`), and which results are an argument returned unchanged."""

    written: tuple[bool, ...]
    same: tuple[int | None, ...]

    @staticmethod
    def of(func: FuncOp) -> PortFlags:
        """``func``'s flags (one walk of its arguments' uses)."""
        block = func.body.block
        ret = block.last_op
        assert ret is not None
        return PortFlags(
            tuple(written(a) for a in block.args),
            tuple(
                v.index if isinstance(v, BlockArgument) and v.owner is block else None
                for v in ret.operands
            ),
        )

    def ports_json(
        self, args: list[PortInfo], results: list[PortInfo]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The manifest's ports: an argument IREE may write is marked ``written``, a result
        that is an argument returned unchanged names it (``argument``)."""
        arg_json = [
            {**p.to_json(), **({"written": True} if w else {})}
            for p, w in zip(args, self.written, strict=True)
        ]
        res_json = [
            {**p.to_json(), **({"argument": same} if same is not None else {})}
            for p, same in zip(results, self.same, strict=True)
        ]
        return arg_json, res_json


def ports_json(
    func: FuncOp, args: list[PortInfo], results: list[PortInfo]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The manifest's ports of ``func`` (`PortFlags.ports_json`)."""
    return PortFlags.of(func).ports_json(args, results)


class DropChips(TypeConversionPattern):
    """Every ``tensor<..., #tp.chip<c>>`` as the plain ``tensor<...>``."""

    recursive = True

    def convert_type(self, typ: Attribute, /) -> Attribute | None:
        if isinstance(typ, TensorType) and isinstance(typ.encoding, ChipAttr):
            return TensorType(typ.element_type, typ.get_shape())
        return None


class Generalize(RewritePattern):
    """An elementwise named op (``linalg.add`` ...) as the ``linalg.generic`` it stands for:
    upstream MLIR no longer defines them (IREE's parser refuses ``linalg.add``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ElementwiseOperation, rewriter: PatternRewriter) -> None:
        GeneralizeNamedOpPattern().match_and_rewrite(op, rewriter)
