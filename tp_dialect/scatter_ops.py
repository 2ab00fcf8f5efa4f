"""The collectives that cut a tensor into per-chip blocks: ``tp.reduce_scatter`` and
``tp.all_gather``.

A reduce-scatter leaves chip c the block ``slices[c]`` of the sum of one partial per chip (the
left fold in chip order, as ``tp.allreduce`` forms it); an all-gather assembles one block per
chip into the full tensor on every chip (the spine). Composed, they are a two-shot
all-reduce; apart, the work between them runs on each chip's block alone (sequence
parallelism: norms and residual adds on 1/N of the tokens). Blocks are one run each, in chip
order, covering the axis (`tp_dialect.attrs.blocks` cuts them evenly); how the blocks move is
an ``algorithm`` of the registry (`tp_dialect.collectives.REDUCE_SCATTER`, `ALL_GATHER`).

``%r0, %r1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<…(0, 2)…>, #tp.slice<…(2, 2)…>] :
tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>,
tensor<2x8xf32, #tp.chip<1>>``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import AnyFloat, ArrayAttr, TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tp_dialect.attrs import SliceAttr, chip_of, on_chip
from tp_dialect.collectives import (
    ALL_GATHER,
    REDUCE_SCATTER,
    AllGatherAlgorithmAttr,
    ExchangeEntry,
    ReduceScatterAlgorithmAttr,
)
from tp_dialect.grid import require_chips
from tp_dialect.op_checks import describe, shape_of

DIRECT = "direct"
"""The algorithm of a reduce-scatter or all-gather that names none: every block straight to
its chip."""


def check_blocks(op: IRDLOperation, slices: Sequence[SliceAttr], full: tuple[int, ...]) -> None:
    """A verifier error unless ``slices`` are the module's N chips' blocks of a ``full``
    tensor: one axis, one run each, in chip order, none empty, covering the axis."""
    n = require_chips(op)
    if len(slices) != n:
        raise VerifyException(
            f"'{op.name}' has {len(slices)} slices, the module has {n} chips: it needs "
            "exactly one block per chip"
        )
    axis = slices[0].axis_index
    at = 0
    for c, sl in enumerate(slices):
        if sl.full_shape != full:
            raise VerifyException(
                f"'{op.name}' slice #{c} is of full shape {list(sl.full_shape)}, the whole "
                f"tensor is {list(full)}"
            )
        if sl.axis_index != axis:
            raise VerifyException(
                f"'{op.name}' slice #{c} cuts axis {sl.axis_index}, slice #0 axis {axis}: "
                "the blocks cut one axis"
            )
        ranges = sl.ranges
        if len(ranges) != 1 or ranges[0][0] != at or ranges[0][1] < 1:
            raise VerifyException(
                f"'{op.name}' slice #{c} is {ranges}: chip {c}'s block must be one run "
                f"starting at {at} (the blocks one after another in chip order), not empty"
            )
        at += ranges[0][1]
    if at != full[axis]:
        raise VerifyException(
            f"'{op.name}' blocks cover {at} of the {full[axis]} positions of axis {axis}"
        )


def _check_block_values(
    op: IRDLOperation, values: Sequence[SSAValue], slices: Sequence[SliceAttr], what: str
) -> None:
    """Each of ``values`` (the blocks) on its chip, shaped as its slice says."""
    for c, (v, sl) in enumerate(zip(values, slices, strict=True)):
        owner = chip_of(v.type)
        if owner != c:
            where = "the spine" if owner is None else f"chip {owner}"
            raise VerifyException(
                f"'{op.name}' {what} #{c} {describe(v)} must be on chip {c}, it is on {where}"
            )
        if shape_of(v) != sl.shape:
            raise VerifyException(
                f"'{op.name}' {what} #{c} {describe(v)} on chip {c} has shape "
                f"{list(shape_of(v))}, its block {list(sl.shape)}"
            )


def _element(value: SSAValue) -> object:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


@irdl_op_definition
class ReduceScatterOp(IRDLOperation):
    """``parts[c] = (Σ partials)[slices[c]]``: one partial per chip, in chip order, each on
    its chip; chip c ends with its block of the sum (the left fold in chip order; a ``ring``
    adds in a cyclic rotation of it: equal up to f32 rounding), on chip c."""

    name = "tp.reduce_scatter"

    partials = var_operand_def(TensorType)
    slices = prop_def(ArrayAttr[SliceAttr])
    algorithm = opt_prop_def(ReduceScatterAlgorithmAttr)
    parts = var_result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$partials `slices` qualified($slices) (`algorithm` $algorithm^)? attr-dict `:` "
        "type($partials) `->` type($parts)"
    )

    ALGORITHMS: ClassVar[tuple[str, ...]] = tuple(REDUCE_SCATTER)

    def __init__(
        self,
        partials: Sequence[SSAValue],
        slices: Sequence[SliceAttr],
        algorithm: str | None = None,
    ):
        t = partials[0].type
        assert isinstance(t, TensorType)
        types = [on_chip(TensorType(t.element_type, sl.shape), c) for c, sl in enumerate(slices)]
        props: dict[str, object] = {"slices": ArrayAttr(slices)}
        if algorithm is not None:
            props["algorithm"] = ReduceScatterAlgorithmAttr.named(algorithm)
        super().__init__(operands=[partials], result_types=[types], properties=props)

    @property
    def algorithm_name(self) -> str:
        """How the blocks move (``direct`` when none is written)."""
        return DIRECT if self.algorithm is None else str(self.algorithm.data)

    @property
    def entry(self) -> ExchangeEntry:
        """The registry entry of its algorithm."""
        return REDUCE_SCATTER[self.algorithm_name]

    def set_algorithm(self, name: str) -> None:
        """Write algorithm ``name`` (a KeyError naming the algorithms if there is none)."""
        self.algorithm = ReduceScatterAlgorithmAttr.named(name)

    @property
    def axis(self) -> int:
        return self.slices.data[0].axis_index

    def verify_(self) -> None:
        n = require_chips(self)
        if len(self.partials) != n or len(self.parts) != n:
            raise VerifyException(
                f"'tp.reduce_scatter' has {len(self.partials)} partials and {len(self.parts)} "
                f"results, the module has {n} chips: it needs exactly one of each per chip"
            )
        full = shape_of(self.partials[0])
        check_blocks(self, self.slices.data, full)
        for c, p in enumerate(self.partials):
            owner = chip_of(p.type)
            if owner != c:
                where = "the spine" if owner is None else f"chip {owner}"
                raise VerifyException(
                    f"'tp.reduce_scatter' partial #{c} {describe(p)} must be on chip {c}, "
                    f"it is on {where}"
                )
            if shape_of(p) != full or _element(p) != _element(self.partials[0]):
                raise VerifyException(
                    f"'tp.reduce_scatter' partial #{c} {describe(p)} on chip {c} has type "
                    f"{p.type}, partial #0 {self.partials[0].type}: the partials must agree"
                )
        _check_block_values(self, list(self.parts), self.slices.data, "result")
        if not isinstance(_element(self.partials[0]), AnyFloat):
            raise VerifyException(
                f"'tp.reduce_scatter' sums {_element(self.partials[0])}: it sums floats (its "
                "lowered adds are float adds)"
            )
        for c, r in enumerate(self.parts):
            if _element(r) != _element(self.partials[0]):
                raise VerifyException(
                    f"'tp.reduce_scatter' result #{c} holds {_element(r)}, the partials "
                    f"{_element(self.partials[0])}"
                )


@irdl_op_definition
class AllGatherOp(IRDLOperation):
    """``out[slices[c]] = parts[c]``: one block per chip, in chip order, each on its chip;
    the whole tensor is the spine, on every chip. A collective over every chip (`Collective`)
    whose exchange is every block to every other chip."""

    name = "tp.all_gather"

    parts = var_operand_def(TensorType)
    slices = prop_def(ArrayAttr[SliceAttr])
    algorithm = opt_prop_def(AllGatherAlgorithmAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$parts `slices` qualified($slices) (`algorithm` $algorithm^)? attr-dict `:` "
        "type($parts) `->` type($result)"
    )

    ALGORITHMS: ClassVar[tuple[str, ...]] = tuple(ALL_GATHER)

    def __init__(
        self,
        parts: Sequence[SSAValue],
        slices: Sequence[SliceAttr],
        algorithm: str | None = None,
    ):
        t = parts[0].type
        assert isinstance(t, TensorType)
        result_t = on_chip(TensorType(t.element_type, slices[0].full_shape), None)
        props: dict[str, object] = {"slices": ArrayAttr(slices)}
        if algorithm is not None:
            props["algorithm"] = AllGatherAlgorithmAttr.named(algorithm)
        super().__init__(operands=[parts], result_types=[result_t], properties=props)

    @property
    def algorithm_name(self) -> str:
        """How the blocks move (``direct`` when none is written)."""
        return DIRECT if self.algorithm is None else str(self.algorithm.data)

    @property
    def entry(self) -> ExchangeEntry:
        """The registry entry of its algorithm."""
        return ALL_GATHER[self.algorithm_name]

    @property
    def axis(self) -> int:
        return self.slices.data[0].axis_index

    @property
    def lands_on_every_chip(self) -> bool:
        """Every chip assembles the whole tensor itself (`Collective`)."""
        return True

    def chip_operands(self) -> list[tuple[SSAValue, ...]]:
        """What each chip brings, in chip order: its block."""
        return [(p,) for p in self.parts]

    def set_algorithm(self, name: str) -> None:
        """Write algorithm ``name`` (a KeyError naming the algorithms if there is none)."""
        self.algorithm = AllGatherAlgorithmAttr.named(name)

    def verify_(self) -> None:
        n = require_chips(self)
        if len(self.parts) != n:
            raise VerifyException(
                f"'tp.all_gather' has {len(self.parts)} blocks, the module has {n} chips: "
                "it needs exactly one block per chip"
            )
        if chip_of(self.result.type) is not None:
            raise VerifyException(
                "'tp.all_gather' result must be the replicated spine (no chip encoding)"
            )
        check_blocks(self, self.slices.data, shape_of(self.result))
        _check_block_values(self, list(self.parts), self.slices.data, "block")
        for c, p in enumerate(self.parts):
            if _element(p) != _element(self.result):
                raise VerifyException(
                    f"'tp.all_gather' block #{c} holds {_element(p)}, the result "
                    f"{_element(self.result)}"
                )
