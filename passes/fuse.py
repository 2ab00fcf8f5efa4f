"""tp-fuse{shim=...}: producer-consumer statements grouped into fused sections, asking the
chip before each fusion.

Invariant: walking the statements in program order, with a group being built per set of
chips (a split program interleaves the chips' copies of each statement), a statement that
consumes a value of its chips' group (a weight's ``tp.shard`` counts for its first reader
only: two readers of one weight, a projection's tiles, are not fused for sharing it) — or
fills a fresh tensor with a constant, a reduction's start — joins it only if the shim —
always wrapped in `TensorParallelShim`, so a fused op never spans two chips, mixes a chip's
tensors with the spine, or holds a collective's fold — says the grown group fits; otherwise
the group is closed and the statement starts the next. Each group of two or more becomes one
``tp.section`` (on the chip of what it binds; the spine's: every chip) placed where its last
statement was, yielding the values used outside it: a statement that reads an open group's
value closes that group first, and an in-place write closes the other chips' groups, so
nothing moves past its reader or past a write. Refusals are printed (``report=true``) with
the shim's reason.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls.outlined`): the
callee's statements are fused once, in the callee, and so are the caller's; a call to a
function holding chip work is never fused (its callee holds its work) and closes the group
being built, so no group moves across it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.calls.outlined import ChipWork, lowered_functions
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.touch import is_statement, written_in_place
from tp_dialect.certificate import kept
from tp_dialect.names import value_name
from tp_dialect.ops import SectionOp, ShardOp, TransferOp, YieldOp
from tp_dialect.passes.options import ShimName, base_shim
from tp_dialect.passes.preconditions import (
    MAX_LOWERED_CHIPS,
    chips_to_place,
    entry_of,
    not_programs,
    replicated_within,
)
from tp_dialect.passes.rewrites import move_op
from tp_dialect.shims import Fusion, Shim, TensorParallelShim, fusion


@dataclass(frozen=True)
class Refusal:
    """A fusion the shim refused: ``op`` did not join the group ending at ``after``."""

    op: Operation
    after: Operation
    reason: str


def _initializer(op: Operation) -> bool:
    """Whether ``op`` fills a fresh tensor with a constant (an accumulator's start): it reads
    nothing computed, so the group being built may take it in on the way to the reduction
    that reads it."""
    return isinstance(op, linalg.FillOp) and all(
        isinstance(v.owner, arith.ConstantOp | tensor.EmptyOp) for v in op.operands
    )


EVERY_CHIP: tuple[int, ...] = (-1,)
"""The group key of work every chip runs (the spine's, a collective's)."""


@dataclass
class _Open:
    """A group being built: its statements, the values they make, the shim's view of it."""

    ops: list[Operation]
    produced: set[SSAValue]
    grown: Fusion


def _feeds(op: Operation, group: _Open) -> bool:
    """Whether ``op`` reads what ``group`` computes: a weight's shard counts only while the
    group holds nothing else (its first reader joins it), so two readers of one weight
    (a projection's tiles) are not fused for sharing it."""
    views = all(isinstance(o, ShardOp) for o in group.ops)
    return any(
        v in group.produced and (views or not isinstance(v.owner, ShardOp)) for v in op.operands
    )


def group_key(prov: Provenance, op: Operation) -> tuple[int, ...]:
    """The chips statement ``op`` runs on, as tp-fuse keys its groups: every chip's work
    (the spine's, a collective's) keyed without listing the chips, N being what the input
    states."""
    return EVERY_CHIP if prov.runs_everywhere(op) else tuple(prov.statement_chips(op))


def fusion_groups(
    func: FuncOp,
    shim: Shim,
    chips: Callable[[Operation], tuple[int, ...]],
    work: ChipWork | None = None,
) -> tuple[list[list[Operation]], list[Refusal]]:
    """The groups tp-fuse forms (each two or more statements) and the refusals on the way;
    a lowered call (``work`` says which) joins none and closes every group before it.

    A group is built per set of chips (``chips``: the chips a statement runs on): a
    split program lists chip 0's copy of a statement, then chip 1's, …, so one chain of
    dependent statements per chip is interleaved with the others'. A group's statements move
    to its last one's place, past the other chips' statements between them; so a statement
    that reads what an open group makes without joining it closes that group first, and one
    that updates a buffer in place closes the other chips' groups (no read moves past a
    write)."""
    groups: list[list[Operation]] = []
    refusals: list[Refusal] = []
    open_: dict[tuple[int, ...], _Open] = {}

    def close(key: tuple[int, ...]) -> None:
        group = open_.pop(key)
        if len(group.ops) > 1:
            groups.append(group.ops)

    for op in func.body.block.ops:
        if work is not None and work.lowered(op) is not None:
            for key in list(open_):
                close(key)
            continue
        if not is_statement(op) or isinstance(op, SectionOp | TransferOp):
            continue
        key = chips(op)
        writes = next(written_in_place(op), None) is not None
        for other in [k for k in open_ if k != key]:
            group = open_[other]
            if any(v in group.produced for v in op.operands):
                # The shim says why it may not join (work of other chips): said, then closed.
                if (reason := group.grown.admit(op)) is not None:
                    refusals.append(Refusal(op, group.ops[-1], reason))
                close(other)
            elif writes:
                close(other)
        current = open_.get(key)
        if current is not None:
            if _initializer(op) or _feeds(op, current):
                reason = current.grown.admit(op)
                if reason is None:
                    current.ops.append(op)
                    current.produced.update(op.results)
                    continue
                refusals.append(Refusal(op, current.ops[-1], reason))
        if current is not None:
            close(key)
        open_[key] = _Open([op], set(op.results), fusion(shim, op))
    for key in list(open_):
        close(key)
    return groups, refusals


@dataclass
class FuseGroup(RewritePattern):
    """At the last statement of a group: move the group into one section placed there."""

    groups: dict[Operation, list[Operation]]
    """Each group by its last statement."""
    prov: Provenance

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        group = self.groups.pop(op, None)
        if group is None:
            return
        inside = set(group)
        outputs = [
            r for o in group for r in o.results if any(u.operation not in inside for u in r.uses)
        ]
        chips = sorted({c for o in group for c in self.prov.statement_chips(o)})
        label = value_name(outputs[-1]) if outputs else value_name(op.results[0])
        terminator = YieldOp(*outputs)
        section = SectionOp(chips, Region(Block([terminator])), [r.type for r in outputs], label)
        rewriter.insert(section, InsertPoint.after(op))
        for new, old in zip(section.outs, outputs, strict=True):
            new.name_hint = old.name_hint
            rewriter.replace_uses_with_if(
                old,
                new,
                lambda use: use.operation not in inside and use.operation is not terminator,
            )
        for o in group:
            move_op(rewriter, o, InsertPoint.before(terminator))


@dataclass(frozen=True)
class TpFuse(ModulePass):
    """Fuse producer-consumer statements into sections, asking the (TP-wrapped) shim (in the
    entry and, once each, in the functions its calls holding chip work reach; such a call
    is never fused)."""

    name = "tp-fuse"

    shim: ShimName = "reference"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        base = base_shim("tp-fuse", self.shim)
        entry = entry_of(op, self.name)
        work = ChipWork()
        funcs = lowered_functions(entry, work)  # the callees once, then their callers
        prov = Provenance(op)
        shim = TensorParallelShim(base, prov)
        groups: list[list[Operation]] = []

        for func in funcs:
            for call in func.body.block.ops:
                if (callee := work.lowered(call)) is not None:
                    prov.check_call(call, callee)  # type: ignore[arg-type]
            found, refusals = fusion_groups(func, shim, lambda o: group_key(prov, o), work)
            if self.report:
                for r in refusals:
                    print(
                        f"tp-fuse: did not fuse %{value_name(r.op.results[0])} into the "
                        f"section ending at %{value_name(r.after.results[0])}: {r.reason} "
                        f"[{shim.name()}]",
                        file=sys.stderr,
                    )
            if found:  # sections to write: a program is no statement to fuse
                not_programs(func, self.name)
            groups += found
        if groups:  # on chips of a stated grid, a replicated one on each
            n = chips_to_place(op, self.name)
            for o in (o for g in groups for o in g) if n > MAX_LOWERED_CHIPS else ():
                if prov.runs_everywhere(o):
                    replicated_within(o, n, self.name)
        pattern = FuseGroup({g[-1]: g for g in groups}, prov)
        with kept(op):  # each op stays on its chip: the section is on the same one
            PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
