"""A family's sharded program: its unsharded program split by tp-split by the family's plan.

Every generator writes the unsharded program only; the tensor-parallel form is always
`split_text` of it (tp-split, `tp_dialect.passes.split`), so there is one split in tp, the
one tp-split's certificate and tests vouch for.
"""

from __future__ import annotations

from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from tp_dialect.analysis.split.plan import PlanError, TpPlan
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.blocks import GenError
from tp_dialect.universe import tp_context


def split_text(
    text: str,
    chips: int,
    plan: str | TpPlan,
    *,
    fold: bool = False,
    certified: bool = True,
    comment: str = "",
) -> str:
    """``text`` (an unsharded program) split over ``chips`` chips by ``plan`` (a shipped
    plan's name or file, ``hf``, or a plan built in code), as MLIR text: with ``fold``, each
    all-reduce spelled as the seed's left fold of adds (tp-fold-allreduce); without
    ``certified``, not certified (tp-split's check skipped: the program as tp-gen has always
    written it, for tp-verify to certify); ``comment`` (a ``//`` line) on top. GenError, one line,
    where tp-split refuses."""
    module = Parser(tp_context(), text, "<tp-gen>").parse_module()
    split_module(module, chips, plan, fold=fold, certified=certified)
    out = StringIO()
    if comment:
        out.write(comment + "\n")
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def split_module(
    module: ModuleOp,
    chips: int,
    plan: str | TpPlan,
    *,
    fold: bool = False,
    certified: bool = True,
) -> ModuleOp:
    """``module`` (an unsharded program) split in place over ``chips`` chips by ``plan``, as
    `split_text` says; GenError, one line, where tp-split refuses."""
    from tp_dialect.passes.fold_allreduce import TpFoldAllreduce
    from tp_dialect.passes.split import TpSplit, split_by_plan

    try:
        if isinstance(plan, str):
            plan = TpSplit(chips=chips, plan=plan).plan_for(module)
        split_by_plan(module, plan, chips, certify=certified)
        if fold:
            TpFoldAllreduce().apply(tp_context(), module)
    except TpDiagnostic as err:
        raise GenError(err.message) from None
    except PlanError as err:  # a plan built in code that its own parser refuses
        raise GenError(str(err)) from None
    return module
