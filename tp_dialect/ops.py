"""tp operations: the source-level ops a generator writes, and the spatial ops passes issue.

Source level: ``tp.shard`` (a chip's slice of a full tensor: the host's loading map),
``tp.unshard`` (the chips' slices assembled into a full host output: the storing map),
``tp.allreduce`` (out = sum of one partial per chip), ``tp.maxloc`` (the largest value over
the chips with its index: a vocab-parallel head's greedy token); ``tp.reduce_scatter`` and
``tp.all_gather`` are in `tp_dialect.scatter_ops` (each chip's block of a sum; the blocks
assembled). Spatial: ``tp.section`` (one statement's work on its chips), ``tp.yield``,
``tp.transfer`` (a copy between chips) and ``tp.barrier`` (closes a phase).
Each verifier names the op, the value and the chip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, TypeAlias

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from tp_dialect.attrs import SliceAttr, chip_of, i64_attr
from tp_dialect.collectives import (
    ALLREDUCE,
    DEFAULT,
    MAXLOC,
    AllReduceAlgorithmAttr,
    AllReduceEntry,
    MaxLocAlgorithmAttr,
    MaxLocEntry,
)
from tp_dialect.grid import require_chips
from tp_dialect.op_checks import check_chip as _check_chip
from tp_dialect.op_checks import describe as _describe
from tp_dialect.op_checks import shape_of as _shape
from tp_dialect.scatter_ops import AllGatherOp


@irdl_op_definition
class ShardOp(IRDLOperation):
    """A chip's slice of a full (host or spine) tensor: what the host loads onto the chip.

    ``%w1 = tp.shard %w at #tp.slice<...> : tensor<64x32xf32> -> tensor<16x32xf32, #tp.chip<1>>``
    """

    name = "tp.shard"

    source = operand_def(TensorType)
    slice = prop_def(SliceAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$source `at` qualified($slice) attr-dict `:` type($source) `->` type($result)"
    )

    def __init__(self, source: SSAValue, slice_: SliceAttr, result_type: TensorType):
        super().__init__(
            operands=[source], result_types=[result_type], properties={"slice": slice_}
        )

    @property
    def chip(self) -> int:
        chip = chip_of(self.result.type)
        assert chip is not None
        return chip

    def verify_(self) -> None:
        chip = chip_of(self.result.type)
        if chip is None:
            raise VerifyException(
                "'tp.shard' result must be owned by a chip (tensor type encoding #tp.chip<c>)"
            )
        _check_chip(self, chip, "result")
        if (src := chip_of(self.source.type)) is not None:
            raise VerifyException(
                f"'tp.shard' source {_describe(self.source)} is already on chip {src}; "
                "a shard cuts a full (unowned) tensor"
            )
        full, got = self.slice.full_shape, _shape(self.source)
        if got != full:
            raise VerifyException(
                f"'tp.shard' source shape {list(got)} differs from the slice's full "
                f"shape {list(full)}"
            )
        want, res = self.slice.shape, _shape(self.result)
        if res != want:
            raise VerifyException(
                f"'tp.shard' result shape {list(res)} on chip {chip} differs from the "
                f"slice's shape {list(want)}"
            )
        assert isinstance(self.source.type, TensorType)
        assert isinstance(self.result.type, TensorType)
        if self.source.type.element_type != self.result.type.element_type:
            raise VerifyException("'tp.shard' result element type differs from the source's")


@irdl_op_definition
class UnshardOp(IRDLOperation):
    """The chips' slices stored back into one full tensor: the host's storing map.

    Its result is a host output (e.g. a KV cache written by every chip), so it may only
    be returned; computing on it would move chip data to the spine without an all-reduce.
    """

    name = "tp.unshard"

    parts = var_operand_def(TensorType)
    slices = prop_def(ArrayAttr[SliceAttr])
    result = result_def(TensorType)

    assembly_format = (
        "$parts `slices` qualified($slices) attr-dict `:` type($parts) `->` type($result)"
    )

    def __init__(
        self,
        parts: Sequence[SSAValue],
        slices: Sequence[SliceAttr],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[parts],
            result_types=[result_type],
            properties={"slices": ArrayAttr(slices)},
        )

    def verify_(self) -> None:
        slices = list(self.slices.data)
        if len(slices) != len(self.parts):
            raise VerifyException(
                f"'tp.unshard' has {len(self.parts)} parts but {len(slices)} slices"
            )
        if chip_of(self.result.type) is not None:
            raise VerifyException("'tp.unshard' result must not be owned by a chip")
        full = _shape(self.result)
        covered: dict[int, list[tuple[int, int, int]]] = {}
        for i, (part, sl) in enumerate(zip(self.parts, slices, strict=True)):
            chip = chip_of(part.type)
            if chip is None:
                raise VerifyException(
                    f"'tp.unshard' part #{i} {_describe(part)} is not owned by a chip"
                )
            _check_chip(self, chip, f"part #{i}")
            if sl.full_shape != full:
                raise VerifyException(
                    f"'tp.unshard' slice #{i} is of full shape {list(sl.full_shape)}, "
                    f"the result is {list(full)}"
                )
            if _shape(part) != sl.shape:
                raise VerifyException(
                    f"'tp.unshard' part #{i} on chip {chip} has shape "
                    f"{list(_shape(part))}, its slice {list(sl.shape)}"
                )
            # Runs, not positions: a check in time and memory linear in the ranges written.
            covered.setdefault(sl.axis_index, []).extend((s, n, i) for s, n in sl.ranges)
        if len(covered) != 1:
            raise VerifyException(
                "'tp.unshard' parts must cover the full tensor exactly, along one axis"
            )
        axis, runs = next(iter(covered.items()))
        runs.sort()
        for (s0, n0, i0), (s1, _, i1) in zip(runs, runs[1:], strict=False):
            if s1 < s0 + n0:
                later = max(i0, i1)
                raise VerifyException(
                    f"'tp.unshard' part #{later} on chip {chip_of(self.parts[later].type)} "
                    "overlaps an earlier part"
                )
        if sum(n for _, n, _ in runs) != full[axis]:
            raise VerifyException(
                "'tp.unshard' parts must cover the full tensor exactly, along one axis"
            )


@irdl_op_definition
class AllReduceOp(IRDLOperation):
    """``out = Σ partials``: one partial per chip, in chip order; the sum is the spine.

    How the sum is formed is an ``algorithm`` the lowering picks: ``fold`` (the seed's, the
    default: partials to chip 0, the sum back), ``ring`` (the sum left on every chip),
    ``oneshot`` (every chip receives every partial and adds them in chip order) or
    ``twoshot`` (a reduce-scatter of 1/N slices, then an all-gather); every chip holds the
    left fold of the partials in chip order (ring: up to f32 rounding).

    ``%s = tp.allreduce %p0, %p1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32,
    #tp.chip<1>> -> tensor<1x8xf32>``
    """

    name = "tp.allreduce"

    partials = var_operand_def(TensorType)
    algorithm = opt_prop_def(AllReduceAlgorithmAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$partials (`algorithm` $algorithm^)? attr-dict `:` type($partials) `->` type($result)"
    )

    ALGORITHMS: ClassVar[tuple[str, ...]] = tuple(ALLREDUCE)
    """The algorithms, by name (`tp_dialect.collectives.ALLREDUCE`)."""
    EVERY_CHIP: ClassVar[tuple[str, ...]] = tuple(
        e.name for e in ALLREDUCE.values() if e.lands_on_every_chip
    )
    """The algorithms whose sum lands on every chip (``fold`` sums on chip 0, then sends it)."""

    def __init__(
        self, partials: Sequence[SSAValue], result_type: TensorType, algorithm: str | None = None
    ):
        props = {} if algorithm is None else {"algorithm": AllReduceAlgorithmAttr.named(algorithm)}
        super().__init__(operands=[partials], result_types=[result_type], properties=props)

    @property
    def algorithm_name(self) -> str:
        """The algorithm forming the sum (``fold`` when none is written)."""
        return DEFAULT if self.algorithm is None else str(self.algorithm.data)

    @property
    def entry(self) -> AllReduceEntry:
        """The registry entry of its algorithm: what every rule asks of it."""
        return ALLREDUCE[self.algorithm_name]

    def set_algorithm(self, name: str) -> None:
        """Write algorithm ``name`` (a KeyError naming the algorithms if there is none)."""
        self.algorithm = AllReduceAlgorithmAttr.named(name)

    @property
    def sums_on_every_chip(self) -> bool:
        """Whether the algorithm leaves the sum on every chip (`EVERY_CHIP`)."""
        return self.entry.lands_on_every_chip

    @property
    def lands_on_every_chip(self) -> bool:
        """Whether the result is formed on every chip (`sums_on_every_chip`): the name every
        collective answers by (`Collective`)."""
        return self.sums_on_every_chip

    def chip_operands(self) -> list[tuple[SSAValue, ...]]:
        """What each chip brings, in chip order: its partial."""
        return [(p,) for p in self.partials]

    def verify_(self) -> None:
        # The algorithm is an enum attribute: a name not in the registry is refused where
        # it is parsed (`tp_dialect.collectives`).
        n = require_chips(self)
        if len(self.partials) != n:
            raise VerifyException(
                f"'tp.allreduce' has {len(self.partials)} partials, the module has "
                f"{n} chips: it needs exactly one partial per chip"
            )
        if chip_of(self.result.type) is not None:
            raise VerifyException(
                "'tp.allreduce' result must be the replicated spine (no chip encoding)"
            )
        assert isinstance(self.result.type, TensorType)
        for c, p in enumerate(self.partials):
            owner = chip_of(p.type)
            if owner != c:
                where = "the spine" if owner is None else f"chip {owner}"
                raise VerifyException(
                    f"'tp.allreduce' partial #{c} {_describe(p)} must be on chip {c}, "
                    f"it is on {where}"
                )
            assert isinstance(p.type, TensorType)
            if (
                tuple(p.type.get_shape()) != tuple(self.result.type.get_shape())
                or p.type.element_type != self.result.type.element_type
            ):
                raise VerifyException(
                    f"'tp.allreduce' partial #{c} {_describe(p)} on chip {c} has type "
                    f"{p.type}, which does not match the result {self.result.type}"
                )


@irdl_op_definition
class MaxLocOp(IRDLOperation):
    """The largest value over the chips, element by element, with its index: one
    (value, index) pair per chip, in chip order, each on its chip; the results are the spine.
    On equal values the SMALLEST index wins, whichever chip holds it (MPI's ``MAXLOC``;
    the first maximum, as ``torch.argmax`` picks). A vocab-parallel LM head's greedy token:
    each chip's argmax over its vocab slice, then this collective — the logits never cross.

    How it is formed is an ``algorithm``: ``fold`` (the pairs to chip 0, the result back to
    the chips that read it; the default) or ``oneshot`` (every pair to every chip).

    ``%v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>,
    tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64,
    #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>``
    """

    name = "tp.maxloc"

    values = var_operand_def(TensorType)
    indices = var_operand_def(TensorType)
    algorithm = opt_prop_def(MaxLocAlgorithmAttr)
    value = result_def(TensorType)
    index = result_def(TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    assembly_format = (
        "$values `indices` $indices (`algorithm` $algorithm^)? attr-dict `:` type($values) "
        "`indices` type($indices) `->` type($value) `,` type($index)"
    )

    ALGORITHMS: ClassVar[tuple[str, ...]] = tuple(MAXLOC)
    """The algorithms, by name (`tp_dialect.collectives.MAXLOC`)."""
    EVERY_CHIP: ClassVar[tuple[str, ...]] = tuple(
        e.name for e in MAXLOC.values() if e.lands_on_every_chip
    )
    """The algorithms whose result is formed on every chip (``fold`` forms it on chip 0)."""

    def __init__(
        self,
        values: Sequence[SSAValue],
        indices: Sequence[SSAValue],
        value_type: TensorType,
        index_type: TensorType,
        algorithm: str | None = None,
    ):
        props = {} if algorithm is None else {"algorithm": MaxLocAlgorithmAttr.named(algorithm)}
        super().__init__(
            operands=[values, indices], result_types=[value_type, index_type], properties=props
        )

    @property
    def algorithm_name(self) -> str:
        """The algorithm forming the result (``fold`` when none is written)."""
        return DEFAULT if self.algorithm is None else str(self.algorithm.data)

    @property
    def entry(self) -> MaxLocEntry:
        """The registry entry of its algorithm: what every rule asks of it."""
        return MAXLOC[self.algorithm_name]

    def set_algorithm(self, name: str) -> None:
        """Write algorithm ``name`` (a KeyError naming the algorithms if there is none)."""
        self.algorithm = MaxLocAlgorithmAttr.named(name)

    @property
    def lands_on_every_chip(self) -> bool:
        """Whether the algorithm forms the result on every chip (`EVERY_CHIP`)."""
        return self.entry.lands_on_every_chip

    def pairs(self) -> list[tuple[SSAValue, SSAValue]]:
        """Each chip's (value, index), in chip order."""
        return list(zip(self.values, self.indices, strict=True))

    def chip_operands(self) -> list[tuple[SSAValue, ...]]:
        """What each chip brings, in chip order: its (value, index) pair."""
        return list(self.pairs())

    def verify_(self) -> None:
        n = require_chips(self)
        if len(self.values) != n or len(self.indices) != n:
            raise VerifyException(
                f"'tp.maxloc' has {len(self.values)} values and {len(self.indices)} indices, "
                f"the module has {n} chips: it needs exactly one pair per chip"
            )
        for result, what in ((self.value, "value"), (self.index, "index")):
            if chip_of(result.type) is not None:
                raise VerifyException(
                    f"'tp.maxloc' {what} result must be the replicated spine (no chip encoding)"
                )
        vt, it = self.value.type, self.index.type
        assert isinstance(vt, TensorType) and isinstance(it, TensorType)
        if tuple(vt.get_shape()) != tuple(it.get_shape()):
            raise VerifyException(
                f"'tp.maxloc' value result {vt} and index result {it} differ in shape"
            )
        if not isinstance(it.element_type, IntegerType):
            raise VerifyException(f"'tp.maxloc' index result {it} must hold integers")
        for c, (v, i) in enumerate(self.pairs()):
            for operand, want, what in ((v, vt, "value"), (i, it, "index")):
                owner = chip_of(operand.type)
                if owner != c:
                    where = "the spine" if owner is None else f"chip {owner}"
                    raise VerifyException(
                        f"'tp.maxloc' {what} #{c} {_describe(operand)} must be on chip {c}, "
                        f"it is on {where}"
                    )
                assert isinstance(operand.type, TensorType)
                if (
                    tuple(operand.type.get_shape()) != tuple(want.get_shape())
                    or operand.type.element_type != want.element_type
                ):
                    raise VerifyException(
                        f"'tp.maxloc' {what} #{c} {_describe(operand)} on chip {c} has type "
                        f"{operand.type}, which does not match the result {want}"
                    )


