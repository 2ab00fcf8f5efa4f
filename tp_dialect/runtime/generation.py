"""Greedy generation: one prefill, then one decode step per token, on a serving session.

`generate` runs a model's step programs (their ports: ``input_ids [B, S]``, ``position``;
out ``next_ids [B]``, optionally ``logits [B, V]``) as transformers'
``generate(do_sample=False)`` does: the prefill reads the prompt at positions ``0..S-1`` and
gives the first new token; decode step k reads token k-1 at position ``S + k - 1`` and gives
token k. A row stops at ``eos`` (any of the ids, when several): from then on it holds
``pad`` (eos itself when the model names no pad), and generation ends when every row has
stopped or ``max_new_tokens`` are made. The caches stay on the chips between steps (the
`Session`); the host only hands ids in and takes ids out.

Time to first token is the prefill's wall time (ids in to the first token out); time per
output token the mean of the decode steps'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tp_dialect.runtime.session import Session, Step
from tp_dialect.signature import BindError


@dataclass
class GenerationResult:
    """What a generation made: the new ids per row (``pad`` after a row's eos), and how long
    it took."""

    ids: np.ndarray  # [B, steps] int64
    ttft_s: float  # the prefill: prompt in, first token out
    tpot_s: float | None  # the mean decode step (None: only the first token was made)
    logits: list[np.ndarray] = field(default_factory=list[np.ndarray])  # per step, if asked

    def to_json(self) -> dict[str, object]:
        """The result as `tp-run --report` writes it."""
        return {
            "ids": self.ids.tolist(),
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "tokens": int(self.ids.shape[1]),
        }


@dataclass(frozen=True)
class Limits:
    """What a model's programs accept: its vocab, its cache's positions, its batch."""

    vocab: int
    positions: int
    batch: int


def check_prompt(prompt: np.ndarray, max_new_tokens: int, limits: Limits) -> np.ndarray:
    """``prompt`` as ``[B, S]`` int64 ids, or BindError saying what is wrong: no token, a
    batch other than the programs', an id outside the vocab, or more tokens than the cache
    holds (the prompt and every new token but the last each take a cache row)."""
    ids = np.asarray(prompt)
    if ids.ndim == 1:
        ids = ids[None, :]
    if ids.ndim != 2 or ids.shape[1] == 0:
        raise BindError("the prompt holds no token: give at least one id")
    if ids.dtype.kind not in "iu":
        raise BindError(f"prompt ids must be integers, not {ids.dtype}")
    if ids.shape[0] != limits.batch:
        raise BindError(
            f"the prompt has {ids.shape[0]} row(s), the programs take a batch of {limits.batch}"
        )
    bad = (ids < 0) | (ids >= limits.vocab)
    if bad.any():
        row, col = (int(x) for x in np.argwhere(bad)[0])
        raise BindError(
            f"prompt id {int(ids[row, col])} (row {row}, position {col}) is outside the "
            f"vocab of {limits.vocab} (0..{limits.vocab - 1})"
        )
    if max_new_tokens < 1:
        raise BindError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    needed = ids.shape[1] + max_new_tokens - 1
    if needed > limits.positions:
        raise BindError(
            f"a prompt of {ids.shape[1]} token(s) and {max_new_tokens} new token(s) need "
            f"{needed} cache positions; the cache holds {limits.positions} "
            "(give a larger max_positions, or fewer tokens)"
        )
    return ids.astype(np.int64)


def generate(
    session: Session,
    prefill: Callable[[int], Step],
    decode: Step,
    prompt: np.ndarray,
    max_new_tokens: int,
    limits: Limits,
    eos: Sequence[int] = (),
    pad: int | None = None,
    on_token: Callable[[int, np.ndarray], None] | None = None,
) -> GenerationResult:
    """Greedy ids after ``prompt`` (see the module docstring): ``prefill(S)`` gives the
    prefill step for a prompt of S tokens, ``decode`` the decode step; ``on_token(k, ids)``
    is told each step's ids as they come."""
    ids = check_prompt(prompt, max_new_tokens, limits)
    batch, length = ids.shape
    stop = np.asarray(list(eos), dtype=np.int64)
    filler = np.int64(pad if pad is not None else (stop[0] if stop.size else 0))
    step = prefill(length)
    start = time.perf_counter()
    out = session.run(step, {"input_ids": ids, "position": np.int64(0)})
    ttft = time.perf_counter() - start
    made = [np.asarray(out["next_ids"], np.int64)]
    logits = [out["logits"]] if "logits" in out else []
    done = np.isin(made[0], stop)
    if on_token is not None:
        on_token(0, made[0])
    decode_times: list[float] = []
    for k in range(1, max_new_tokens):
        if done.all():
            break
        feed = np.where(done, filler, made[-1])[:, None]
        begin = time.perf_counter()
        out = session.run(decode, {"input_ids": feed, "position": np.int64(length + k - 1)})
        decode_times.append(time.perf_counter() - begin)
        new = np.where(done, filler, np.asarray(out["next_ids"], np.int64))
        made.append(new)
        if "logits" in out:
            logits.append(out["logits"])
        done |= np.isin(new, stop)
        if on_token is not None:
            on_token(k, new)
    return GenerationResult(
        np.stack(made, axis=1).reshape(batch, len(made)),
        ttft,
        float(np.mean(decode_times)) if decode_times else None,
        logits,
    )
