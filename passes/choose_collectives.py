"""tp-choose-collectives: every statement-level collective gets the algorithm that forms it.

Invariant: each ``tp.allreduce`` and ``tp.maxloc`` that is a statement of a function (not yet
placed in a section) has its algorithm written: the one asked (``allreduce=``, ``maxloc=``),
or with ``auto`` the one with the least modelled time on ``machine`` (`cost.best_allreduce`,
`cost.best_maxloc`; ``report=true`` prints every candidate's time). Without ``maxloc=``, a
maxloc gets the algorithm ``allreduce=`` stands for (`collectives.AllReduceEntry.maxloc`).
The seed's folds of adds are raised into all-reduces first (tp-raise-allreduce), so they get
theirs too. Only the algorithm changes: the same sum (the same maximum), on the same chips.
tp-relocate runs this pass first (its ``allreduce=``/``maxloc=``/``machine=``/``report=`` options
are this pass's).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.timing.cost import best_allreduce, best_maxloc, nbytes, split_axis
from tp_dialect.collectives import (
    ALLREDUCE,
    AUTO,
    DEFAULT,
    MAXLOC,
    by_preference,
    option_values,
    stands_for,
)
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import stated_chips
from tp_dialect.machine import Machine, MachineError, machine_from
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, MaxLocOp
from tp_dialect.passes.raise_allreduce import TpRaiseAllreduce
from tp_dialect.passes.rewrites import set_algorithm

AllReduceChoice = option_values(ALLREDUCE)
"""An ``allreduce=`` value: an algorithm of `collectives.ALLREDUCE`, or ``auto``."""
MaxLocChoice = option_values(MAXLOC)
"""A ``maxloc=`` value: an algorithm of `collectives.MAXLOC`, or ``auto``; when not given, the
one ``allreduce=`` stands for (`collectives.stands_for`: a maxloc has only ``fold`` and
``oneshot``; ``twoshot`` asks for ``oneshot``, ``ring`` for ``fold``)."""


@dataclass
class ChooseAlgorithm(RewritePattern):
    """Give each statement-level collective its algorithm: an all-reduce ``allreduce``, a
    maxloc ``maxloc``, or (``auto``) the one with the least modelled time on ``machine``."""

    allreduce: str
    maxloc: str
    n_chips: int
    machine: Machine | None
    report: bool
    prov: Provenance | None
    """Where values live (a maxloc's readers under ``auto``); None: computed when needed."""
    reporter: str = "tp-choose-collectives"
    """The pass name a report line starts with."""
    keep: bool = False
    """Leave a collective that already states its algorithm as it is (tp-relocate without
    ``allreduce=``: what tp-choose-collectives wrote before it stays)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, AllReduceOp | MaxLocOp) or not isinstance(op.parent_op(), FuncOp):
            return  # an all-gather has one algorithm: nothing to choose
        if self.keep and op.algorithm is not None:
            return
        if isinstance(op, AllReduceOp):
            algorithm = self.allreduce
            if algorithm == AUTO:
                assert self.machine is not None
                algorithm = _choose(op, self.n_chips, self.machine, self.report, self.reporter)
        else:
            algorithm = self.maxloc
            if algorithm == AUTO:
                assert self.machine is not None
                if self.prov is None:
                    module = op.get_toplevel_object()
                    assert isinstance(module, ModuleOp)
                    self.prov = Provenance(module)
                back = _readers_besides_chip_0(op, self.prov, self.n_chips)
                algorithm = _choose_maxloc(
                    op, self.n_chips, self.machine, self.report, back, self.reporter
                )
        set_algorithm(rewriter, op, algorithm)


@dataclass(frozen=True)
class TpChooseCollectives(ModulePass):
    """Write each statement-level collective's algorithm (``allreduce=fold|ring|oneshot|
    twoshot|auto``, ``maxloc=fold|oneshot|auto``; ``auto`` by modelled time on ``machine``,
    ``report=true`` printing every candidate's)."""

    name = "tp-choose-collectives"

    allreduce: AllReduceChoice = DEFAULT  # type: ignore[valid-type]
    maxloc: MaxLocChoice | None = None  # type: ignore[valid-type]
    machine: str = "sn40l"
    report: bool = False

    def checked(self, pass_name: str) -> tuple[str, Machine | None]:
        """The maxloc algorithm asked and the machine ``auto`` times on (None without
        ``auto``); a plain TpDiagnostic from ``pass_name`` on a bad option (the pipeline
        parser checks the Literals; a pass built in Python may not be)."""
        choices = (*ALLREDUCE, AUTO)
        if self.allreduce not in choices:
            raise TpDiagnostic(
                None,
                f"{pass_name}: allreduce={self.allreduce} is not one of {', '.join(choices)}",
            )
        maxloc = self.maxloc or stands_for(self.allreduce)
        if maxloc not in (*MAXLOC, AUTO):
            raise TpDiagnostic(
                None,
                f"{pass_name}: maxloc={maxloc} is not one of {', '.join((*MAXLOC, AUTO))}",
            )
        if AUTO not in (self.allreduce, maxloc):
            return maxloc, None
        try:
            return maxloc, machine_from(self.machine)
        except MachineError as err:
            raise TpDiagnostic(None, f"{pass_name}: {err}") from None

    def choose(
        self,
        module: ModuleOp,
        n: int,
        prov: Provenance | None,
        checked: tuple[str, Machine | None],
        reporter: str,
        keep: bool = False,
    ) -> None:
        """Write the algorithms in ``module`` over ``n`` chips (``checked``: `checked`'s);
        with ``keep``, only on collectives stating none."""
        maxloc, machine = checked
        choose = ChooseAlgorithm(
            self.allreduce, maxloc, n, machine, self.report, prov, reporter, keep
        )
        PatternRewriteWalker(choose, apply_recursively=False).rewrite_module(module)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        checked = self.checked(self.name)
        # The seed's folds are all-reduces too: raised first (as tp-relocate does), they get
        # their algorithm here rather than tp-relocate's fold later.
        TpRaiseAllreduce().apply(ctx, op)
        self.choose(op, stated_chips(op) or 1, None, checked, self.name)


def _choose(reduce: AllReduceOp, n: int, machine: Machine, report: bool, reporter: str) -> str:
    """The linkable algorithm with the least modelled time for ``reduce`` on ``machine``
    (one tp-transfers splits needs an axis to cut into N slices; ties go to the one first
    in `collectives.by_preference`: fold, oneshot, twoshot, ring)."""
    t = reduce.result.type
    assert isinstance(t, TensorType)
    cut = split_axis(t, n) is not None
    candidates = tuple(e.name for e in by_preference() if cut or not e.split)
    best, times = best_allreduce(t, n, machine, candidates)
    if report:
        listed = ", ".join(f"{a} {times[a] * 1e6:.2f} us" for a in candidates)
        print(
            f"{reporter}: all-reduce %{value_name(reduce.result)} ({nbytes(t) / 1024:.1f} KiB, "
            f"{n} chips, {machine.name}): {listed} -> {best}",
            file=sys.stderr,
        )
    return best


def _choose_maxloc(
    op: MaxLocOp, n: int, machine: Machine, report: bool, back: tuple[int, ...], reporter: str
) -> str:
    """The maxloc algorithm with the least modelled time for ``op`` on ``machine``, ``back``
    being the chips besides chip 0 that read its result (ties go to fold)."""
    best, times = best_maxloc(op.value.type, op.index.type, n, machine, back)
    if report:
        size = nbytes(op.value.type) + nbytes(op.index.type)
        listed = ", ".join(f"{a} {t * 1e6:.2f} us" for a, t in times.items())
        readers = f"read on {len(back)} chip(s) besides chip 0" if back else "read on chip 0"
        print(
            f"{reporter}: maxloc %{value_name(op.index)} ({size} B a pair, {n} chips, "
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
