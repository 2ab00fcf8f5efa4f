"""tp-split over a vocabulary (issue 24 §3): small whole models (embedding gather, one MLP, the
last position's norm, the LM head, the greedy argmax) split by Hugging Face's plan at N = 1..4,
the vocab divisible by N or not; the split program's next ids and logits equal the unsharded
program's run and a plain numpy computation of the model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_manifest_stages import STAGES
from vocab_programs import Model, whole_model

from tp_dialect.analysis.split.plan import PlanError, hf_plan, parse_plan
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import AllReduceOp, MaxLocOp, UnshardOp
from tp_dialect.passes.universe import lowered
from tp_dialect.passes.verify import check_obligation
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent


def parse(m: Model) -> Any:
    """``m``'s unsharded program, parsed and verified."""
    module, _ = parse_module(tp_context(), whole_model(m), f"<{m}>")
    module.verify()
    return module


MODELS = {
    "untied": Model(),
    "tied-bf16": Model(tied=True, table="bf16"),
    "gpt2-tied": Model(gpt2=True, tied=True, mlp=False),
}


def _ids(m: Model) -> np.ndarray:
    """Token ids touching every chip's rows, the first and the last row among them."""
    ids = np.random.default_rng(7).integers(0, m.vocab, (m.batch, m.tokens))
    ids[0, 0], ids[-1, -1] = 0, m.vocab - 1
    return ids.astype(np.int64)


def _run(module: Any, m: Model, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    inputs = {"input_ids": _ids(m), "position": np.int64(2)}
    placement = place_weights(module, MemorySource(weights), inputs)
    return run_program(module, placement.values, placement.placed, False)


def _numpy(m: Model, w: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The model written out in numpy: (next ids, last position's logits)."""
    f = {k: np.asarray(v, np.float32) for k, v in w.items()}
    table = f[m.embed_name]
    ids = _ids(m)
    x = table[ids]
    if m.gpt2:
        x = x + f["transformer.wpe.weight"][2 : 2 + m.tokens][None]
    if m.mlp:
        hid = np.maximum(x @ f[m.layer("up_proj.weight")].T, 0)
        x = x + hid @ f[m.layer("down_proj.weight")].T
    last = x[:, -1]
    scale = f["transformer.ln_f.weight" if m.gpt2 else "model.norm.weight"]
    normed = last / np.sqrt((last * last).mean(-1, keepdims=True) + 1e-6) * scale
    logits = normed @ (table if m.tied else f["lm_head.weight"]).T
    return logits.argmax(-1), logits


@pytest.mark.parametrize("chips", [1, 2, 3, 4])
@pytest.mark.parametrize("vocab", [12, 11])  # 12: every N divides it; 11: none but 1
@pytest.mark.parametrize("kind", list(MODELS))
def test_split_by_the_hf_plan_computes_the_unsharded_model(
    kind: str, vocab: int, chips: int
) -> None:
    m = Model(**{**MODELS[kind].__dict__, "vocab": vocab})
    source = parse(m)
    ours = lowered(source, f"tp-split{{chips={chips} plan=hf}}")
    check_obligation(ours)  # certified: the lookup's sum and the maxloc's runs
    assert "tp.certificate" in ours.attributes  # and stamped by tp-split itself
    ops = list(ours.walk())
    # one collective per cut result, even over one chip (as tp-split's all-reduces)
    assert sum(isinstance(op, MaxLocOp) for op in ops) == 1
    assert sum(isinstance(op, UnshardOp) for op in ops) == 1  # the logits
    weights = random_weights(source, 0)
    got, want = _run(ours, m, weights), _run(source, m, weights)
    ids, logits = _numpy(m, weights)
    assert np.array_equal(got["next_ids"], want["next_ids"])
    assert np.array_equal(got["next_ids"], ids)
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["logits"], logits, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("chips", [2, 3, 4])
@pytest.mark.parametrize("vocab", [12, 11])
def test_the_lookup_is_summed_by_the_first_all_reduce_and_certified(vocab: int, chips: int) -> None:
    """Each chip looks up only its rows (ceil(V/N), the last chip the rest); one all-reduce
    sums them before anything reads the embedding, and tp-verify certifies the gathered
    logits alone (no argmax)."""
    m = Model(vocab=vocab, greedy=False)
    ours = lowered(parse(m), f"tp-split{{chips={chips} plan=hf}}")
    check_obligation(ours)
    fn_ops = list(next(iter(ours.body.block.ops)).body.block.ops)
    first = next(op for op in fn_ops if isinstance(op, AllReduceOp))
    assert first.results[0].name_hint == "embedded_sum"
    run = -(-vocab // chips)
    rows = [op.result.type.get_shape()[0] for op in fn_ops if op.name == "tp.shard"][:chips]
    assert rows == [run] * (chips - 1) + [vocab - run * (chips - 1)]


def test_more_chips_than_vocab_rows_is_refused() -> None:
    source = parse(Model(vocab=3))
    with pytest.raises(TpDiagnostic, match="4 chips exceed the 3 rows of axis 0"):
        lowered(source, "tp-split{chips=4 plan=hf}")


def test_plan_hf_needs_a_hugging_face_embedding() -> None:
    m = Model(vocab=6)
    text = whole_model(m).replace(m.embed_name, "tok.weight")
    module, _ = parse_module(tp_context(), text, "<renamed>")
    with pytest.raises(TpDiagnostic, match="plan=hf: the program has no Hugging Face embedding"):
        lowered(module, "tp-split{chips=2 plan=hf}")


def test_hf_plans_by_model_type() -> None:
    """The llama family's *ForCausalLM plan: transformers' base_model_tp_plan (q/k/v, gate/up
    colwise; o, down rowwise), the class's lm_head colwise_rep, the embedding by rows."""
    styles = {e.pattern: e.style for e in hf_plan("qwen2").entries}
    assert styles["embed_tokens"] == "embedding_rowwise"
    assert styles["lm_head"] == "colwise_rep"
    assert styles["layers.*.self_attn.o_proj"] == styles["layers.*.mlp.down_proj"] == "rowwise"
    assert hf_plan("gpt2").entry_for("transformer.wte.weight") is not None
    with pytest.raises(PlanError, match="no Hugging Face plan for model_type 'bert'"):
        hf_plan("bert")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"e": {"style": "embedding_rowwise", "layout": "in_out"}}', "takes no 'layout'"),
        ('{"e": {"style": "colwise_rep", "optional": 1}}', "optional must be true or false"),
        ('{"e": {"style": "colwise_gather_output", "parts": 2}}', "only packed_colwise"),
    ],
)
def test_bad_vocab_plan_entries_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_plan(text, "p.json")


CHIP1 = "ranges = [(4, 4)], full = [12, 8]> : tensor<12x8xf32> -> tensor<4x8xf32, #tp.chip<1>>"


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        # chip 1 masks by another run than its shard's
        (
            [("%row_start_1 = arith.constant 4", "%row_start_1 = arith.constant 5")],
            "the row offset is 5, not the shard's first row 4 [slices-misaligned]",
        ),
        (
            [("%rows_1 = arith.constant 4", "%rows_1 = arith.constant 8")],
            "the mask is not 0 <= row - 4 < 4",
        ),
        # chip 1 yields its row unmasked: it would add it where chip 0 holds the id
        (
            [
                (
                    "%masked_1 = arith.select %holds_row_1, %v_1, %7",
                    "%masked_1 = arith.addf %v_1, %7",
                )
            ],
            "is not the mask's 'arith.select'",
        ),
        # chip 1 reads another column than the others
        ([("%col_1 = linalg.index 2", "%col_1 = linalg.index 1")], "computes otherwise"),
        # chip 1 holds rows [5, 9) (shard and mask alike): rows 4 lost, 8 looked up twice
        (
            [
                (CHIP1, CHIP1.replace("(4, 4)", "(5, 4)")),
                ("%row_start_1 = arith.constant 4", "%row_start_1 = arith.constant 5"),
            ],
            "miss rows [4, 5) of 12 [slices-gap]",
        ),
        (
            [
                (CHIP1, CHIP1.replace("(4, 4)", "(3, 4)")),
                ("%row_start_1 = arith.constant 4", "%row_start_1 = arith.constant 3"),
            ],
            "rows that overlap at row 3 (chip 1) [slices-overlap]",
        ),
    ],
)
def test_a_lookup_summed_otherwise_is_not_certified(
    edits: list[tuple[str, str]], message: str
) -> None:
    """Fault injection on the certificate's lookup rule (analysis/certify/gather.py): the split
    program certifies; each edit of chip 1's lookup is refused, naming why."""
    text = str(
        lowered(parse(Model(vocab=12, greedy=False, mlp=False)), "tp-split{chips=3 plan=hf}")
    )
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    module, _ = parse_module(tp_context(), text, "<edited>")
    with pytest.raises(TpDiagnostic) as err:
        check_obligation(module)
    assert message in str(err.value)


