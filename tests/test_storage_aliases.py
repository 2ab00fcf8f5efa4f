"""Carried state updated where tp-phase must look for it: through a call (into the callee,
or a callee handing its argument back), and inside a fused section that keeps the updated
cache to itself. Each program, lowered (phased, fused, per-chip under the relay), run under
storage semantics, gives the numbers of its source under value semantics; before tp-phase
saw these writes, a reader of the old cache was phased after the write (off by up to 0.75)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ir_helpers import apply, parse

from tp_dialect.runtime.reference import run_program

INPUTS = Path(__file__).parent / "inputs"
PIPELINES = [
    "tp-relocate,tp-transfers,tp-phase",
    "tp-fuse{shim=sn40l},tp-relocate,tp-transfers,tp-phase",
    "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay",
    "tp-relocate{allreduce=ring},tp-transfers,tp-phase",
]


def _inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"x": (4, 2), "w": (8, 2), "v": (8, 2), "u2": (8, 2), "cache": (4, 2), "row": (1, 2)}
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


@pytest.mark.parametrize(
    "name", ["cache_update_in_callee", "cache_update_fused", "cache_alias_through_call"]
)
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_updates_tp_phase_must_see_keep_their_numbers_in_storage(name: str, pipeline: str) -> None:
    text = (INPUTS / f"{name}.mlir").read_text()
    source = parse(text)
    ins = {k: v for k, v in _inputs(7).items() if k in text}
    want = run_program(source, ins)
    lowered = parse(text)
    apply(lowered, pipeline)
    got = run_program(lowered, ins, storage=True)
    for out in want:
        np.testing.assert_array_equal(got[out], want[out], err_msg=f"{name} {pipeline}: {out}")
