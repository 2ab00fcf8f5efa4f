"""The whole lowering pipeline on generated Qwen3 layers keeps the numbers, and its figures
(sections, phases, transfers, bytes) are what the Megatron split implies."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import program, tiny
from xdsl.passes import PassPipeline

from tp_dialect.analysis.schedule.stats import pipeline_stats
from tp_dialect.certificate import status
from tp_dialect.ops import AllReduceOp, TransferOp
from tp_dialect.passes import TP_PASSES
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.universe import tp_context

PIPELINE = "tp-verify,tp-raise-allreduce,tp-relocate{allreduce=%s},tp-transfers,tp-phase"


@pytest.mark.parametrize("chips", [2, 4, 8])
@pytest.mark.parametrize("algorithm", ["fold", "ring"])
def test_pipeline_keeps_the_numbers(chips: int, algorithm: str) -> None:
    cfg = tiny(chips=chips, layers=2, fold=True)
    source = program(cfg)
    lowered = source.clone()
    PassPipeline.parse_spec(TP_PASSES, PIPELINE % algorithm).apply(tp_context(), lowered)
    assert status(lowered) == "valid"  # relocation checked the certified program again
    values = {**random_weights(source, 1), **random_inputs(source, 2, position=9)}
    before, after = run_program(source, values), run_program(lowered, values)
    unsharded = run_program(program(cfg.unsharded()), values)
    for name in before:
        if algorithm == "ring":  # its rotated folds round otherwise than the seed's sum
            np.testing.assert_allclose(after[name], before[name], rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(after[name], before[name])
        np.testing.assert_allclose(after[name], unsharded[name], rtol=1e-5, atol=1e-5)

    rows = {r.layer: r for r in pipeline_stats(lowered)}
    partial_bytes = cfg.batch * cfg.hidden * 4
    for layer in ("layer 0", "layer 1"):
        r = rows[layer]
        if algorithm == "fold":
            # Two all-reduces a layer: N-1 partials to chip 0, the sum back to N-1 chips.
            assert r.transfers == 2 * 2 * (chips - 1)
            assert r.bytes_moved == r.transfers * partial_bytes
        else:
            # Spelled out: N slices of N partials a hop (reduce-scatter), then N slices to
            # N-1 chips (all-gather); each 1/N of the tensor: the seed's bytes.
            assert r.transfers == 2 * 2 * chips * (chips - 1)
            assert r.bytes_moved == 2 * 2 * (chips - 1) * partial_bytes
        assert r.phases and r.sections > chips


@pytest.mark.parametrize(("chips", "layers"), [(2, 1), (4, 2), (8, 2)])
def test_per_chip_programs_under_the_relay_keep_the_numbers(chips: int, layers: int) -> None:
    """tp-link-points + tp-relay: each chip's own program, run under the host's relay, gives
    the source program's numbers; the relay's rounds follow the two all-reduces a layer."""
    cfg = tiny(chips=chips, layers=layers)
    source = program(cfg)
    linked = source.clone()
    PassPipeline.parse_spec(
        TP_PASSES, "tp-verify,tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay"
    ).apply(tp_context(), linked)
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=6)}
    before, after = run_program(source, values), run_program(linked, values)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])
    rows = {r.layer: r for r in pipeline_stats(linked)}
    for i in range(layers):
        r = rows[f"layer {i}"]
        # Each all-reduce: partials copied in one round, the sum out in a later one.
        assert len(r.rounds) == 4
        assert r.transfers == 4 * (chips - 1)


@pytest.mark.parametrize("fold", [False, True])
def test_relocate_lowers_a_fold_as_one_allreduce(fold: bool) -> None:
    """The seed's ONE all-reduce section: a fold not raised first is still one all-reduce
    (N-1 partials in, N-1 sums out), not a chain of two-way adds crossing chips."""
    source = program(tiny(chips=4, layers=2, fold=fold))
    lowered = source.clone()
    PassPipeline.parse_spec(TP_PASSES, "tp-relocate,tp-transfers").apply(tp_context(), lowered)
    transfers = [op for op in lowered.walk() if isinstance(op, TransferOp)]
    assert len(transfers) == 2 * 2 * 2 * (4 - 1)  # 2 layers x 2 all-reduces x (in + out)
    assert sum(isinstance(op, AllReduceOp) for op in lowered.walk()) == 4
