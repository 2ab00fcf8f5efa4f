"""tp-export-shard: a tp program as tp-split writes it becomes its unsharded program annotated
with MLIR Shard; tp-import-shard on that gives the program back, text for text (the
certificate aside), and the exported program without its annotations is the unsharded one
tp-gen writes and computes its numbers. What MLIR's sharding cannot state, or what is not
tp-split's output, is refused by name with the module unchanged.

Checked on generated Qwen3 steps (N = 2, 4, 8; two layers; batch 2; bf16 weights) and on the
random chains tp-split's property test writes (MLPs, gated MLPs, attention with GQA and a
KV cache, split by random valid plans).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from helpers import assert_bitwise, program, tiny, values_for
from hypothesis import given, settings
from ir_helpers import SETTINGS, apply, parse
from test_import_shard import unsharded
from test_split_properties import run, split_case, split_programs
from xdsl.dialects import shard

from tp_dialect.analysis.split.plan import load_plan
from tp_dialect.certificate import CERTIFICATE_ATTR
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.passes.export_shard import export_shard
from tp_dialect.passes.import_shard import without_annotations
from tp_dialect.passes.split import split_by_plan
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function


def _text(module: Any) -> str:
    shown = module.clone()
    shown.attributes.pop(CERTIFICATE_ATTR, None)
    return str(shown)


def _round_trip(module: Any) -> Any:
    """``module`` exported (a copy), checked to hold no tp op and to import back to it."""
    exported = module.clone()
    apply(exported, "tp-export-shard")
    names = {op.name for op in exported.walk()}
    assert not {n for n in names if n.startswith("tp.")}, names
    assert "shard.grid" in names
    cut = any(op.name == "tp.shard" for op in module.walk())
    assert ("shard.shard" in names) == cut  # nothing cut (a replicated plan): no annotation
    again = parse(str(exported))  # the text MLIR tools would read, parsed anew
    apply(again, "tp-import-shard")
    assert _text(again) == _text(module)
    return exported


CONFIGS = [
    tiny(chips=2, layers=2),
    tiny(chips=4, layers=1, batch=2),
    tiny(chips=8, layers=1),
    tiny(chips=2, layers=1, dtype="bf16"),
]


@pytest.mark.parametrize(
    "cfg", CONFIGS, ids=lambda c: f"n{c.chips}-l{c.layers}-b{c.batch}-{c.dtype}"
)
def test_generated_programs_round_trip_and_export_the_unsharded_program(cfg: Qwen3Config) -> None:
    source = program(cfg)
    exported = _round_trip(source)
    plain = without_annotations(exported)
    unsharded_program = program(cfg.unsharded())
    # The same ops over the same ports (whole buffers may be made elsewhere): the same bits.
    assert [str(a.type) for a in entry_function(plain).args] == [
        str(a.type) for a in entry_function(unsharded_program).args
    ]
    values = values_for(unsharded_program)
    assert_bitwise(run_program(plain, values), run_program(unsharded_program, values))
    grid = next(op for op in exported.walk() if isinstance(op, shard.GridOp))
    assert list(grid.shape.get_values()) == [cfg.chips]


@settings(max_examples=30, **SETTINGS)
@given(split_programs())
def test_random_split_programs_round_trip_or_are_refused_by_name(
    tmp_path_factory: Any, case: tuple[str, dict[str, Any], int]
) -> None:
    """tp-split's output for a random chain and plan exports and imports back with the
    source's numbers; a packed cut (a fused gate/up) is the only refusal at N > 1, by name.
    (Where an expand leaves the unsharded shape open, the export may be another program that
    splits to the same one: its numbers are the source's all the same.)"""
    _, plan, chips = case
    source, module = split_case(tmp_path_factory, case)
    before = str(module)
    try:
        exported = _round_trip(module)
    except TpDiagnostic as err:
        assert str(module) == before
        if chips == 1:
            assert "no cut shows in it" in str(err)
        else:
            assert "[shard-unsupported]" in str(err) and "equal contiguous runs" in str(err)
            assert "packed" in json.dumps(plan), (str(err), plan)
        return
    got, want = run(without_annotations(exported)), run(source)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)


WHOLE_MODELS = [("qwen3", "prefill", 2), ("qwen3", "decode", 4), ("llama", "prefill", 4)]


@pytest.mark.parametrize(("model_type", "kind", "chips"), WHOLE_MODELS)
@pytest.mark.parametrize("flat", [False, True], ids=["outlined", "flat"])
def test_whole_models_round_trip_with_their_vocabulary_cut(
    model_type: str, kind: str, chips: int, flat: bool
) -> None:
    """Whole-model steps split by the Hugging Face plan: the embedding gather from a cut
    table and the greedy head's argmax over cut logits (tp.maxloc) un-split, outlined (the
    arguments annotated: tp-import-shard reads no other annotation there) and inlined
    first; the exported program computes the unsharded step's numbers."""
    source = parse(unsharded(model_type, kind))
    if flat:
        apply(source, "tp-inline")
    module = source.clone()
    split_by_plan(module, load_plan("llama"), chips)
    exported = _round_trip(module)
    names = {op.name for op in module.walk()}
    assert {"tp.maxloc", "tp.allreduce"} <= names
    values = {**random_weights(source, 0), **random_inputs(source, 1, position=0)}
    got, want = run_program(without_annotations(exported), values), run_program(source, values)
    assert_bitwise(got, want)


def test_an_outlined_generated_program_round_trips() -> None:
    _round_trip(program(tiny(chips=2, layers=2), outline=True))


def _refused(module: Any, reason: str, words: str) -> None:
    before = str(module)
    with pytest.raises(TpDiagnostic) as err:
        export_shard(module)
    assert f"[{reason}]" in str(err.value) and words in str(err.value), str(err.value)
    assert str(module) == before


def test_what_mlir_sharding_cannot_state_is_refused_by_name() -> None:
    _refused(
        program(tiny(chips=2, layers=1, fused_qkv=True)).clone(),
        "shard-unsupported",
        "equal contiguous runs",
    )
    _refused(program(tiny(chips=1, layers=1)).clone(), "not-exportable", "over 1 chip")
    fold = program(tiny(chips=2, layers=1, fold=True)).clone()  # the seed's adds of partials
    _refused(fold, "not-exportable", "'linalg.add' mixes the chips' values with whole ones")


def test_a_program_after_tp_split_s_stage_is_refused() -> None:
    module = program(tiny(chips=2, layers=1)).clone()
    apply(module, "tp-relocate")
    _refused(module, "not-exportable", "export tp-split's output")
    _refused(program(tiny(chips=2, layers=1, sharded=False)).clone(), "not-exportable", "1 chip")
