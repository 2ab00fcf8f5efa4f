"""tp-verify: the shard obligation, on any IR at any stage, and its certificate.

Invariant: data derived from a chip's own tensors reaches the replicated spine only through an
all-reduce over EVERY chip (``tp.allreduce``, or the seed's left fold of adds over one partial
per chip in chip order) — for every value, scalars and values inside regions included, through
calls and casts, on source, sectioned, phased and per-chip programs (the rules:
`tp_dialect.analysis.certify.obligation`). On success the module is stamped with a certificate
bound to a digest of everything it checked; a violation is a diagnostic naming the op, the value
and its chip, with its `TpReject` reason.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls.outlined`): the
callee is checked in every call context (once per distinct placement of its arguments) and as
written, the callers around their calls, so the certificate covers callee and callers at
every stage; a call to a function placing its own work (sections) inside a section or a
chip program is refused (``section-chip``: sections never nest), and a lowered call hands a
scalar only to the chips its callee reads it on.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.certificate import stamp
from tp_dialect.diagnostics import TpDiagnostic


@dataclass(frozen=True)
class TpVerify(ModulePass):
    """Check the shard obligation and stamp the module with a certificate of it.

    Data derived from a chip's own tensors reaches the spine only through an all-reduce over
    every chip; no statement mixes two chips' data; host outputs are only returned.
    """

    name = "tp-verify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_obligation(op)
        stamp(op)


def certify_if_sound(module: ModuleOp) -> bool:
    """Stamp ``module`` with a certificate when the shard obligation holds on it (tp-verify's
    check, run by a pass on what it produced); otherwise leave it without one, for tp-verify
    to name why. Whether it was stamped."""
    try:
        check_obligation(module)
    except TpDiagnostic:
        return False
    stamp(module)
    return True
