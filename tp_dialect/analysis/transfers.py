"""ChipTransfer: the tensors that cross between chips when each section runs where it is.

For each statement in program order, every value it reads on a chip that does not yet hold
it crosses there from the chip that wrote it, once, before that first read: once per
(tensor, reader chip). Host values (weights, inputs, constants) cross nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from tp_dialect.analysis.touch import is_host_value, reads_where, statements, write_chips
from tp_dialect.names import value_name
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.reject import TpReject


@dataclass(frozen=True)
class ChipTransfer:
    """``value`` crosses from chip ``src`` to chip ``dst`` before ``reader`` runs."""

    value: SSAValue
    src: int
    dst: int
    reader: Operation


def transfers(func: FuncOp, n_chips: int) -> list[ChipTransfer]:
    """The transfers ``func``'s sections need, in program order (existing ones honoured).

    Raises TpDiagnostic on a statement that is not a section (run tp-relocate first), and
    on a value that is not a tensor read on a chip that did not compute it (only tensors
    cross: ``section-chip``).
    """
    holders: dict[SSAValue, set[int]] = {}
    writers: dict[SSAValue, tuple[int, ...]] = {}
    needed: list[ChipTransfer] = []
    for op in statements(func):
        if isinstance(op, TransferOp):
            holders.setdefault(op.input, set()).add(op.dst)
            continue
        if not isinstance(op, SectionOp):
            raise TpReject.NOT_SECTIONED.at(
                op, f"'{op.name}' is not in a tp.section: run tp-relocate before placing transfers"
            )
        for value, chip in reads_where(op, n_chips):
            held = holders.get(value)
            if held is None:
                if is_host_value(value):
                    continue
                raise TpReject.NOT_SECTIONED.at(
                    op,
                    f"'tp.section' reads %{value_name(value)}, which no earlier section "
                    "writes: a value chips read is a section's result or a host input",
                )
            if chip not in held:
                src = min(writers[value])
                if not isinstance(value.type, TensorType):
                    raise TpReject.SECTION_CHIP.at(
                        op,
                        f"a section on chip {chip} reads %{value_name(value)} ({value.type}), "
                        f"computed on chip {src} only: only tensors cross between chips "
                        "(tp.transfer), a scalar is read where it is computed",
                    )
                needed.append(ChipTransfer(value, src, chip, op))
                held.add(chip)
        chips = write_chips(op, n_chips)
        for result in op.outs:
            holders[result] = set(chips)
            writers[result] = chips
    return needed
