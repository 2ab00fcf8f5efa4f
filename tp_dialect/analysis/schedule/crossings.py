"""ChipTransfer: the tensors that cross between chips when each section runs where it is.

For each statement in program order, every value it reads on a chip that does not yet hold
it crosses there from the chip that wrote it, once, before that first read: once per
(tensor, reader chip). Host values (weights, inputs, constants) cross nothing.

A lowered call (`tp_dialect.analysis.calls.outlined`) is a statement of its caller too: it reads
each operand on the chips its callee reads that argument on (so what the callee takes for a host
value every reading chip holds is there before the call), and its results are held where the
callee leaves them (`CallSummary`); the callee's own transfers are the callee's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Operation, SSAValue

from tp_dialect.analysis.calls.summary import EVERY, CallSummary, known_callee
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


def transfers(
    func: FuncOp, n_chips: int, calls: Mapping[FuncOp, CallSummary] | None = None
) -> list[ChipTransfer]:
    """The transfers ``func``'s sections (and lowered calls, whose callees ``calls``
    summarizes) need, in program order (existing ones honoured).

    Raises TpDiagnostic on a statement that is neither a section nor a lowered call (run
    tp-relocate first), and on a value that is not a tensor read on a chip that did not
    compute it (only tensors cross: ``section-chip``).
    """
    holders: dict[SSAValue, set[int]] = {}
    writers: dict[SSAValue, tuple[int, ...]] = {}
    needed: list[ChipTransfer] = []
    everywhere: set[SSAValue] = set()  # lowered calls' results every chip holds its own of
    for op in statements(func):
        if isinstance(op, TransferOp):
            holders.setdefault(op.input, set()).add(op.dst)
            continue
        summary = known_callee(op, calls or {})
        if not isinstance(op, SectionOp) and summary is None:
            raise TpReject.NOT_SECTIONED.at(
                op, f"'{op.name}' is not in a tp.section: run tp-relocate before placing transfers"
            )
        reads = reads_where(op, n_chips) if isinstance(op, SectionOp) else call_reads(op, summary)
        for value, chip in reads:
            held = holders.get(value)
            if held is None:
                if is_host_value(value) or value in everywhere:
                    continue
                raise TpReject.NOT_SECTIONED.at(
                    op,
                    f"'{op.name}' reads %{value_name(value)}, which no earlier section "
                    "writes: a value chips read is a section's result or a host input",
                )
            if chip not in held:
                src = min(writers[value])
                if not isinstance(value.type, TensorType):
                    who = "a section" if summary is None else "a call's callee"
                    raise TpReject.SECTION_CHIP.at(
                        op,
                        f"{who} on chip {chip} reads %{value_name(value)} ({value.type}), "
                        f"computed on chip {src} only: only tensors cross between chips "
                        "(tp.transfer), a scalar is read where it is computed",
                    )
                needed.append(ChipTransfer(value, src, chip, op))
                held.add(chip)
        if isinstance(op, SectionOp):
            chips = write_chips(op, n_chips)
            for result in op.outs:
                holders[result] = set(chips)
                writers[result] = chips
            continue
        assert isinstance(op, CallOp) and summary is not None
        for result, where in zip(op.results, summary.held, strict=True):
            if isinstance(where, int):  # handed straight back: held where the operand is
                operand = op.arguments[where]
                if operand in holders:
                    holders[result], writers[result] = holders[operand], writers[operand]
                    continue
                where = EVERY  # a host value, or one every chip holds
            if where is EVERY or not where:
                everywhere.add(result)
                continue
            holders[result] = set(where)
            writers[result] = tuple(sorted(where))
    return needed


def call_reads(op: Operation, summary: CallSummary | None) -> Iterator[tuple[SSAValue, int]]:
    """(operand, chip) for every operand of a lowered call and each chip its callee reads
    the argument on: what must be there before the call. Host values too (they cross
    nothing; the caller's loop skips them)."""
    assert isinstance(op, CallOp) and summary is not None
    for value, chips in zip(op.arguments, summary.reads, strict=True):
        for chip in sorted(chips):
            if not is_host_value(value):
                yield value, chip
