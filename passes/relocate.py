"""tp-relocate: every statement a ``tp.section`` on the chip(s) of what it binds.

Invariant: each statement of the entry function becomes one section computing exactly what
the statement did — a statement on the chip its results live on or derive from (chip
provenance, so a scalar read out of chip 1's tensor runs on chip 1), a spine statement on every
chip (replicated, unmarked), an all-reduce as ONE section over all chips with its algorithm
chosen by tp-choose-collectives, which this pass runs first (the seed's ``fold``: partials
handed to chip 0, folded there, the sum stored as the replicated out; or ``ring``, ``oneshot``,
``twoshot``: the sum left on every chip), a host store over the chips of its parts, a
reduce-scatter as each chip's blocks cut and folded (`passes.scatter`: block s's sum ends on
chip s), an all-gather as one section over all chips;
``epilogue=true`` then runs tp-fuse-epilogue. The seed's fold of adds is raised into that
one all-reduce first; a fold that is not an all-reduce is refused (``fold-not-allreduce``),
never lowered as two-way adds. A ring fold (every chip once, in a cyclic rotation of chip
order) is an all-reduce that a ``tp.allreduce`` would round differently: it stays a fold, each
add a statement on every chip (spine work), so every chip adds the partials in the fold's own
order.
Constants stay outside sections (every chip holds its own). Placement changes what a
certificate vouched for: a program certified before the pass is checked again after it and
stamped anew (tp-verify's check, so the output is certified only if it holds); any other
certificate is dropped.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls.outlined`): the
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

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from tp_dialect.analysis.calls.outlined import ChipWork, placed_functions
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.touch import is_statement
from tp_dialect.certificate import drop, status
from tp_dialect.collectives import DEFAULT
from tp_dialect.grid import stated_chips
from tp_dialect.names import value_name
from tp_dialect.ops import Collective, SectionOp, TransferOp, YieldOp
from tp_dialect.passes.choose_collectives import (
    AllReduceChoice,
    MaxLocChoice,
    TpChooseCollectives,
)
from tp_dialect.passes.epilogue import fuse_epilogues
from tp_dialect.passes.options import ShimName, base_shim
from tp_dialect.passes.preconditions import (
    MAX_LOWERED_CHIPS,
    chips_to_place,
    every_function,
    replicated_within,
)
from tp_dialect.passes.raise_allreduce import TpRaiseAllreduce
from tp_dialect.passes.rewrites import move_op
from tp_dialect.passes.scatter import SpellReduceScatter
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.reject import TpReject
from tp_dialect.scatter_ops import ReduceScatterOp
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


def _refuse_nested_chip_work(stmt: Operation, prov: Provenance) -> None:
    """Refuse (``section-chip``) a statement with regions (an ``scf.for``) holding work of a
    chip its section would not run on only: a statement is placed whole, so chip 0's work in
    a loop of the spine would run on every chip, and a chip's work in another chip's."""
    payload = linalg.LinalgStructuredOperation  # its body computes the op's own elements
    if not stmt.regions or isinstance(stmt, Collective | ReduceScatterOp | payload):
        return
    spine = prov.runs_everywhere(stmt)
    own = frozenset() if spine else frozenset(prov.statement_chips(stmt))
    for inner in _nested_statements(stmt):
        for r in inner.results:
            home = prov.home(r)
            if home and (spine or not home <= own):
                where = "on every chip" if spine else f"on chip {min(own)}"
                raise TpReject.SECTION_CHIP.at(
                    inner,
                    f"%{value_name(r)} is chip {min(home - own)}'s work inside '{stmt.name}', "
                    f"which tp-relocate places whole {where}: move that work out of the "
                    "region (a section runs on its chips only)",
                )


def _nested_statements(op: Operation) -> Iterator[Operation]:
    """The ops in ``op``'s regions, not looking inside a linalg op's body."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                yield inner
                if not isinstance(inner, linalg.LinalgStructuredOperation):
                    yield from _nested_statements(inner)


@dataclass(frozen=True)
class TpRelocate(ModulePass):
    """Make every statement a section on its chips, each collective with its algorithm.

    A pipeline alias kept for its options: it raises the seed's folds (tp-raise-allreduce),
    runs tp-choose-collectives with ``allreduce=``, ``maxloc=``, ``machine=`` and ``report=``
    (when neither ``allreduce=`` nor ``maxloc=`` is given, a collective keeps the algorithm it
    states and one stating none gets ``fold``: so ``tp-choose-collectives,tp-relocate``
    composes), places every statement, then with ``epilogue=true`` runs tp-fuse-epilogue with
    ``shim=``."""

    name = "tp-relocate"

    allreduce: AllReduceChoice | None = None  # type: ignore[valid-type]
    maxloc: MaxLocChoice | None = None  # type: ignore[valid-type]
    machine: str = "sn40l"
    report: bool = False
    epilogue: bool = False
    shim: ShimName = "reference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        certified = status(op) == "valid"
        keep = self.allreduce is None and self.maxloc is None
        chooser = TpChooseCollectives(
            allreduce=self.allreduce or DEFAULT,
            maxloc=self.maxloc,
            machine=self.machine,
            report=self.report,
        )
        checked = chooser.checked(self.name)
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
                    prov.check_call(s, callee)  # type: ignore[arg-type]
                elif is_statement(s) and not isinstance(s, SectionOp | TransferOp):
                    placed.append(s)
        n = chips_to_place(op, self.name) if placed else (stated_chips(op) or 1)
        for fold in prov.folds:
            if isinstance(fold.ops[0].parent_op(), FuncOp) and not fold.is_allreduce(n):
                raise fold.refusal(n)  # not an all-reduce: two-way adds would hide that
        for stmt in placed:
            _refuse_nested_chip_work(stmt, prov)
        for stmt in placed if n > MAX_LOWERED_CHIPS else ():
            if prov.runs_everywhere(stmt):
                replicated_within(stmt, n, self.name)
        chooser.choose(op, n, prov, checked, self.name, keep)
        relocate = RelocateStatement(prov, set(funcs), work)
        walker = PatternRewriteWalker(relocate, apply_recursively=False)
        walker.rewrite_module(op)
        # A reduce-scatter's section binds every chip's block: spelled as each chip's work.
        PatternRewriteWalker(SpellReduceScatter(), apply_recursively=False).rewrite_module(op)
        if base is not None:
            fuse_epilogues(op, TensorParallelShim(base, prov))
        drop(op)
        if certified:
            certify_if_sound(op)
