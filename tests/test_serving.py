"""A Hugging Face directory served on N chips generates transformers' greedy tokens.

Every case writes a tiny model directory (`hf_models`: config.json as save_pretrained writes
it, safetensors weights) and compares `tp_dialect.load(...).generate` with the tests' own
plain-numpy ``*ForCausalLM`` (`hf_reference`, which imports nothing from tp): the same ids,
and each step's logits within 1e-4 relative. The cases cover every model type, N = 1, 2, 4,
prompts of 1, 7 and 16 tokens, batch 1 and 2, bf16, a sharded index, unprefixed names, tied
and untied heads, a vocab no N divides, and every lowering stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hf_models as M
import hf_reference as R
import numpy as np
import pytest

import tp_dialect

TOKENS = 5


def _check(model_dir: Path, chips: int, prompt_len: int, batch: int, **load: Any) -> None:
    ref = R.Reference(model_dir)
    prompt = M.prompt_ids(ref.vocab, batch, prompt_len)
    want_ids, want_logits = ref.generate(prompt, TOKENS)
    model = tp_dialect.load(model_dir, chips=chips, batch=batch, logits=True, **load)
    assert model is not None
    got = model.generate(prompt, TOKENS)
    np.testing.assert_array_equal(got.ids, want_ids)
    scale = float(np.abs(want_logits).max())
    for step, logits in enumerate(got.logits):
        np.testing.assert_allclose(
            logits, want_logits[step], rtol=1e-4, atol=1e-4 * scale, err_msg=f"step {step}"
        )


CASES = [
    # family, chips, prompt length, batch, write_model options
    ("qwen3", 1, 7, 1, {}),
    ("qwen3", 2, 16, 2, {}),
    ("qwen3", 4, 1, 1, {"dtype": "bfloat16"}),
    ("llama", 2, 7, 1, {"tie_word_embeddings": True}),
    ("llama", 4, 7, 2, {}),
    ("mistral", 2, 7, 1, {"shards": 3}),
    ("qwen2", 4, 7, 1, {"prefixed": False}),
    ("qwen2", 2, 1, 2, {"dtype": "bfloat16", "shards": 2}),
    ("gpt2", 2, 7, 1, {}),
    ("gpt2", 4, 16, 1, {"vocab_size": M.ODD_VOCAB}),
    ("llama", 4, 7, 1, {"vocab_size": M.ODD_VOCAB, "tie_word_embeddings": True}),
]


@pytest.mark.parametrize(("family", "chips", "length", "batch", "written"), CASES)
def test_generate_equals_transformers(
    tmp_path: Path, family: str, chips: int, length: int, batch: int, written: dict[str, Any]
) -> None:
    d = M.write_model(tmp_path / family, family, seed=7, **written)
    _check(d, chips, length, batch)


@pytest.mark.parametrize("stage", ["source", "relocated", "phased"])
def test_every_stage_generates_the_same_tokens(tmp_path: Path, stage: str) -> None:
    d = M.write_model(tmp_path / "qwen3", "qwen3", seed=8)
    _check(d, 2, 7, 1, stage=stage)


def test_the_cache_is_allocated_once(tmp_path: Path) -> None:
    """The chips' cache slices are allocated once: generating more tokens holds no more."""
    d = M.write_model(tmp_path / "llama", "llama", seed=9)
    model = tp_dialect.load(d, chips=2, max_positions=32)
    assert model is not None
    prompt = M.prompt_ids(model.limits.vocab, 1, 4)
    model.generate(prompt, 2)
    held = model.session.cache_bytes
    model.generate(prompt, 12)
    assert model.session.cache_bytes == held
    # 2 layers x (key, value) x [1, kv 4, 32 positions, head_dim 8] f32, over the chips
    assert held == 2 * 2 * 4 * 32 * 8 * 4
