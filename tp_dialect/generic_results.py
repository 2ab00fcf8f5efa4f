"""xDSL's ``linalg.generic`` reads back the results it prints: a generic of several results
(the greedy head's argmax: values and indices) prints them as ``-> (t1, t2)``, as MLIR does,
while xDSL 0.75's parser takes only ``-> t1, t2``. The patch is defined once, in
`tp_dialect.xdsl_compat` (importing the dialect installs it); `accept_parenthesised_results`
is kept for `tp_dialect.universe.register_tp`, which applies it (idempotent).
"""

from __future__ import annotations

from tp_dialect.xdsl_compat import accept_parenthesized_results


def accept_parenthesised_results() -> None:
    """Make ``linalg.generic``'s parser take ``-> (t1, t2)`` (idempotent): `xdsl_compat`'s
    patch (two patches wrapping one parser would each remove the other's hook)."""
    accept_parenthesized_results()
