"""tp-fuse{shim=...}: producer-consumer statements grouped into fused sections, asking the
chip before each fusion.

Invariant: walking the statements in program order, a statement that consumes a value of the
group being built joins it only if the shim — always wrapped in `TensorParallelShim`, so a
fused op never spans two chips, mixes a chip's tensors with the spine, or holds a
collective's fold — says the grown group fits; otherwise the group is closed and the
statement starts the next. Each group of two or more becomes one ``tp.section`` (on the chip
of what it binds; the spine's: every chip) placed where its last statement was, yielding the
values used outside it. Refusals are printed (``report=true``) with the shim's reason.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass

from tp_dialect.analysis.provenance import Provenance
from tp_dialect.analysis.touch import is_statement
from tp_dialect.certificate import kept
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.names import value_name
from tp_dialect.ops import SectionOp, TransferOp, YieldOp
from tp_dialect.shims import Shim, TensorParallelShim, shim_named
from tp_dialect.signature import entry_function


@dataclass(frozen=True)
class Refusal:
    """A fusion the shim refused: ``op`` did not join the group ending at ``after``."""

    op: Operation
    after: Operation
    reason: str


def fusion_groups(func: FuncOp, shim: Shim) -> tuple[list[list[Operation]], list[Refusal]]:
    """The groups tp-fuse forms (each two or more statements) and the refusals on the way."""
    groups: list[list[Operation]] = []
    refusals: list[Refusal] = []
    current: list[Operation] = []
    produced: set = set()
    for op in func.body.block.ops:
        if not is_statement(op) or isinstance(op, SectionOp | TransferOp):
            continue
        if current and any(v in produced for v in op.operands):
            reason = shim.fits([*current, op])
            if reason is None:
                current.append(op)
                produced.update(op.results)
                continue
            refusals.append(Refusal(op, current[-1], reason))
        if len(current) > 1:
            groups.append(current)
        current, produced = [op], set(op.results)
    if len(current) > 1:
        groups.append(current)
    return groups, refusals


def _fuse(group: list[Operation], prov: Provenance) -> SectionOp:
    """Move ``group`` into one section placed at its last statement."""
    inside = set(group)
    outputs = [
        r for op in group for r in op.results if any(u.operation not in inside for u in r.uses)
    ]
    chips = sorted({c for op in group for c in prov.statement_chips(op)})
    last = group[-1]
    label = value_name(outputs[-1]) if outputs else value_name(last.results[0])
    terminator = YieldOp(*outputs)
    section = SectionOp(chips, Region(Block([terminator])), [r.type for r in outputs], label)
    block = last.parent_block()
    assert block is not None
    block.insert_op_after(section, last)
    for new, old in zip(section.outs, outputs, strict=True):
        new.name_hint = old.name_hint
        old.replace_uses_with_if(
            new, lambda use: use.operation not in inside and use.operation is not terminator
        )
    for op in group:
        op.detach()
        section.body.block.insert_op_before(op, terminator)
    return section


@dataclass(frozen=True)
class TpFuse(ModulePass):
    """Fuse producer-consumer statements into sections, asking the (TP-wrapped) shim."""

    name = "tp-fuse"

    shim: str = "reference"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            base = shim_named(self.shim)
        except KeyError as err:
            raise TpDiagnostic(None, f"tp-fuse: {err.args[0]}") from None
        prov = Provenance(op)
        shim = TensorParallelShim(base, prov)
        func = entry_function(op)
        groups, refusals = fusion_groups(func, shim)
        if self.report:
            for r in refusals:
                print(
                    f"tp-fuse: did not fuse %{value_name(r.op.results[0])} into the section "
                    f"ending at %{value_name(r.after.results[0])}: {r.reason} "
                    f"[{shim.name()}]",
                    file=sys.stderr,
                )
        with kept(op):  # each op stays on its chip: the section is on the same one
            for group in groups:
                _fuse(group, prov)
