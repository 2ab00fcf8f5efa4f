"""Every all-reduce algorithm x fused epilogue x N runs the whole pipeline, legal on every shim.

On a tiny generated Qwen3 at N = 1, 2, 3, 4, 8, the pipeline ``tp-fuse, tp-relocate{allreduce=…
epilogue=…}, tp-transfers, tp-phase, tp-link-points, tp-relay`` runs in-process, and tp-legalize
(the TP-wrapped shim over each base shim) checks what tp-fuse and tp-relocate, tp-transfers and
tp-relay wrote: the all-reduce sections tp-relocate grows an epilogue into, the reduce-scatter
folds tp-transfers writes for a twoshot, and the per-chip programs under the relay are all
legal; at every stage the outputs are the unsharded program's to f32 rounding, under value and
storage semantics. (Failed before: the epilogue and reduce-scatter sections were refused as
holding a collective's fold, and sn40l refused every tp.transfer, barrier and chip program.)
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from helpers import program, tiny_on
from ir_helpers import apply

from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.shims import SHIMS

ALGORITHMS = ("fold", "ring", "oneshot", "twoshot", "auto")
CHIPS = (1, 2, 3, 4, 8)
LEGALIZE = ",".join(f"tp-legalize{{shim={name}}}" for name in SHIMS)


def stages(algorithm: str, epilogue: bool) -> list[tuple[str, bool]]:
    """The pipeline, stage by stage (sn40l deciding what tp-fuse and the epilogue fuse), each
    with whether tp-legalize checks it: every stage but tp-phase, which only orders the
    sections tp-transfers wrote (the per-chip programs after it hold them all again)."""
    relocate = f"tp-relocate{{allreduce={algorithm} epilogue={str(epilogue).lower()} shim=sn40l}}"
    return [
        (f"tp-fuse{{shim=sn40l}},{relocate}", True),
        ("tp-transfers", True),
        ("tp-phase", False),
        ("tp-link-points,tp-relay", True),
    ]


@functools.cache
def unsharded(chips: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Weights and inputs for the N-chip program, and the unsharded program's outputs."""
    cfg = tiny_on(chips, layers=1)
    source = program(cfg)
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=5)}
    return values, run_program(program(cfg.unsharded()), values)


@pytest.mark.parametrize("chips", CHIPS)
@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_epilogue_and_n_is_legal_and_keeps_the_numbers(
    algorithm: str, epilogue: bool, chips: int
) -> None:
    """Invariant: tp-legalize with every shim accepts what each stage wrote, and the stage's
    outputs are the unsharded program's (value and storage semantics)."""
    values, want = unsharded(chips)
    module = program(tiny_on(chips, layers=1)).clone()
    for stage, legalize in stages(algorithm, epilogue):
        apply(module, f"{stage},{LEGALIZE}" if legalize else stage)
        for storage in (False, True):
            got = run_program(module, values, storage=storage)
            assert set(got) == set(want)
            for name, w in want.items():
                np.testing.assert_allclose(
                    got[name], w, rtol=1e-5, atol=1e-5, err_msg=f"{stage}: {name}"
                )
