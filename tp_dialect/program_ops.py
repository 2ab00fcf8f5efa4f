"""tp ops for per-chip programs and the host's relay between them.

``tp.chip_program on c (%inputs) { ^bb0(%args: types): ... tp.finish %outs } -> (types)``:
chip c's own program, isolated from the rest (host inputs come in as block arguments, their
types written there once — ``: (types)`` before ``->`` is read too —, outputs leave through
``tp.finish``).
``tp.link k sends(...) receives [...]``: the k-th place the program halts for transfers —
the tensors it sends, by buffer name, and the ones it receives (its results). ``tp.relay``
holds the host's schedule: ``tp.run_to`` (run a chip to a halt) and ``tp.copy`` (copy a sent
buffer from one chip to another), round by round. `uses_through_programs`: what finally reads
a value handed into chip programs (the ports' roles are read through it, `signature.ports`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, ArrayAttr, DenseArrayBase, IntegerAttr, StringAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Region, SSAValue, Use
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from tp_dialect.attrs import i64_attr
from tp_dialect.grid import require_chips
from tp_dialect.ops import _check_chip

CHIP_FUNCTION = "tp.chip"
"""The attribute marking a per-chip function: one chip's part of a function the lowering
placed once (``@layer.chip1``), called from that chip's program, its links numbered from 1."""


@irdl_op_definition
class ChipProgramOp(IRDLOperation):
    """One chip's program: its sections in order, halting at its link points."""

    name = "tp.chip_program"

    chip = prop_def(IntegerAttr[I64])
    inputs = var_operand_def()
    body = region_def("single_block")
    outputs = var_result_def()

    traits = traits_def(IsolatedFromAbove(), HasParent(FuncOp))

    def __init__(
        self, chip: int, inputs: Sequence[SSAValue], body: Region, output_types: Sequence[Attribute]
    ):
        super().__init__(
            operands=[inputs],
            result_types=[output_types],
            regions=[body],
            properties={"chip": i64_attr(chip)},
        )

    @property
    def chip_index(self) -> int:
        return self.chip.value.data

    @classmethod
    def parse(cls, parser: Parser) -> ChipProgramOp:
        parser.parse_keyword("on")
        chip = parser.parse_integer(allow_boolean=False)
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        body = parser.parse_region()
        if parser.parse_optional_punctuation(":") is not None:  # the inputs' types spelled out
            in_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        else:  # as the entry block's arguments have them (what the printer writes)
            in_types = [a.type for a in body.blocks[0].args] if body.blocks else []
        parser.parse_punctuation("->")
        out_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        inputs = parser.resolve_operands(operands, in_types, parser.pos)
        return cls(chip, inputs, body, out_types)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" on {self.chip_index} (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=True)
        # The inputs' types are the entry block's arguments' (verified): written once, there.
        printer.print_string(" -> (")
        printer.print_list(self.outputs.types, printer.print_attribute)
        printer.print_string(")")

    def verify_(self) -> None:
        _check_chip(self, self.chip_index, "program")
        func = self.parent_op()
        for i, v in enumerate(self.inputs):
            # What the host places on the chip before it starts: its own inputs, nothing
            # another program or the host computes meanwhile (that crosses by tp.link).
            if not (isinstance(v, BlockArgument) and v.owner.parent_op() is func):
                raise VerifyException(
                    f"'tp.chip_program' on chip {self.chip_index}: input #{i} is not an "
                    "argument of its function (a program starts from the host's inputs; "
                    "anything computed reaches it through a tp.link)"
                )
        block = self.body.block
        if tuple(a.type for a in block.args) != tuple(self.inputs.types):
            raise VerifyException(
                f"'tp.chip_program' on chip {self.chip_index}: block arguments must match "
                "its inputs"
            )
        last = block.last_op
        if not isinstance(last, FinishOp):
            raise VerifyException(
                f"'tp.chip_program' on chip {self.chip_index} must end with 'tp.finish'"
            )
        if tuple(last.values.types) != tuple(self.outputs.types):
            raise VerifyException(
                f"'tp.chip_program' on chip {self.chip_index}: 'tp.finish' values must match "
                "its results"
            )
        halts = [op.index.value.data for op in block.ops if isinstance(op, LinkOp)]
        if halts != sorted(set(halts)):
            raise VerifyException(
                f"'tp.chip_program' on chip {self.chip_index}: link points {halts} must be "
                "numbered in increasing program order"
            )


