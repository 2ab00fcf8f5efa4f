"""Serving on IREE: `tp_dialect.load(..., backend="iree")` and ``tp-generate --backend iree``
generate transformers' greedy ids (the tests' numpy `hf_reference`), with every step's logits
within f32 rounding of the interpreter's session; the caches stay on IREE's device (the same
buffers across generations, written in place, never assembled on the host); a second session
compiles nothing. Compiled modules are shared by every test through one cache directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import hf_models as M
import hf_reference as R
import numpy as np
import pytest
from helpers import tool

import tp_dialect
from tp_dialect.runtime.iree_exec import IreeError, ModuleCache
from tp_dialect.runtime.iree_session import IreeSession
from tp_dialect.serving.model import load

TOKENS = 4


@pytest.fixture(autouse=True)
def _shared_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_IREE_CACHE", str(cache_dir))


CASES = [
    # family, chips, prompt length, batch, write_model options
    ("qwen3", 2, 7, 2, {}),
    ("gpt2", 1, 5, 1, {}),
    ("llama", 4, 6, 1, {"dtype": "bfloat16", "vocab_size": M.ODD_VOCAB}),
]


@pytest.mark.parametrize(("family", "chips", "length", "batch", "written"), CASES)
def test_iree_generates_the_reference_ids_and_the_interpreters_logits(
    tmp_path: Path, family: str, chips: int, length: int, batch: int, written: dict[str, Any]
) -> None:
    d = M.write_model(tmp_path / family, family, seed=3, **written)
    ref = R.Reference(d)
    prompt = M.prompt_ids(ref.vocab, batch, length)
    want_ids, _ = ref.generate(prompt, TOKENS)
    on = {"chips": chips, "batch": batch, "logits": True, "max_positions": 16}
    interp = tp_dialect.load(d, **on)
    native = tp_dialect.load(d, backend="iree", **on)
    assert interp is not None and native is not None
    assert isinstance(native.session, IreeSession)
    expected = interp.generate(prompt, TOKENS)
    got = native.generate(prompt, TOKENS)
    np.testing.assert_array_equal(got.ids, want_ids)
    np.testing.assert_array_equal(got.ids, expected.ids)
    for step, (a, b) in enumerate(zip(got.logits, expected.logits, strict=True)):
        np.testing.assert_allclose(
            a, b, rtol=1e-5, atol=1e-5 * float(np.abs(b).max()), err_msg=f"step {step}"
        )


@pytest.mark.parametrize("donate", [True, False])
def test_caches_stay_on_the_device_across_generations(
    tmp_path: Path, donate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two generations on one session: the second prompt's ids are still the reference's
    (its prefill overwrites the cache rows the first left), the cache buffers hold the same
    bytes, and no step hands a cache back to the host. Without donation IREE writes no
    cache in place: the session must hold what each step returns."""
    monkeypatch.setattr(IreeSession, "donate", donate)
    d = M.write_model(tmp_path / "qwen3", "qwen3", seed=5)
    ref = R.Reference(d)
    model = load(d, chips=2, backend="iree", max_positions=24)
    assert model is not None
    first = M.prompt_ids(ref.vocab, 1, 9, seed=1)
    second = M.prompt_ids(ref.vocab, 1, 3, seed=2)
    np.testing.assert_array_equal(model.generate(first, 6).ids, ref.generate(first, 6)[0])
    held = model.session.cache_bytes
    assert held > 0
    np.testing.assert_array_equal(model.generate(second, 8).ids, ref.generate(second, 8)[0])
    assert model.session.cache_bytes == held
    out = model.decode(np.array([1]), 12)
    assert set(out) == {"next_ids"}  # the caches' host stores are not run


def test_a_second_session_compiles_nothing(tmp_path: Path) -> None:
    d = M.write_model(tmp_path / "gpt2", "gpt2", seed=6)
    ref = R.Reference(d)
    prompt = M.prompt_ids(ref.vocab, 1, 4)
    counts = []
    for _ in range(2):
        modules = ModuleCache(tmp_path / "modules")
        model = load(d, chips=2, backend="iree", max_positions=16)
        assert model is not None
        model.session.modules = modules
        np.testing.assert_array_equal(model.generate(prompt, 3).ids, ref.generate(prompt, 3)[0])
        counts.append((modules.compiled, modules.hits))
    assert counts[0][0] > 0
    assert counts[1] == (0, counts[0][0])


