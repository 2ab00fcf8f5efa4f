"""tp-relocate: every statement a ``tp.section`` on the chip(s) of what it binds.

Invariant: each statement of the entry function becomes one section computing exactly what
the statement did — a statement on the chip its results live on or derive from (chip
provenance, so a scalar read out of chip 1's tensor runs on chip 1), a spine statement on every
chip (replicated, unmarked), an all-reduce as ONE section over all chips with its algorithm
chosen (the seed's ``fold``: partials handed to chip 0, folded there, the sum stored as the
replicated out; or ``ring``, ``oneshot``, ``twoshot``: the sum left on every chip), a host
store over the chips of its parts. The seed's fold of adds is raised into that one all-reduce
first; a fold that is not an all-reduce is refused (``fold-not-allreduce``), never lowered as
two-way adds. A ring fold (every chip once, in a cyclic rotation of chip order) is an
all-reduce that a ``tp.allreduce`` would round differently: it stays a fold, each add a
statement on every chip (spine work), so every chip adds the partials in the fold's own order.
Constants stay outside sections (every chip holds its own). Placement changes what a
certificate vouched for: a program certified before the pass is checked again after it and
stamped anew (tp-verify's check, so the output is certified only if it holds); any other
certificate is dropped.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls`): the
callee's statements become sections once, placed by its arguments' types (a spine argument
holds no chip's data), and a call to a function holding chip work stays a bare statement of
its caller — its callee holds the sections — while the caller's other statements (RoPE
tables, the final norm) are sectioned as ever. A call to a function holding no chip work is
sectioned like any statement, its callee left as it is. Refused at the call: a call to a
function holding chip work nested in other work (sections never nest), recursion through
such calls, and a call handing such a function chip data for an argument its type does not
place on that chip (``section-chip``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.calls import ChipWork, check_arguments, placed_functions
from tp_dialect.analysis.cost import best_allreduce, best_maxloc, nbytes, split_axis
from tp_dialect.analysis.machine import Machine, MachineError, machine_from
from tp_dialect.analysis.provenance import Provenance
from tp_dialect.analysis.touch import is_statement
from tp_dialect.certificate import drop, status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import stated_chips
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, Collective, MaxLocOp, SectionOp, TransferOp, YieldOp
from tp_dialect.passes.epilogue import FuseEpilogue
from tp_dialect.passes.options import ShimName, base_shim
from tp_dialect.passes.preconditions import (
    MAX_LOWERED_CHIPS,
    chips_to_place,
    every_function,
    replicated_within,
)
from tp_dialect.passes.raise_allreduce import TpRaiseAllreduce
from tp_dialect.passes.rewrites import move_op, set_algorithm
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.shims import TensorParallelShim


@dataclass
class RelocateStatement(RewritePattern):
    """Wrap one top-level statement in a section on its chips (a lowered call stays bare)."""

    prov: Provenance
    funcs: set[FuncOp]
    """The functions whose statements are placed (`calls.placed_functions`)."""
    work: ChipWork

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.parent_op() not in self.funcs or not is_statement(op):
            return
        if isinstance(op, SectionOp | TransferOp) or self.work.lowered(op) is not None:
            return
        chips = self.prov.statement_chips(op)
        label = value_name(op.results[0]) if op.results else op.name
        # Move the op itself into the section (no clone: its regions may be large), and
        # point every outside use of its results at the section's.
        terminator = YieldOp(*op.results)
        section = SectionOp(
            chips, Region(Block([terminator])), [r.type for r in op.results], label=label
        )
        rewriter.insert(section, InsertPoint.before(op))
        for new, old in zip(section.outs, op.results, strict=True):
            new.name_hint, old.name_hint = old.name_hint, None
            rewriter.replace_uses_with_if(old, new, lambda use: use.operation is not terminator)
        move_op(rewriter, op, InsertPoint.before(terminator))


MAXLOC_OF: dict[str, str] = {
    "fold": "fold",
    "oneshot": "oneshot",
    "twoshot": "oneshot",
    "ring": "fold",
    "auto": "auto",
}
"""The maxloc algorithm an ``allreduce=`` choice stands for when ``maxloc=`` is not given: a
maxloc has only ``fold`` and ``oneshot``; ``twoshot`` (the result on every chip in few
exchanges) asks for ``oneshot``, ``ring`` (few messages a link) for ``fold``."""


@dataclass
class ChooseAlgorithm(RewritePattern):
    """Give each statement-level collective its algorithm: an all-reduce ``allreduce``, a
    maxloc ``maxloc``, or (``auto``) the one with the least modelled time on ``machine``."""

    allreduce: str
    maxloc: str
    n_chips: int
    machine: Machine | None
    report: bool
    prov: Provenance

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, Collective) or not isinstance(op.parent_op(), FuncOp):
            return
        if isinstance(op, AllReduceOp):
            algorithm = self.allreduce
            if algorithm == "auto":
                assert self.machine is not None
                algorithm = _choose(op, self.n_chips, self.machine, self.report)
        else:
            algorithm = self.maxloc
            if algorithm == "auto":
                assert self.machine is not None
                back = _readers_besides_chip_0(op, self.prov, self.n_chips)
                algorithm = _choose_maxloc(op, self.n_chips, self.machine, self.report, back)
        set_algorithm(rewriter, op, algorithm)


@dataclass(frozen=True)
class TpRelocate(ModulePass):
    """Make every statement a section on its chips; each all-reduce gets its algorithm
    (``allreduce=fold|ring|oneshot|twoshot``, or ``auto``: per all-reduce, the one with the
    least modelled time on ``machine``; ``report=true`` prints every candidate's time), each
    maxloc its own (``maxloc=fold|oneshot|auto``; when not given, the one ``allreduce=``
    stands for: `MAXLOC_OF`); ``epilogue=true`` lets an all-reduce that sums on every chip
    carry the spine work after it (the ``shim`` deciding what fits)."""

    name = "tp-relocate"

    allreduce: Literal["fold", "ring", "oneshot", "twoshot", "auto"] = "fold"
    maxloc: Literal["fold", "oneshot", "auto"] | None = None
    machine: str = "sn40l"
    report: bool = False
    epilogue: bool = False
    shim: ShimName = "reference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        certified = status(op) == "valid"
        choices = (*AllReduceOp.ALGORITHMS, "auto")
        if self.allreduce not in choices:
            # the pipeline parser checks the Literal; a pass built in Python may not be
            raise TpDiagnostic(
                None,
                f"tp-relocate: allreduce={self.allreduce} is not one of {', '.join(choices)}",
            )
        maxloc = self.maxloc or MAXLOC_OF[self.allreduce]
        if maxloc not in (*MaxLocOp.ALGORITHMS, "auto"):
            raise TpDiagnostic(
                None,
                f"tp-relocate: maxloc={maxloc} is not one of "
                f"{', '.join((*MaxLocOp.ALGORITHMS, 'auto'))}",
            )
        machine = None
        if "auto" in (self.allreduce, maxloc):
            try:
                machine = machine_from(self.machine)
            except MachineError as err:
                raise TpDiagnostic(None, f"tp-relocate: {err}") from None
        base = base_shim("tp-relocate", self.shim) if self.epilogue else None  # options first
        every_function(op, self.name)
        work = ChipWork()
        funcs = placed_functions(op, work)
        # The seed's fold becomes ONE all-reduce section, never a chain of two-way adds.
        TpRaiseAllreduce().apply(ctx, op)
        prov = Provenance(op)  # the algorithms chosen next change no value's chips
        # Every placed function's statements become sections, a replicated one listing every
        # chip; a lowered call stays bare, handing its callee what its arguments declare.
        placed: list[Operation] = []
        for f in funcs:
            for s in f.body.block.ops:
                if (callee := work.lowered(s)) is not None:
                    check_arguments(s, callee, prov)  # type: ignore[arg-type]
                elif is_statement(s) and not isinstance(s, SectionOp | TransferOp):
                    placed.append(s)
        n = chips_to_place(op, self.name) if placed else (stated_chips(op) or 1)
        for fold in prov.folds:
            if isinstance(fold.ops[0].parent_op(), FuncOp) and not fold.is_allreduce(n):
                raise fold.refusal(n)  # not an all-reduce: two-way adds would hide that
        for stmt in placed if n > MAX_LOWERED_CHIPS else ():
            if prov.runs_everywhere(stmt):
                replicated_within(stmt, n, self.name)
        choose = ChooseAlgorithm(self.allreduce, maxloc, n, machine, self.report, prov)
        PatternRewriteWalker(choose, apply_recursively=False).rewrite_module(op)
        relocate = RelocateStatement(prov, set(funcs), work)
        walker = PatternRewriteWalker(relocate, apply_recursively=False)
        walker.rewrite_module(op)
        if base is not None:
            shim = TensorParallelShim(base, prov)
            fuse = PatternRewriteWalker(FuseEpilogue(shim), apply_recursively=False)
            fuse.rewrite_module(op)
        drop(op)
        if certified:
            certify_if_sound(op)


def _choose(reduce: AllReduceOp, n: int, machine: Machine, report: bool) -> str:
    """The linkable algorithm with the least modelled time for ``reduce`` on ``machine``
    (a two-shot and a ring need an axis to cut into N slices; ties go to the earlier of
    fold, oneshot, twoshot, ring)."""
    t = reduce.result.type
    assert isinstance(t, TensorType)
    candidates = ("fold", "oneshot") + (("twoshot", "ring") if split_axis(t, n) else ())
    best, times = best_allreduce(t, n, machine, candidates)
    if report:
        listed = ", ".join(f"{a} {times[a] * 1e6:.2f} us" for a in candidates)
        print(
            f"tp-relocate: all-reduce %{value_name(reduce.result)} ({nbytes(t) / 1024:.1f} KiB, "
            f"{n} chips, {machine.name}): {listed} -> {best}",
            file=sys.stderr,
        )
    return best


def _choose_maxloc(
    op: MaxLocOp, n: int, machine: Machine, report: bool, back: tuple[int, ...]
) -> str:
    """The maxloc algorithm with the least modelled time for ``op`` on ``machine``, ``back``
    being the chips besides chip 0 that read its result (ties go to fold)."""
    best, times = best_maxloc(op.value.type, op.index.type, n, machine, back)
    if report:
        size = nbytes(op.value.type) + nbytes(op.index.type)
        listed = ", ".join(f"{a} {t * 1e6:.2f} us" for a, t in times.items())
        readers = f"read on {len(back)} chip(s) besides chip 0" if back else "read on chip 0"
        print(
            f"tp-relocate: maxloc %{value_name(op.index)} ({size} B a pair, {n} chips, "
            f"{readers}, {machine.name}): {listed} -> {best}",
            file=sys.stderr,
        )
    return best


def _readers_besides_chip_0(op: MaxLocOp, prov: Provenance, n: int) -> tuple[int, ...]:
    """The chips other than chip 0 whose statements read a result of ``op`` — where a
    ``fold`` maxloc sends its result back; the function's return reads on chip 0 (the host
    takes a result from the lowest chip holding it)."""
    chips: set[int] = set()
    for result in op.results:
        for use in result.uses:
            stmt = use.operation
            while not isinstance(stmt.parent_op(), FuncOp | None):
                stmt = stmt.parent_op()  # type: ignore[assignment]
            if isinstance(stmt, ReturnOp):
                continue
            if prov.runs_everywhere(stmt):
                return tuple(range(1, n))
            chips.update(c for r in stmt.results for c in prov.home(r))
    return tuple(sorted(chips - {0}))
