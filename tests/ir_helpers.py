"""What the property tests share: a context, Hypothesis settings, parse/verify/apply."""

from __future__ import annotations

from typing import Any

from helpers import CTX
from hypothesis import HealthCheck, Phase
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from tp_dialect.analysis.touch import SectionTouch
from tp_dialect.grid import check_chip_indices
from tp_dialect.passes import TP_PASSES
from tp_dialect.ssa import check_dominance
from tp_dialect.tools.source import parse_module

# Shrinking is off: the program generator's draws depend on each other, so shrinking a failure
# takes minutes; a failing program is printed whole (its MLIR text) instead. Each test sets its
# example count.
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "phases": (Phase.explicit, Phase.reuse, Phase.generate),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def parse(text: str) -> ModuleOp:
    """``text`` parsed and verified (op verifiers and chip indices)."""
    module, _ = parse_module(CTX, text, "<random program>")
    check_ir(module)
    return module


def check_ir(module: ModuleOp) -> None:
    module.verify()
    check_dominance(module)
    check_chip_indices(module)


def apply(module: ModuleOp, spec: str) -> None:
    PassPipeline.parse_spec(TP_PASSES, spec).apply(CTX, module)


def touch_of(name: str, chips: set[int], reads=(), writes=(), copies=()) -> SectionTouch:
    """A statement's touch written by hand (its op stands in as ``name``)."""
    return SectionTouch(
        name,  # type: ignore[arg-type]
        frozenset(chips),
        frozenset(reads),
        frozenset(writes),
        frozenset(copies),
    )


LOWERINGS = ("tp-relocate", "tp-transfers", "tp-link-points,tp-relay")
"""The stages a statement-level program is lowered through, in order."""


def assert_kept_through_lowering(
    module: ModuleOp, values: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Lower ``module`` stage by stage (`LOWERINGS`): certified at each, its outputs under
    storage semantics bit for bit ``expected``."""
    import numpy as np

    from tp_dialect.certificate import status
    from tp_dialect.runtime.reference import run_program

    for stage in LOWERINGS:
        apply(module, stage)
        assert status(module) == "valid", stage
        got = run_program(module, values, storage=True)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{stage}: {name}")