@irdl_op_definition
class FinishOp(IRDLOperation):
    """Ends a chip's program, handing its outputs to the host."""

    name = "tp.finish"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(ChipProgramOp))

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class LinkOp(IRDLOperation):
    """LinkPoint: where a chip's program halts. It sends ``sent`` under ``send_names`` (after
    the sections that stored them) and receives ``recv_names`` as its results (before the
    sections that load them). Link 0, if present, is the start: what the host places
    before the chip runs."""

    name = "tp.link"

    index = prop_def(IntegerAttr[I64])
    sent = var_operand_def()
    send_names = prop_def(ArrayAttr[StringAttr])
    recv_names = prop_def(ArrayAttr[StringAttr])
    received = var_result_def()

    # A chip's program, or a per-chip function it calls (`CHIP_FUNCTION`): its halts.
    traits = traits_def(HasParent(ChipProgramOp, FuncOp))

    assembly_format = (
        "$index `sends` `(` $sent `)` `as` $send_names `receives` $recv_names attr-dict "
        "`:` functional-type($sent, $received)"
    )

    def __init__(
        self,
        index: int,
        sent: Sequence[SSAValue],
        send_names: Sequence[str],
        recv_names: Sequence[str],
        recv_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[sent],
            result_types=[recv_types],
            properties={
                "index": i64_attr(index),
                "send_names": ArrayAttr(StringAttr(n) for n in send_names),
                "recv_names": ArrayAttr(StringAttr(n) for n in recv_names),
            },
        )

    @property
    def halt(self) -> int:
        return self.index.value.data

    @property
    def sends(self) -> list[str]:
        return [s.data for s in self.send_names.data]

    @property
    def receives(self) -> list[str]:
        return [s.data for s in self.recv_names.data]

    def verify_(self) -> None:
        if len(self.sends) != len(self.sent):
            raise VerifyException(
                f"'tp.link' {self.halt} sends {len(self.sent)} values under {len(self.sends)} names"
            )
        if len(self.receives) != len(self.received):
            raise VerifyException(
                f"'tp.link' {self.halt} receives {len(self.receives)} names into "
                f"{len(self.received)} results"
            )
        if self.halt < 0:
            raise VerifyException(f"'tp.link' {self.halt} is negative: halts count from 0")
        if self.halt == 0 and self.sent:
            raise VerifyException("'tp.link' 0 is the start: it receives, it cannot send")
        parent = self.parent_op()
        if isinstance(parent, FuncOp):
            if CHIP_FUNCTION not in parent.attributes:
                raise VerifyException(
                    f"'tp.link' {self.halt} in @{parent.sym_name.data}, which is not a per-chip "
                    f"function: a link halts a chip's program or a function marked "
                    f"{CHIP_FUNCTION} that chip's program calls"
                )
            if self.halt == 0:
                raise VerifyException(
                    f"'tp.link' 0 in @{parent.sym_name.data}: a per-chip function's links "
                    "count from 1 (only a program has a start)"
                )


@irdl_op_definition
class RelayOp(IRDLOperation):
    """The host's relay: its steps in order, round by round."""

    name = "tp.relay"

    body = region_def("single_block")

    traits = traits_def(NoTerminator(), HasParent(FuncOp))

    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, steps: Sequence[IRDLOperation]):
        super().__init__(regions=[Region(Block(steps))])

    def verify_(self) -> None:
        # The relay is the host's schedule and nothing else: a chip's work belongs in its
        # program, so anything but a step here would run nowhere.
        for op in self.body.block.ops:
            if not isinstance(op, RunToOp | CopyOp | RelayRepeatOp):
                raise VerifyException(
                    "'tp.relay' holds only 'tp.run_to', 'tp.copy' and 'tp.relay_repeat' steps, "
                    f"not '{op.name}'"
                )


