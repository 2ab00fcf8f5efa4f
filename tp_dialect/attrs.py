"""tp attributes: the chip that owns a tensor, and a chip's slice of a full tensor.

A chip-local tensor carries its chip in the tensor type's encoding,
``tensor<1x512xf32, #tp.chip<1>>``; a tensor with no chip encoding is the replicated
spine. Keeping ownership in the type means every upstream op (linalg, arith, tensor)
carries it through unchanged, and an op mixing two chips' tensors shows in its types.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


@functools.lru_cache(maxsize=8192)
def i64_attr(value: int) -> IntegerAttr:
    """``value`` as an ``i64`` attribute, built once per value: attributes are immutable, so
    the ops of a large program (a transfer's chips, a relay step's round) share them rather
    than build and verify one each."""
    return IntegerAttr(value, i64)


@irdl_attr_definition
class ChipAttr(ParametrizedAttribute):
    """One accelerator of the module's grid, ``#tp.chip<c>`` with 0 <= c < N."""

    name = "tp.chip"

    index: IntAttr

    def __init__(self, index: int | IntAttr) -> None:
        super().__init__(IntAttr(index) if isinstance(index, int) else index)

    @property
    def value(self) -> int:
        return self.index.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (IntAttr(parser.parse_integer(allow_boolean=False)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.value}>")

    def verify(self) -> None:
        # The upper bound (N) lives on the module; `check_chip_indices` enforces it.
        if self.value < 0:
            raise VerifyException(f"#tp.chip<{self.value}>: chip index is negative")


@irdl_attr_definition
class SliceAttr(ParametrizedAttribute):
    """TpSlice: ranges ``(start, len)`` of a full tensor along one axis, concatenated.

    ``#tp.slice<axis = 0, ranges = [(0, 16), (64, 16)], full = [128, 32]>`` is rows 0..16
    then rows 64..80 of a 128x32 tensor: a 32x32 slice. It is what the host loads onto
    a chip, and how a test fills the chip's tensor from the full one.
    """

    name = "tp.slice"

    axis: IntAttr
    starts: ArrayAttr[IntAttr]
    lengths: ArrayAttr[IntAttr]
    full: ArrayAttr[IntAttr]

    def __init__(
        self,
        axis: int,
        ranges: Sequence[tuple[int, int]],
        full: Sequence[int],
    ) -> None:
        super().__init__(
            IntAttr(axis),
            ArrayAttr(IntAttr(s) for s, _ in ranges),
            ArrayAttr(IntAttr(n) for _, n in ranges),
            ArrayAttr(IntAttr(d) for d in full),
        )

    @property
    def axis_index(self) -> int:
        return self.axis.data

    @property
    def ranges(self) -> list[tuple[int, int]]:
        return [(s.data, n.data) for s, n in zip(self.starts.data, self.lengths.data, strict=True)]

    @property
    def full_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.full.data)

    @property
    def shape(self) -> tuple[int, ...]:
        """The chip tensor's shape: the full shape with the cut axis summed over ranges."""
        dims = list(self.full_shape)
        dims[self.axis_index] = sum(n for _, n in self.ranges)
        return tuple(dims)

    def indices(self) -> list[int]:
        """Positions along the axis, in the chip tensor's order."""
        return [i for s, n in self.ranges for i in range(s, s + n)]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_range() -> tuple[int, int]:
            with parser.in_parens():
                start = parser.parse_integer(allow_boolean=False)
                parser.parse_punctuation(",")
                length = parser.parse_integer(allow_boolean=False)
            return start, length

        with parser.in_angle_brackets():
            parser.parse_keyword("axis")
            parser.parse_punctuation("=")
            axis = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            parser.parse_keyword("ranges")
            parser.parse_punctuation("=")
            ranges = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_range)
            parser.parse_punctuation(",")
            parser.parse_keyword("full")
            parser.parse_punctuation("=")
            full = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: parser.parse_integer(allow_boolean=False),
            )
        return (
            IntAttr(axis),
            ArrayAttr(IntAttr(s) for s, _ in ranges),
            ArrayAttr(IntAttr(n) for _, n in ranges),
            ArrayAttr(IntAttr(d) for d in full),
        )

    def print_parameters(self, printer: Printer) -> None:
        ranges = ", ".join(f"({s}, {n})" for s, n in self.ranges)
        full = ", ".join(str(d) for d in self.full_shape)
        printer.print_string(f"<axis = {self.axis_index}, ranges = [{ranges}], full = [{full}]>")

    def verify(self) -> None:
        full = self.full_shape
        axis = self.axis_index
        if not full:
            raise VerifyException("#tp.slice: the full shape has rank 0; nothing to cut")
        if any(d <= 0 for d in full):
            raise VerifyException(f"#tp.slice: full shape {list(full)} has a non-positive dim")
        if not 0 <= axis < len(full):
            raise VerifyException(
                f"#tp.slice: axis {axis} is out of range for full shape {list(full)}"
            )
        ranges = self.ranges
        if not ranges:
            raise VerifyException("#tp.slice: no ranges; a slice takes at least one")
        for start, length in ranges:
            if length <= 0:
                raise VerifyException(f"#tp.slice: range ({start}, {length}) is empty")
            if start < 0 or start + length > full[axis]:
                raise VerifyException(
                    f"#tp.slice: range ({start}, {length}) is out of bounds for axis "
                    f"{axis} of size {full[axis]}"
                )
        ordered = sorted(ranges)
        for (s0, n0), (s1, n1) in zip(ordered, ordered[1:], strict=False):
            if s1 < s0 + n0:
                raise VerifyException(f"#tp.slice: ranges ({s0}, {n0}) and ({s1}, {n1}) overlap")


def even_ranges(extent: int, n: int) -> list[tuple[int, int]]:
    """``extent`` positions cut into ``n`` runs ``(start, len)`` in order, as even as the
    extent allows (the first ``extent % n`` one longer): each chip's block of an axis."""
    base, extra = divmod(extent, n)
    out, start = [], 0
    for s in range(n):
        length = base + (1 if s < extra else 0)
        out.append((start, length))
        start += length
    return out


def blocks(axis: int, full: Sequence[int], n: int) -> list[SliceAttr]:
    """The ``n`` chips' blocks of a ``full``-shaped tensor along ``axis`` (`even_ranges`),
    one slice a chip in chip order: how a reduce-scatter or an all-gather cuts it."""
    return [SliceAttr(axis, [r], full) for r in even_ranges(full[axis], n)]


def chip_of(type_: Attribute) -> int | None:
    """The chip owning a value of this type, or None for the replicated spine."""
    if isinstance(type_, TensorType) and isinstance(type_.encoding, ChipAttr):
        return type_.encoding.value
    return None


def on_chip(type_: TensorType, chip: int | None) -> TensorType:
    """The same tensor type owned by ``chip`` (None: the spine)."""
    encoding: Attribute = NoneAttr() if chip is None else ChipAttr(chip)
    return TensorType(type_.element_type, type_.get_shape(), encoding)