Collective: TypeAlias = AllReduceOp | MaxLocOp | AllGatherOp
"""A collective over every chip — one operand group per chip, each on its chip, the result
the spine (`chip_operands`, ``algorithm_name``, `lands_on_every_chip`) — and, as an
``isinstance`` class, the one place a new collective is listed."""


@irdl_op_definition
class SectionOp(IRDLOperation):
    """One statement's work placed on its chips: a region run on each chip in ``chips``.

    ``%x = tp.section "q_proj" on [1] { ... tp.yield %y : T } : T``. A section on
    several chips is replicated spine work, or an all-reduce reading each partial
    where it lives.
    """

    name = "tp.section"

    chips = prop_def(DenseArrayBase[I64])
    label = opt_prop_def(StringAttr)
    body = region_def("single_block")
    outs = var_result_def()

    def __init__(
        self,
        chips: Sequence[int],
        body: Region,
        result_types: Sequence[Attribute],
        label: str | None = None,
    ):
        props: dict[str, Attribute] = {"chips": DenseArrayBase.from_list(i64, chips)}
        if label is not None:
            props["label"] = StringAttr(label)
        super().__init__(result_types=[result_types], regions=[body], properties=props)

    @property
    def chip_list(self) -> tuple[int, ...]:
        return tuple(self.chips.get_values())

    @property
    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    @classmethod
    def parse(cls, parser: Parser) -> SectionOp:
        label = parser.parse_optional_str_literal()
        parser.parse_keyword("on")
        chips = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
        )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        types: list[Attribute] = []
        if parser.parse_optional_punctuation(":"):
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        op = cls(chips, body, types, label)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        if self.label is not None:
            printer.print_string(" ")
            printer.print_string_literal(self.label.data)
        printer.print_string(" on [")
        printer.print_list(self.chip_list, printer.print_int)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        if self.outs:
            printer.print_string(" : ")
            printer.print_list(self.outs.types, printer.print_attribute)

    def verify_(self) -> None:
        chips = self.chip_list
        if not chips:
            raise VerifyException("'tp.section' runs on no chip; give it at least one")
        if list(chips) != sorted(set(chips)):
            raise VerifyException(f"'tp.section' chips {list(chips)} must be strictly increasing")
        for c in chips:
            _check_chip(self, c, "chip list")
        block = self.body.block
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException("'tp.section' body must end with 'tp.yield'")
        yielded = block.last_op.values.types
        if tuple(yielded) != tuple(self.outs.types):
            raise VerifyException(
                f"'tp.section' yields {len(yielded)} value(s) of types "
                f"{list(map(str, yielded))}, its results are "
                f"{list(map(str, self.outs.types))}"
            )
        for i, res in enumerate(self.outs):
            owner = chip_of(res.type)
            if owner is not None and owner not in chips:
                raise VerifyException(
                    f"'tp.section' result #{i} is on chip {owner}, which the section "
                    f"(on {list(chips)}) does not run on"
                )
        parent = self.parent_op()
        if parent is not None and parent.name not in ("func.func", "tp.chip_program"):
            # A statement of a function or of a chip's program; nested in other work, its
            # chips would not say where that work runs.
            raise VerifyException(
                f"'tp.section' is a statement of a function or a chip program, not of "
                f"'{parent.name}'"
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a section, yielding what the section binds."""

    name = "tp.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(SectionOp), Pure())

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class TransferOp(IRDLOperation):
    """ChipTransfer: tensor ``%x`` copied from chip ``source``'s memory to chip ``dest``'s,
    before the reader's first read. The value keeps its name; it now also lives on ``dest``.

    ``tp.transfer %x from 1 to 0 : tensor<8xf32, #tp.chip<1>>``. A spine tensor (e.g. an
    all-reduce's sum going back from the chip that folded it) can be sent too.
    """

    name = "tp.transfer"

    input = operand_def(TensorType)
    source = prop_def(IntegerAttr[I64])
    dest = prop_def(IntegerAttr[I64])

    assembly_format = "$input `from` $source `to` $dest attr-dict `:` type($input)"

    def __init__(self, value: SSAValue, source: int, dest: int):
        super().__init__(
            operands=[value],
            properties={"source": i64_attr(source), "dest": i64_attr(dest)},
        )

    @property
    def src(self) -> int:
        return self.source.value.data

    @property
    def dst(self) -> int:
        return self.dest.value.data

    def verify_(self) -> None:
        _check_chip(self, self.src, "source")
        _check_chip(self, self.dst, "destination")
        if self.src == self.dst:
            raise VerifyException(
                f"'tp.transfer' of {_describe(self.input)} goes from chip {self.src} to itself"
            )
        owner = chip_of(self.input.type)
        if owner is not None and owner != self.src:
            raise VerifyException(
                f"'tp.transfer' input {_describe(self.input)} is on chip {owner}; only its "
                f"own chip sends it, not chip {self.src}"
            )


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Closes a phase: no chip starts the next phase before every chip ends this one."""

    name = "tp.barrier"

    phase = opt_prop_def(IntegerAttr[I64])

    assembly_format = "(`phase` $phase^)? attr-dict"

    def __init__(self, phase: int | None = None):
        props: dict[str, Attribute] = {}
        if phase is not None:
            props["phase"] = i64_attr(phase)
        super().__init__(properties=props)

    def verify_(self) -> None:
        if self.phase is not None and self.phase.value.data < 0:
            raise VerifyException(f"'tp.barrier' phase {self.phase.value.data} is negative")