@irdl_op_definition
class RelayRepeatOp(IRDLOperation):
    """Steps the relay runs ``count`` times over: its body is the first time, as written;
    time i (from 0) is every step with its round plus ``i * rounds``, its halt plus ``i *
    strides[chip]``, and a buffer name starting with call tag ``tags[j]`` (the longest that
    fits) renamed to start with ``tags[j + i]`` (a name starting with no tag is the same each
    time). This is how the relay of a program calling one per-chip layer function per layer
    stays one layer long: the layer's rounds, written once."""

    name = "tp.relay_repeat"

    count = prop_def(IntegerAttr[I64])
    rounds = prop_def(IntegerAttr[I64])
    strides = prop_def(DenseArrayBase)
    tags = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), HasParent(RelayOp))

    assembly_format = (
        "$count `times` `every` $rounds `rounds` `strides` qualified($strides) `tags` $tags "
        "attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        count: int,
        rounds: int,
        strides: Sequence[int],
        tags: Sequence[str],
        steps: Sequence[IRDLOperation],
    ):
        super().__init__(
            regions=[Region(Block(steps))],
            properties={
                "count": i64_attr(count),
                "rounds": i64_attr(rounds),
                "strides": DenseArrayBase.from_list(i64, list(strides)),
                "tags": ArrayAttr(StringAttr(t) for t in tags),
            },
        )

    @property
    def tag_list(self) -> list[str]:
        return [t.data for t in self.tags.data]

    @property
    def stride_list(self) -> list[int]:
        return [int(x) for x in self.strides.get_values()]

    def verify_(self) -> None:
        count, rounds = self.count.value.data, self.rounds.value.data
        if count < 1 or rounds < 1:
            raise VerifyException(
                f"'tp.relay_repeat' {count} times every {rounds} rounds: both must be at least 1"
            )
        if len(set(self.tag_list)) != len(self.tag_list):
            raise VerifyException("'tp.relay_repeat' lists a call tag twice")
        if self.strides.elt_type != i64:
            raise VerifyException(
                f"'tp.relay_repeat' strides are {self.strides.elt_type}, not i64 halt counts"
            )
        n_chips = require_chips(self)
        if len(self.stride_list) != n_chips:
            raise VerifyException(
                f"'tp.relay_repeat' gives {len(self.stride_list)} strides for "
                f"{n_chips} chip{'s' if n_chips != 1 else ''}: one halt stride per chip"
            )
        if any(x < 0 for x in self.stride_list):
            raise VerifyException("'tp.relay_repeat' strides are halts moved on: none negative")
        steps = [op for op in self.body.block.ops if isinstance(op, RunToOp | CopyOp)]
        body_rounds = [op.round.value.data for op in steps]
        if body_rounds and max(body_rounds) - min(body_rounds) >= rounds:
            raise VerifyException(
                f"'tp.relay_repeat' every {rounds} rounds holds rounds {min(body_rounds)} to "
                f"{max(body_rounds)}: each time must come after the one before"
            )
        # Unrolled, every round and halt stays an i64 (each time's are the body's moved on).
        last = count - 1
        highest = [op.round.value.data + last * rounds for op in steps]
        highest += [
            op.halt.value.data + last * self.stride_list[op.chip.value.data]
            for op in steps
            if isinstance(op, RunToOp) and 0 <= op.chip.value.data < n_chips
        ]
        if highest and max(highest) >= 2**63:
            raise VerifyException(
                f"'tp.relay_repeat' {count} times every {rounds} rounds runs past the largest "
                "round or halt an i64 holds"
            )
        if count > len(self.tag_list):
            # Each time is one call's: the unrolled relay is never longer than its text.
            raise VerifyException(
                f"'tp.relay_repeat' {count} times lists {len(self.tag_list)} call tags: it "
                "runs at most once per tag"
            )
        for op in self.body.block.ops:
            if not isinstance(op, RunToOp | CopyOp):
                raise VerifyException(
                    f"'tp.relay_repeat' holds only 'tp.run_to' and 'tp.copy' steps, not '{op.name}'"
                )
            if isinstance(op, CopyOp):
                j = tag_index(op.tensor.data, self.tag_list)
                if j is not None and j + count > len(self.tag_list):
                    raise VerifyException(
                        f"'tp.relay_repeat' copies \"{op.tensor.data}\" of call tag "
                        f"{self.tag_list[j]!r} {count} times, past its last tag"
                    )


