"""tp's entry in xDSL's ``xdsl.universe``: plain ``xdsl-opt`` loads the dialect and passes;
and `lowered`, a program run through a pipeline of them, for the tools and benchmarks.

It lists the passes, so it lives with them (``tp_dialect.passes``), above the IR: the IR-level
`tp_dialect.universe` only makes the dialect parseable and imports no pass.
"""

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.universe import Universe

from tp_dialect.dialect import TP
from tp_dialect.passes import TP_PASSES
from tp_dialect.universe import tp_context

TP_UNIVERSE = Universe(all_dialects={"tp": lambda: TP}, all_passes=dict(TP_PASSES))


def lowered(
    module: ModuleOp,
    spec: str,
    on_copy: Callable[[ModuleOp, ModuleOp], None] | None = None,
) -> ModuleOp:
    """A copy of ``module`` through the tp pass pipeline ``spec`` (``module`` is untouched);
    ``on_copy`` is shown the original and the copy before any pass changes it (a tool
    locating errors in the copy at the original's text)."""
    copy = module.clone()
    if on_copy is not None:
        on_copy(module, copy)
    PassPipeline.parse_spec(TP_PASSES, spec).apply(tp_context(), copy)
    return copy
