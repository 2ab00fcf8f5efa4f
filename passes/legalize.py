"""tp-legalize{shim=...}: every op checked against what the chip allows.

Invariant: each op at statement level (in a function, a section or a per-chip program) is of
a class the shim supports (natively or emulated) and fits the chip as it stands; otherwise a
diagnostic names the op, its class and the shim's reason. Sections are checked as fused ops
too, by the TP-wrapped shim, which admits the sections the lowering makes of a collective (an
all-reduce's section with its fused epilogue, a fold reduced onto one chip). The lowering's
structure — transfers, barriers, link points, per-chip programs, the relay — is classed like
any op (`tp_dialect.shims.classify`), so every stage of the pipeline can be checked.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls.outlined`): a call
to a function holding chip work is no op of a chip — it is checked where its work stands, in
its callee, whose ops are checked once like every function's.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.passes import ModulePass

from tp_dialect.analysis.calls.outlined import ChipWork
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import SectionOp, YieldOp
from tp_dialect.passes.options import ShimName, base_shim
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.shims import Support, TensorParallelShim, classify


@dataclass(frozen=True)
class TpLegalize(ModulePass):
    """Check every op against the shim: unsupported or non-fitting ops are diagnostics (a
    call holding chip work is checked in its callee)."""

    name = "tp-legalize"

    shim: ShimName = "reference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        base = base_shim("tp-legalize", self.shim)
        shim = TensorParallelShim(base, Provenance(op))
        work = ChipWork()
        for inner in op.walk():
            if not isinstance(inner.parent_op(), FuncOp | SectionOp | ChipProgramOp):
                continue
            if isinstance(inner, ReturnOp | YieldOp) or work.lowered(inner) is not None:
                continue
            if isinstance(inner, SectionOp):
                reason = shim.fits(inner)
                if reason is not None:
                    label = f' "{inner.label.data}"' if inner.label else ""
                    raise TpDiagnostic(
                        inner, f"section{label} cannot run on a chip: {reason} [{shim.name()}]"
                    )
                continue
            cls = classify(inner)
            if shim.supports(cls) is Support.UNSUPPORTED:
                raise TpDiagnostic(
                    inner, f"'{inner.name}' ({cls.value}) is not supported by {base.name()}"
                )
            reason = base.fits(inner)
            if reason is not None:
                raise TpDiagnostic(
                    inner, f"'{inner.name}' ({cls.value}) does not fit {base.name()}: {reason}"
                )