@pytest.mark.parametrize("chips", [2, 3])
@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("kind", ["untied", "tied-bf16"])
def test_the_split_model_runs_alike_at_every_stage(kind: str, stage: str, chips: int) -> None:
    """The split program lowered down to the relay (tp.maxloc and the lookup's all-reduce
    through every pass) gives the unsharded program's next ids and logits."""
    m = Model(**{**MODELS[kind].__dict__, "vocab": 11})
    source = parse(m)
    ours = lowered(source, f"tp-split{{chips={chips} plan=hf}}")
    if STAGES[stage]:
        ours = lowered(ours, STAGES[stage])
    weights = random_weights(source, 0)
    got, want = _run(ours, m, weights), _run(source, m, weights)
    assert np.array_equal(got["next_ids"], want["next_ids"])
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-6)


def test_tp_opt_splits_by_plan_hf_and_refuses_in_one_line(tmp_path: Path) -> None:
    """The CLI path: tp-opt --tp-split="chips=3 plan=hf" --tp-verify writes a certified
    program; 12 chips over 11 vocab rows is one located line, exit 1."""
    src = tmp_path / "model.mlir"
    src.write_text(whole_model(Model(vocab=11)))
    out = tmp_path / "split.mlir"
    ok = subprocess.run(
        [
            str(BIN / "tp-opt"),
            str(src),
            "--tp-split=chips=3 plan=hf",
            "--tp-verify",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "tp.certificate" in out.read_text() and "tp.maxloc" in out.read_text()
    bad = subprocess.run(
        [str(BIN / "tp-opt"), str(src), "--tp-split=chips=12 plan=hf"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    first = bad.stderr.strip().splitlines()[0]
    assert first.startswith(f"{src}:2:3: error: 12 chips exceed the 11 rows of axis 0"), first
