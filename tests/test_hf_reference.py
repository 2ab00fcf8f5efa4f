"""The tests' ground truth holds together: the plain-numpy ``*ForCausalLM`` reference gives the
same greedy ids and logits with its KV cache as recomputing the sequence, whatever way the
checkpoint is stored, and its attention, norms and RoPE match their textbook definitions."""

from __future__ import annotations

from pathlib import Path

import hf_models as M
import hf_reference as R
import numpy as np
import pytest


@pytest.mark.parametrize("family", M.FAMILIES)
def test_cache_equals_recompute(tmp_path: Path, family: str) -> None:
    """Prefill + decode steps with the cache are the whole sequence recomputed each step."""
    d = M.write_model(tmp_path, family, seed=3)
    ref = R.Reference(d)
    prompt = M.prompt_ids(ref.vocab, 2, 5)
    ids, logits = ref.generate(prompt, 4)
    ids2, logits2 = ref.generate(prompt, 4, use_cache=False)
    assert ids.shape == (2, 4)
    np.testing.assert_array_equal(ids, ids2)
    np.testing.assert_allclose(logits, logits2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family", ["qwen3", "gpt2"])
def test_storage_forms_agree(tmp_path: Path, family: str) -> None:
    """A sharded index, unprefixed names and a bf16 copy load to the same tensors' numbers."""
    one = R.Reference(M.write_model(tmp_path / "one", family, seed=4))
    sharded = R.Reference(M.write_model(tmp_path / "sh", family, seed=4, shards=3))
    bare = R.Reference(M.write_model(tmp_path / "bare", family, seed=4, prefixed=False))
    half = R.Reference(M.write_model(tmp_path / "bf16", family, seed=4, dtype="bfloat16"))
    assert len(list((tmp_path / "sh").glob("model-*-of-*.safetensors"))) == 3
    prompt = M.prompt_ids(one.vocab, 1, 6)
    base = one.generate(prompt, 3)[1]
    for other in (sharded, bare):
        np.testing.assert_array_equal(other.generate(prompt, 3)[1], base)
    # bf16 rounds every weight: close, not equal.
    assert not np.array_equal(half.generate(prompt, 3)[1], base)
    np.testing.assert_allclose(half.generate(prompt, 3)[1], base, rtol=0.1, atol=0.1)


def test_attention_is_softmax_of_scores() -> None:
    """Masked attention equals a per-query loop of softmax(q·k / sqrt(d)) · v."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, n, 4)) for n in (3, 5, 5))
    mask = R.visible(np.arange(2, 5), 5, window=2)
    out = R._attention(q, k, v, mask, 0.5)
    for t in range(3):
        seen = [j for j in range(5) if j <= t + 2 and j > t + 2 - 2]
        s = np.array([q[0, 0, t] @ k[0, 0, j] * 0.5 for j in seen])
        p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        np.testing.assert_allclose(out[0, 0, t], p @ v[0, 0, seen], rtol=1e-12)


def test_rope_rotates_pairs() -> None:
    """RoPE rotates each (i, i + d/2) pair by position · inv_freq[i]: norms are kept."""
    rng = np.random.default_rng(1)
    t = rng.standard_normal((1, 1, 3, 8))
    inv = R.inv_freq(8, 10000.0, None, np.float64)
    out = R.apply_rope(t, np.array([0, 1, 7]), inv)
    np.testing.assert_allclose(out[..., 0, :], t[..., 0, :])
    a = 7 * inv[1]
    x, y = t[0, 0, 2, 1], t[0, 0, 2, 5]
    np.testing.assert_allclose(
        out[0, 0, 2, [1, 5]], [x * np.cos(a) - y * np.sin(a), y * np.cos(a) + x * np.sin(a)]
    )


def test_eos_stops_a_row(tmp_path: Path) -> None:
    """A row that produced eos keeps producing pad (eos when there is none)."""
    d = M.write_model(tmp_path, "llama", seed=3)
    ref = R.Reference(d)
    prompt = M.prompt_ids(ref.vocab, 2, 5)
    first = ref.generate(prompt, 3)[0]
    ref.eos, ref.pad = (int(first[0, 0]),), 0
    ids = ref.generate(prompt, 3)[0]
    assert ids[0, 0] == first[0, 0] and (ids[0, 1:] == 0).all()
    if first[1, 0] != first[0, 0]:
        np.testing.assert_array_equal(ids[1], first[1])