def test_an_iree_session_runs_every_chip_in_this_process(tmp_path: Path) -> None:
    d = M.write_model(tmp_path / "qwen3", "qwen3", seed=5)
    model = load(d, chips=2, backend="iree", max_positions=16)
    assert model is not None
    with pytest.raises(IreeError, match="every chip in this process"):
        model.session.prepare(model.program("decode", 1), chip=0)


def _generated(model: Path, prompt: str, cache_dir: Path, *flags: str) -> list[list[int]]:
    """The ids ``tp-generate`` reports for ``prompt`` (5 new tokens), with ``flags``."""
    report = model.parent / "r.json"
    assert os.environ["TP_IREE_CACHE"] == str(cache_dir)  # `_shared_cache`, for ranks too
    proc = tool(
        "tp-generate",
        model,
        "--prompt-ids",
        prompt,
        "--max-new-tokens",
        5,
        "--report",
        report,
        *flags,
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(report.read_text())["ids"])


def test_tp_generate_on_iree(tmp_path: Path, cache_dir: Path) -> None:
    d = M.write_model(tmp_path / "llama", "llama", seed=4)
    want = R.Reference(d).generate(np.array([[5, 17, 42, 8]]), 5)[0].tolist()
    assert _generated(d, "5,17,42,8", cache_dir, "--chips", "2", "--backend", "iree") == want


def test_tp_generate_on_iree_mpi_ranks(tmp_path: Path, cache_dir: Path) -> None:
    """``--mpi 2 --backend iree``: each rank compiles and runs its own chip on IREE, its
    cache slices on its own device; the ids are the reference's."""
    d = M.write_model(tmp_path / "qwen2", "qwen2", seed=8)
    want = R.Reference(d).generate(np.array([[5, 17, 42, 8, 61]]), 5)[0].tolist()
    assert _generated(d, "5,17,42,8,61", cache_dir, "--mpi", "2", "--backend", "iree") == want


def test_engine_iree_is_for_ranks(tmp_path: Path) -> None:
    d = M.write_model(tmp_path / "qwen3", "qwen3", seed=5)
    with pytest.raises(ValueError, match="engine 'iree' is for backend 'mpi'"):
        load(d, chips=2, engine="iree")


@pytest.mark.parametrize("donate", [True, False])
def test_a_decode_step_places_only_its_inputs(
    tmp_path: Path, donate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With donation a decode step puts on the device its own inputs (the ids and the
    position) and no weight or cache slice: they are already there, and a cache slice is
    written where it is. Without, each cache slice the step writes is copied to a buffer of
    its own. (The zero-filled accumulators a chip carries between its segments are copied
    either way: a few hundred bytes.)"""
    monkeypatch.setattr(IreeSession, "donate", donate)
    d = M.write_model(tmp_path / "llama", "llama", seed=2)
    model = load(d, chips=2, backend="iree", max_positions=16)
    assert model is not None
    model.generate(M.prompt_ids(model.limits.vocab, 1, 3), 2)  # everything prepared
    device = model.session.device
    placed: list[tuple[int, ...]] = []
    real = device.place

    def counted(value: Any) -> Any:
        placed.append(np.shape(value))
        return real(value)

    monkeypatch.setattr(device, "place", counted)
    model.decode(np.array([3]), 5)
    assert placed[:2] == [(1, 1), ()]  # the ids, the position
    slices = [s for s in placed if len(s) == 4]  # [batch, KV heads, positions, head_dim]
    caches = 2 * 2 * int(model.config["num_hidden_layers"])  # K and V, each chip
    assert len(slices) == (0 if donate else caches)
    assert all(int(np.prod(s)) < 256 for s in placed[2:] if len(s) != 4)


def test_iree_runs_the_per_chip_programs_only(tmp_path: Path) -> None:
    d = M.write_model(tmp_path / "qwen3", "qwen3", seed=5)
    with pytest.raises(ValueError, match="IREE runs the per-chip programs: stage 'programs'"):
        load(d, chips=2, backend="iree", stage="phased")
