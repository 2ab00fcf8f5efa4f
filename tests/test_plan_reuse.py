"""The reference interpreter's kernel plans stay right when a pass rewires the IR they were
made from: a whole-model step run, lowered in place (tp-relocate moves the embedding's gather
into a section, so the table it captures becomes the section's value), then run again gives
the same numbers. A plan used to hold the captured value itself, and the second run failed
looking up a value no longer in the program."""

from __future__ import annotations

import numpy as np
from hf_models import config_for
from ir_helpers import apply, parse

from tp_dialect.frontend.registry import Pretrained, entry_for
from tp_dialect.frontend.split import split_text
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program


def test_a_program_run_then_lowered_in_place_runs_again() -> None:
    config = config_for("qwen3", num_hidden_layers=1)
    entry = entry_for("qwen3")
    pretrained = Pretrained(entry, entry.read(config), config)
    text = split_text(pretrained.write(pretrained.step("prefill", 4, 1, 8, False)), 2, entry.plan)
    module = parse(text)
    values = {**random_weights(module, 0), **random_inputs(module, 1, position=0)}
    want = run_program(parse(text), values)  # a fresh copy: the reference
    run_program(module, values)  # plans made from the source stage
    for stage in ("tp-relocate,tp-transfers", "tp-phase", "tp-link-points,tp-relay"):
        apply(module, stage)
        got = run_program(module, values)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{stage}: {name}")
