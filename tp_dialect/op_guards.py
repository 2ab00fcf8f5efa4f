"""What xDSL 0.75's verifiers let through that no op can mean: tp's own checks, at the op.

Each check names one malformed form of an op tp runs, found by running every op the
certificate admits (tests/test_interpreter_ops.py) on what xDSL's verifier accepts:

- a structured linalg op (``linalg.generic``, a named op, ``linalg.reduce``) whose body
  yields other than one value per output, of that output's element type, or whose results
  are not its tensor outputs' types; a ``linalg.generic`` output map that is not a
  projection of distinct loop dims (two points would write one element, in no stated
  order); ``linalg.reduce``/``linalg.broadcast`` dimensions that are not distinct dims of
  the tensor (xDSL's verifier indexes shapes with them);
- a region op whose regions hand on other values than its results (``scf.if`` with results
  but no else region, or a branch yielding other types; ``scf.execute_region``;
  ``scf.while``'s condition, after region and loop-carried values; ``affine.if``);
- an element access with as many indices as the tensor has axes (``tensor.extract``,
  ``tensor.insert``), ``tensor.from_elements`` with as many elements as
  its type holds, ``tensor.pad`` whose type is its source's shape plus the padding.

`early_guard` runs before xDSL's verifier (the dimension checks, where xDSL would crash),
`late_guard` after it (the rest, on ops xDSL found well formed).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from xdsl.dialects import scf, tensor
from xdsl.dialects.builtin import ShapedType, TensorType, UnrealizedConversionCastOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.abstract_ops import LinalgStructuredOperation
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr


def _loaded(module: str, name: str) -> tuple[type[Operation], ...]:
    """xDSL's op class ``module.name`` if its dialect is imported, else none: no IR holds an
    op of a dialect never imported (a context imports one when parsing first meets it), so
    the guards need not import affine, and with it memref (90 ms of every tool's start)."""
    loaded = sys.modules.get(module)
    return (getattr(loaded, name),) if loaded is not None else ()


def _types(values: Sequence[SSAValue]) -> str:
    return "(" + ", ".join(str(v.type) for v in values) + ")"


def _element(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, ShapedType) else t  # type: ignore[attr-defined]


def _dims_guard(op: Operation, dims: Sequence[int], rank: int, what: str) -> str | None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        return (
            f"'{op.name}' dimensions {list(dims)} are not distinct dims of 0..{rank - 1} "
            f"(its {what} has rank {rank})"
        )
    return None


def early_guard(op: Operation) -> str | None:
    """Why ``op`` is malformed in a way xDSL 0.75's verifier crashes on, or None."""
    if isinstance(op, linalg.ReduceOp) and isinstance(op.input.type, ShapedType):
        rank = len(op.input.type.get_shape())
        return _dims_guard(op, op.dimensions.get_values(), rank, "input")
    if isinstance(op, linalg.BroadcastOp) and isinstance(op.init.type, ShapedType):
        rank = len(op.init.type.get_shape())
        return _dims_guard(op, op.dimensions.get_values(), rank, "output")
    return None


def _single(region: Region) -> Block | None:
    """``region``'s block if it has exactly one (several are refused elsewhere: opaque)."""
    return region.blocks.first if len(region.blocks) == 1 else None


def _region_yield(op: Operation, region: Region, results: Sequence[SSAValue]) -> str | None:
    """Why what ``region``'s terminator hands on is not ``results``' types, or None."""
    block = _single(region)
    if block is None:
        return None
    last = block.last_op
    handed = list(last.operands) if last is not None else []
    if [v.type for v in handed] != [r.type for r in results]:
        return (
            f"'{op.name}' has results {_types(results)}, but its region hands on {_types(handed)}"
        )
    return None


def _structured(op: LinalgStructuredOperation | linalg.ReduceOp) -> str | None:
    if isinstance(op, linalg.ReduceOp):
        outs, block = [op.init], _single(op.region)
    else:
        outs, block = list(op.outputs), _single(op.body)
    if block is None:
        return None
    last = block.last_op
    yielded = list(last.operands) if isinstance(last, linalg.YieldOp) else []
    if len(yielded) != len(outs):
        return (
            f"'{op.name}' yields {len(yielded)} values for its {len(outs)} outputs: its body "
            "yields one value per output"
        )
    for k, (v, out) in enumerate(zip(yielded, outs, strict=True)):
        if v.type != _element(out.type):
            return (
                f"'{op.name}' yields {v.type} for output #{k}, whose elements are "
                f"{_element(out.type)}"
            )
    tensor_outs = [o.type for o in outs if isinstance(o.type, TensorType)]
    if [r.type for r in op.results] != tensor_outs:
        return (
            f"'{op.name}' has results {_types(op.results)}, but its tensor outputs are "
            f"({', '.join(str(t) for t in tensor_outs)})"
        )
    if isinstance(op, linalg.GenericOp):
        n_in = len(op.inputs)
        for k, m in enumerate(op.indexing_maps.data[n_in:]):
            dims = [e.position for e in m.data.results if isinstance(e, AffineDimExpr)]
            if len(dims) != len(m.data.results) or len(set(dims)) != len(dims):
                return (
                    f"'{op.name}' output #{k}'s indexing map {m.data} is not a projection of "
                    "distinct loop dims: two points would write one element"
                )
    return None


def _control(op: Operation) -> str | None:
    if isinstance(op, (scf.IfOp, *_loaded("xdsl.dialects.affine", "IfOp"))):
        then, other = (
            (op.true_region, op.false_region)
            if isinstance(op, scf.IfOp)
            else (op.then_region, op.else_region)  # type: ignore[attr-defined]
        )
        if op.results and not other.blocks:
            return f"'{op.name}' has results but no else region to give them when it fails"
        return _region_yield(op, then, op.results) or _region_yield(op, other, op.results)
    if isinstance(op, scf.ExecuteRegionOp):
        return _region_yield(op, op.region, op.results)
    if isinstance(op, scf.WhileOp):
        before, after = _single(op.before_region), _single(op.after_region)
        if before is None or after is None:
            return None
        cond = before.last_op
        forwarded = list(cond.args) if isinstance(cond, scf.ConditionOp) else []
        if [v.type for v in forwarded] != [r.type for r in op.results]:
            return (
                f"'scf.while' has results {_types(op.results)}, but its condition hands on "
                f"{_types(forwarded)}"
            )
        if [a.type for a in after.args] != [r.type for r in op.results]:
            return (
                f"'scf.while' after region takes {_types(after.args)}, but its condition "
                f"hands on {_types(forwarded)}"
            )
        if [a.type for a in before.args] != [v.type for v in op.arguments]:
            return (
                f"'scf.while' before region takes {_types(before.args)}, but its loop "
                f"starts from {_types(op.arguments)}"
            )
        last = after.last_op
        yielded = list(last.operands) if last is not None else []
        if [v.type for v in yielded] != [a.type for a in before.args]:
            return (
                f"'scf.while' after region yields {_types(yielded)}, but its before region "
                f"takes {_types(before.args)}"
            )
    return None


def _access(op: Operation) -> str | None:
    # memref.load's indices xDSL's own verifier counts.
    if isinstance(op, tensor.ExtractOp | tensor.InsertOp):
        source = op.tensor if isinstance(op, tensor.ExtractOp) else op.dest
        rank = len(source.type.get_shape())  # type: ignore[attr-defined]
        if len(op.indices) != rank:
            return (
                f"'{op.name}' gives {len(op.indices)} indices into a {source.type} of rank {rank}"
            )
    if isinstance(op, tensor.FromElementsOp):
        shape = op.result.type.get_shape()
        if all(n >= 0 for n in shape) and math.prod(shape) != len(op.elements):
            return (
                f"'{op.name}' gives {len(op.elements)} elements for a {op.result.type} of "
                f"{math.prod(shape)}"
            )
    if isinstance(op, tensor.PadOp):
        source = op.source.type.get_shape()  # type: ignore[attr-defined]
        result = op.result.type.get_shape()  # type: ignore[attr-defined]
        lows, highs = op.static_low.get_values(), op.static_high.get_values()
        if not len(source) == len(lows) == len(highs) == len(result):
            return (
                f"'{op.name}' pads a {op.source.type} by {len(lows)} and {len(highs)} sizes "
                f"into a {op.result.type}"
            )
        for axis, (n, lo, hi, r) in enumerate(zip(source, lows, highs, result, strict=True)):
            if min(n, lo, hi, r) >= 0 and n + lo + hi != r:
                return (
                    f"'{op.name}' pads axis {axis} of size {n} by {lo} and {hi} into size {r}, "
                    f"not {n + lo + hi}"
                )
    return None


def same_elements(source: Attribute, target: Attribute) -> bool:
    """Whether a value of ``source`` can be read as a ``target`` unchanged: the same element
    type, and as many elements where both state a shape (a tensor as a vector, a tensor on
    a chip as the same tensor elsewhere); a scalar only as a scalar."""
    if _element(source) != _element(target):
        return False
    shaped = [isinstance(t, ShapedType) and hasattr(t, "get_shape") for t in (source, target)]
    if not all(shaped):
        return not any(shaped)
    a, b = source.get_shape(), target.get_shape()  # type: ignore[attr-defined]
    if any(n < 0 for n in (*a, *b)):
        return True  # a dynamic size: the interpreter checks the data
    return math.prod(a) == math.prod(b)


def cast_meaning(op: UnrealizedConversionCastOp) -> str | None:
    """Why tp gives ``op`` no meaning (it changes what its values hold), or None."""
    if len(op.inputs) != len(op.outputs) or not all(
        same_elements(v.type, r.type) for v, r in zip(op.inputs, op.outputs, strict=True)
    ):
        return (
            f"casts {_types(op.inputs)} to {_types(op.outputs)}: tp gives a cast a meaning only "
            "value for value, between types holding the same elements"
        )
    return None


def late_guard(op: Operation) -> str | None:
    """Why ``op``, which xDSL's verifier accepts, is malformed all the same, or None."""
    if isinstance(op, LinalgStructuredOperation | linalg.ReduceOp):
        return _structured(op)
    return _control(op) or _access(op)
