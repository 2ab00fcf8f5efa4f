"""tp's entry in xDSL's ``xdsl.universe``: plain ``xdsl-opt`` loads the dialect and passes."""

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.universe import Universe

from tp_dialect.dialect import TP
from tp_dialect.passes import TP_PASSES


def register_tp(ctx: Context) -> None:
    """Make the tp dialect parseable in ``ctx`` (idempotent)."""
    if "tp" not in ctx.registered_dialect_names:
        ctx.register_dialect("tp", lambda: TP)


def tp_context() -> Context:
    """A context that parses every upstream dialect and tp."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    register_tp(ctx)
    return ctx


TP_UNIVERSE = Universe(all_dialects={"tp": lambda: TP}, all_passes=dict(TP_PASSES))
