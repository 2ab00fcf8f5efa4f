"""tp's entry in xDSL's ``xdsl.universe``: plain ``xdsl-opt`` loads the dialect and passes.

It lists the passes, so it lives with them (``tp_dialect.passes``), above the IR: the IR-level
`tp_dialect.universe` only makes the dialect parseable and imports no pass.
"""

from xdsl.universe import Universe

from tp_dialect.dialect import TP
from tp_dialect.passes import TP_PASSES

TP_UNIVERSE = Universe(all_dialects={"tp": lambda: TP}, all_passes=dict(TP_PASSES))
