"""tp-narrow-wire{wire=bf16 shim=sn40l}: collectives carry bf16 where what reads their result
reads bf16 anyway.

Invariant: a statement-level ``tp.allreduce`` over f32 partials of two or more chips, every reader
of whose sum (through reshapes and concatenations, which only move it) reads it in bf16 or
narrower as the shim says (`Shim.activation`), becomes
``extf(tp.allreduce(truncf(p_0), …, truncf(p_N-1)))``: each chip rounds its partial to bf16
before it leaves the chip, the sum is formed in bf16 by the same algorithm (every add rounded to
bf16, as the interpreter computes it at every stage), and widened where it is read. The link
bytes halve; the numbers change by bf16 rounding, which ``tp-run --check`` measures against the
unsharded program (the module says ``tp.wire = "bf16"``). An all-reduce whose sum is returned,
stored by the host or read by an op the shim reads whole stays as written (``report=true``
prints each choice and why). The pass moves no work between chips: a precision change hands on
the same reals, so the certificate's claim (over reals, as f32 sums in any order) still holds
and a valid certificate stays valid.

A ``tp.reduce_scatter`` every reader of whose blocks reads bf16 is narrowed alike (its partials
rounded, its adds in bf16, each block widened), and a ``tp.all_gather`` every reader of whose
result does (each block rounded on its chip, the whole widened): after tp-sequence-parallel,
what crosses the links is still bf16.

Off by default: a pipeline opts in, e.g. ``tp-narrow-wire,tp-relocate,tp-transfers,…``. An
outlined program's all-reduces are narrowed in every function (a callee's once, for every call).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float32Type, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.certificate import drop, kept, status
from tp_dialect.collectives import WIRE_ATTR, WIRES
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import AllReduceOp
from tp_dialect.passes.options import ShimName, base_shim
from tp_dialect.passes.quantize import int8_gather
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp
from tp_dialect.shims import OpClass, Shim, classify

# What a consumer reading its operand in one of these formats also accepts off the wire:
# an int8 read quantizes what it gets, so bf16 rounding before it costs no more.
_READS_BF16 = ("bf16", "int8")
_MOVES = (OpClass.RESHAPE, OpClass.CONCAT)


Wire = AllReduceOp | ReduceScatterOp | AllGatherOp
"""A collective that carries tensors between chips: what may carry bf16."""


def _sent(op: Wire) -> list[SSAValue]:
    """What each chip sends: the partials, or the blocks."""
    return list(op.parts if isinstance(op, AllGatherOp) else op.partials)


def _made(op: Wire) -> list[SSAValue]:
    """What the collective makes, whose readers decide: the sum, the blocks, the whole."""
    return list(op.parts) if isinstance(op, ReduceScatterOp) else [op.result]


def refusal(op: Wire, shim: Shim) -> str | None:
    """Why ``op`` keeps its width (one chip, tensors not f32, a reader the shim reads wider
    than bf16), or None: it may carry bf16."""
    if len(_sent(op)) < 2:
        return "one chip: nothing crosses a link"
    what = {AllReduceOp: "sum", ReduceScatterOp: "block", AllGatherOp: "gathered tensor"}
    noun = what[type(op)]
    for made in _made(op):
        t = made.type
        if not isinstance(t, TensorType) or not isinstance(t.element_type, Float32Type):
            return f"its {noun} is {getattr(t, 'element_type', t)}, not f32"
        for use in _readers(made):
            read = shim.activation(use.operation, use.index)
            if read is None or read.dtype not in _READS_BF16:
                return f"'{use.operation.name}' reads the {noun} as its values ({shim.name()})"
    return None


def _reads_int8(value: SSAValue, shim: Shim) -> bool:
    """Whether every reader of ``value`` reads it as int8 (the shim's word)."""
    for use in _readers(value):
        read = shim.activation(use.operation, use.index)
        if read is None or read.dtype != "int8":
            return False
    return True


def _readers(value: SSAValue) -> list[Use]:
    """The uses that compute with ``value``: its uses, with an op that only moves it (a
    reshape, a concatenation) followed to what reads its result (such an op reads bf16 as
    well as f32; what matters is who computes with it, or returns it)."""
    found: list[Use] = []
    todo, seen = [value], {value}
    while todo:
        for use in todo.pop().uses:
            op = use.operation
            if classify(op) in _MOVES and len(op.results) == 1 and op.results[0] not in seen:
                seen.add(op.results[0])
                todo.append(op.results[0])
            else:
                found.append(use)
    return found


def _narrow(t: TensorType) -> TensorType:
    """``t`` with bf16 elements, on the same chip (its encoding)."""
    return TensorType(BFloat16Type(), t.get_shape(), t.encoding)


def _right_after(value: SSAValue, op: Operation) -> InsertPoint:
    """Where to round ``value`` for the collective ``op``: right after the statement making
    it when that is in ``op``'s block (so tp-fuse can fuse the rounding into it: a tiled
    partial's is made before the next tile's contraction, not at its collective), else just
    before ``op``."""
    owner = value.owner
    if isinstance(owner, Operation) and owner.parent_block() is op.parent_block():
        return InsertPoint.after(owner)
    return InsertPoint.before(op)


@dataclass
class NarrowWire(RewritePattern):
    """At a statement-level collective every reader of whose result reads bf16: round what
    each chip sends on its chip, form the result in bf16 (an all-reduce's or reduce-scatter's
    adds rounded to bf16), widen what it makes."""

    shim: Shim
    int8: bool = False
    """Whether an all-gather every reader of which reads int8 carries int8 (`quantize`)."""
    report: list[str] = field(default_factory=list)
    narrowed: int = 0
    quantized: int = 0

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, Wire) or not isinstance(op.parent_op(), FuncOp):
            return
        name = value_name(_made(op)[0])
        reason = refusal(op, self.shim)
        if reason is not None:
            self.report.append(f"%{name}: kept, {reason}")
            return
        if self.int8 and isinstance(op, AllGatherOp) and _reads_int8(op.result, self.shim):
            ops, whole = int8_gather(op)
            rewriter.insert(ops, InsertPoint.before(op))
            rewriter.replace(op, [], [whole])
            self.report.append(f"%{name}: int8 on the wire (a scale per block)")
            self.quantized += 1
            return
        narrowed = []
        for value in _sent(op):
            assert isinstance(value.type, TensorType)
            cast = arith.TruncFOp(value, _narrow(value.type))
            cast.result.name_hint = value_hint(f"{value_name(value)}_bf16")
            rewriter.insert(cast, _right_after(value, op))
            narrowed.append(cast.result)
        algorithm = None if op.algorithm is None else op.algorithm_name
        if isinstance(op, AllReduceOp):
            wide = op.result.type
            assert isinstance(wide, TensorType)
            new: Wire = AllReduceOp(narrowed, _narrow(wide), algorithm)
        elif isinstance(op, ReduceScatterOp):
            new = ReduceScatterOp(narrowed, op.slices.data, algorithm)
        else:
            new = AllGatherOp(narrowed, op.slices.data, algorithm)
        rewriter.insert(new, InsertPoint.before(op))
        widened: list[SSAValue] = []
        for old, made in zip(_made(op), _made(new), strict=True):
            made.name_hint = value_hint(f"{value_name(old)}_bf16")
            widen = arith.ExtFOp(made, old.type)
            widen.result.name_hint = old.name_hint
            rewriter.insert(widen, InsertPoint.before(op))
            widened.append(widen.result)
        rewriter.replace(op, [], widened)
        self.report.append(f"%{name}: bf16 on the wire")
        self.narrowed += 1


@dataclass(frozen=True)
class TpNarrowWire(ModulePass):
    """Carry each statement-level all-reduce whose every reader reads bf16 (the shim's word)
    as bf16: partials rounded on their chips, the sum formed in bf16 and widened after."""

    name = "tp-narrow-wire"

    wire: Literal["bf16", "int8"] = "bf16"
    shim: ShimName = "sn40l"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.wire not in (*WIRES, "int8"):  # built from Python: the parser did not check
            raise TpDiagnostic(
                None, f"{self.name}: no wire format '{self.wire}' (known: bf16, int8)"
            )
        pattern = NarrowWire(base_shim(self.name, self.shim), int8=self.wire == "int8")
        certified = status(op) == "valid"
        with kept(op):  # the same sums over the same chips, rounded: the claim holds
            PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
            if pattern.narrowed or pattern.quantized:  # what tp-run --check allows for
                op.attributes[WIRE_ATTR] = StringAttr("int8" if pattern.quantized else "bf16")
        if pattern.quantized:  # new ops on the chips' blocks: checked again, not carried over
            drop(op)
            if certified:
                certify_if_sound(op)
        if self.report:
            for line in pattern.report:
                print(f"{self.name}: {line}", file=sys.stderr)
