"""The tp dialect in an xDSL `Context`: IR only, no passes.

xDSL's ``xdsl.universe`` entry point, which also lists the passes, is
`tp_dialect.passes.universe.TP_UNIVERSE`: imports point down, from passes to the IR.
"""

from xdsl.context import Context
from xdsl.dialects import get_all_dialects

from tp_dialect.dialect import TP
from tp_dialect.generic_results import accept_parenthesised_results


def register_tp(ctx: Context) -> None:
    """Make the tp dialect parseable in ``ctx`` (idempotent), and linalg.generic's several
    results as xDSL prints them (`accept_parenthesised_results`)."""
    accept_parenthesised_results()
    if "tp" not in ctx.registered_dialect_names:
        ctx.register_dialect("tp", lambda: TP)


def tp_context() -> Context:
    """A context that parses every upstream dialect and tp."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    register_tp(ctx)
    return ctx
