"""tp's entry in xDSL's ``xdsl.universe``: plain ``xdsl-opt`` loads the dialect and passes."""

from xdsl.context import Context
from xdsl.universe import Universe

from tp_dialect.dialect import TP
from tp_dialect.passes import TP_PASSES


def register_tp(ctx: Context) -> None:
    """Make the tp dialect parseable in ``ctx`` (idempotent)."""
    if "tp" not in ctx.registered_dialect_names:
        ctx.register_dialect("tp", lambda: TP)


TP_UNIVERSE = Universe(all_dialects={"tp": lambda: TP}, all_passes=dict(TP_PASSES))
