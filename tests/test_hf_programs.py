"""The whole-model step programs written from a Hugging Face directory (tp-gen
--from-pretrained, unsharded), run by the interpreter: prefill then decode steps give the
greedy ids and logits of the independent numpy reference (tests/hf_reference.py) for every
model_type, f32 and bf16, tied and untied heads, prompts of 1, 7 and 16 ids, batch 1 and 2."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import hf_models
import numpy as np
import pytest
from hf_reference import Reference, load_tensors

from tp_dialect.frontend.registry import read_model
from tp_dialect.frontend.split import split_text
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

P = 24  # cache positions: the longest prompt (16) plus the decode steps
DECODE_STEPS = 3


@functools.cache
def _program(directory: str, kind: str, tokens: int, batch: int, chips: int = 1) -> Any:
    """The parsed step program (cached: the tests share a decode program per model); over
    ``chips`` > 1, tp-gen's split of it by the family's HF plan."""
    model = read_model(directory)
    text = model.write(model.step(kind, tokens, batch, P, logits=True))
    if chips > 1:
        text = split_text(text, chips, model.entry.plan)
    module, _ = parse_module(tp_context(), text, f"<{kind}>")
    return module


def check_against_reference(directory: Path, batch: int, length: int, chips: int = 1) -> None:
    """Prefill then DECODE_STEPS decode steps (over ``chips``), each step's next ids and
    logits equal to the reference's on the same tokens (ids exactly, logits within 1e-4
    relative)."""
    d = str(directory)
    model = read_model(d)
    ref = Reference(d)
    weights = load_tensors(d)
    if model.model.tied:
        # the program reads the tied head from the embedding: no lm_head port
        weights.pop("lm_head.weight", None)
    prompt = hf_models.prompt_ids(model.model.vocab, batch, length)
    prefill = _program(d, "prefill", length, batch, chips)
    decode = _program(d, "decode", 1, batch, chips)
    caches: dict[str, np.ndarray] = {}
    for name, shape in _cache_shapes(model, batch).items():
        caches[name] = np.zeros(shape, np.float32)
    cache = ref.empty_cache(batch)
    ids, position, program = prompt, 0, prefill
    for _ in range(1 + DECODE_STEPS):
        out = run_program(program, {**weights, **caches, "input_ids": ids, "position": position})
        want = ref.forward(ids, position, cache)
        scale = np.abs(want).max()
        np.testing.assert_allclose(out["logits"], want, rtol=0, atol=1e-4 * scale)
        np.testing.assert_array_equal(out["next_ids"], np.argmax(want, axis=-1))
        caches = {
            name.replace("present", "past"): value
            for name, value in out.items()
            if name.startswith("present")
        }
        position += ids.shape[1]
        ids, program = out["next_ids"][:, None], decode


def _cache_shapes(model: Any, batch: int) -> dict[str, tuple[int, ...]]:
    m = model.model
    kv = getattr(m, "kv_heads", m.heads)
    hd = getattr(m, "head_dim", m.hidden // m.heads)
    shapes = {}
    for i in range(m.layers):
        for kind in ("key", "value"):
            shapes[f"past_{kind}.{i}"] = (batch, kv, P, hd)
    return shapes


@pytest.mark.parametrize("model_type", hf_models.FAMILIES)
@pytest.mark.parametrize(
    ("dtype", "tied"),
    [("float32", False), ("float32", True), ("bfloat16", False), ("bfloat16", True)],
)
@pytest.mark.parametrize(("batch", "length"), [(1, 1), (2, 7), (2, 16)])
def test_prefill_then_decode_equal_the_reference(
    tmp_path: Path, model_type: str, dtype: str, tied: bool, batch: int, length: int
) -> None:
    directory = hf_models.write_model(
        tmp_path / model_type, model_type, dtype=dtype, tie_word_embeddings=tied
    )
    check_against_reference(directory, batch, length)


@pytest.mark.parametrize(
    ("model_type", "overrides"),
    [
        # a window shorter than the prompt: the prefill and the decode steps both mask
        ("mistral", {"sliding_window": 5}),
        ("qwen2", {"use_sliding_window": True, "max_window_layers": 0, "sliding_window": 4}),
        ("llama", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}),
        (
            "llama",
            {
                "rope_scaling": {
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    # short enough that the tiny head's wavelengths fall in all three bands
                    "original_max_position_embeddings": 64,
                }
            },
        ),
        ("qwen2", {"rope_scaling": {"type": "linear", "factor": 2.0}}),
        ("llama", {"attention_bias": True, "mlp_bias": True}),
        ("qwen3", {"attention_bias": True, "num_key_value_heads": 8}),
        ("llama", {"num_key_value_heads": 2, "rope_theta": 500.0, "rms_norm_eps": 1e-3}),
        ("gpt2", {"n_inner": 96, "layer_norm_epsilon": 1e-3}),
        # f16 checkpoints, widened where read
        ("qwen3", {"dtype": "float16"}),
        ("gpt2", {"dtype": "float16", "tie_word_embeddings": False}),
    ],
)
def test_configs_the_families_state(
    tmp_path: Path, model_type: str, overrides: dict[str, Any]
) -> None:
    directory = hf_models.write_model(tmp_path / model_type, model_type, **overrides)
    check_against_reference(directory, 2, 16)
