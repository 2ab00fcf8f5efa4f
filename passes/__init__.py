"""tp's passes, one module each; `TP_PASSES` maps each pass name to its class.

The lowering pipeline (DESIGN §3) fills this registry as its passes land:
tp-verify, tp-raise-allreduce, tp-fuse, tp-relocate, tp-transfers, tp-phase,
tp-link-points, tp-relay.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass

TP_PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