@irdl_op_definition
class RunToOp(IRDLOperation):
    """RelayStep: in ``round``, run chip ``chip`` to its halt ``halt``."""

    name = "tp.run_to"

    round = prop_def(IntegerAttr[I64])
    chip = prop_def(IntegerAttr[I64])
    halt = prop_def(IntegerAttr[I64])

    traits = traits_def(HasParent(RelayOp, RelayRepeatOp))

    assembly_format = "`round` $round `chip` $chip `halt` $halt attr-dict"

    def __init__(self, round_: int, chip: int, halt: int):
        super().__init__(
            properties={
                "round": i64_attr(round_),
                "chip": i64_attr(chip),
                "halt": i64_attr(halt),
            }
        )

    def verify_(self) -> None:
        r, chip, halt = self.round.value.data, self.chip.value.data, self.halt.value.data
        _check_round(self, r)
        _check_chip(self, chip, f"round {r} halt {halt}")
        if halt < 1:
            # Halt 0 is the start, where every chip stands before round 0.
            raise VerifyException(
                f"'tp.run_to' round {r} runs chip {chip} to halt {halt}: a chip is run to "
                "a halt after its start (1 or more)"
            )


@irdl_op_definition
class CopyOp(IRDLOperation):
    """RelayStep: in ``round``, copy the buffer ``tensor`` chip ``source`` sent to chip
    ``dest``."""

    name = "tp.copy"

    round = prop_def(IntegerAttr[I64])
    tensor = prop_def(StringAttr)
    source = prop_def(IntegerAttr[I64])
    dest = prop_def(IntegerAttr[I64])

    traits = traits_def(HasParent(RelayOp, RelayRepeatOp))

    assembly_format = "`round` $round $tensor `from` $source `to` $dest attr-dict"

    def __init__(self, round_: int, tensor: str, source: int, dest: int):
        super().__init__(
            properties={
                "round": i64_attr(round_),
                "tensor": StringAttr(tensor),
                "source": i64_attr(source),
                "dest": i64_attr(dest),
            }
        )

    def verify_(self) -> None:
        r, name = self.round.value.data, self.tensor.data
        src, dst = self.source.value.data, self.dest.value.data
        _check_round(self, r)
        _check_chip(self, src, f'source of "{name}"')
        _check_chip(self, dst, f'destination of "{name}"')
        if src == dst:
            raise VerifyException(f"'tp.copy' of \"{name}\" goes from chip {src} to itself")


def uses_through_programs(value: SSAValue) -> list[Use]:
    """Every use of ``value``, where a use as a chip program's operand is replaced by the
    uses of the block argument it binds (repeatedly): what finally reads the value, in
    whichever program. A block argument no op reads contributes nothing."""
    found: list[Use] = []
    pending = [value]
    while pending:
        for use in pending.pop().uses:
            if isinstance(use.operation, ChipProgramOp):
                pending.append(use.operation.body.block.args[use.index])
            else:
                found.append(use)
    return found


def chip_group(func: FuncOp) -> str | None:
    """The function a per-chip function is a chip's part of (``@layer.chip1`` -> ``layer``):
    the per-chip functions of one group pass buffers to each other by name. None for any
    other function."""
    attr = func.attributes.get(CHIP_FUNCTION)
    if not isinstance(attr, IntegerAttr):
        return None
    name = func.sym_name.data
    suffix = f".chip{attr.value.data}"
    return name[: -len(suffix)] if name.endswith(suffix) else name


def tag_index(name: str, tags: Sequence[str]) -> int | None:
    """The index of the longest call tag ``name`` starts with, if any."""
    best: int | None = None
    for j, tag in enumerate(tags):
        if tag and name.startswith(tag) and (best is None or len(tag) > len(tags[best])):
            best = j
    return best


def _check_round(op: RunToOp | CopyOp, r: int) -> None:
    if r < 0:
        raise VerifyException(f"'{op.name}' round {r} is negative")
