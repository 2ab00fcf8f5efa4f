"""What bf16 on the wire costs in accuracy: Qwen3 and GPT-2 at their real hidden sizes (Qwen3-8B's
4096, GPT-2 small's 768), random weights as the tests write them (`tests/hf_models`), served on
8 (Qwen3) and 4 (GPT-2) chips with f32 all-reduces and with tp-narrow-wire's bf16 ones, each
against the tests' plain-numpy transformers (`tests/hf_reference`): the largest logit error over
a greedy generation (relative to the largest logit) and whether the ids agree.

``python -m benchmarks.wire_error [--tokens 4]`` (about 2 minutes, 6 GB).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import tp_dialect

TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import hf_models as M  # noqa: E402
import hf_reference as R  # noqa: E402

MODELS = {
    # family: (chips, config fields: hidden sizes of the real models, fewer layers and a
    # smaller vocab for Qwen3; GPT-2 small whole, on 4 chips as its 12 heads allow)
    "qwen3": (
        8,
        {
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 12288,
            "num_hidden_layers": 2,
            "vocab_size": 8192,
        },
    ),
    "gpt2": (
        4,
        {
            "n_embd": 768,
            "n_head": 12,
            "n_layer": 12,
            "n_inner": 3072,
            "vocab_size": 50257,
            "bos_token_id": 50256,
            "eos_token_id": 50256,
        },
    ),
}


def measure(family: str, tokens: int, root: Path) -> list[str]:
    """One table row per wire format for ``family``."""
    chips, fields = MODELS[family]
    d = M.write_model(root / family, family, seed=0, **fields)
    ref = R.Reference(d)
    prompt = M.prompt_ids(ref.vocab, 1, 8)
    want_ids, want_logits = ref.generate(prompt, tokens)
    scale = float(np.abs(want_logits).max())
    rows = []
    for wire in (None, "bf16"):
        t0 = time.perf_counter()
        served = tp_dialect.load(d, chips=chips, logits=True, wire=wire, max_positions=32)
        assert served is not None
        got = served.generate(prompt, tokens)
        err = max(float(np.abs(g - w).max()) for g, w in zip(got.logits, want_logits, strict=True))
        same = "yes" if np.array_equal(got.ids, want_ids) else "no"
        rows.append(
            f"| {family} | {chips} | {wire or 'f32'} | {err / scale:.2e} | {same} | "
            f"{time.perf_counter() - t0:.0f} s |"
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.wire_error")
    p.add_argument("--tokens", type=int, default=4, help="greedy tokens after an 8-token prompt")
    args = p.parse_args(argv)
    print("| model | N | wire | max logit error / max logit | same ids | time |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="tp-wire-") as root:
        for family in MODELS:
            measure(family, args.tokens, Path(root))


if __name__ == "__main__":
    main()
