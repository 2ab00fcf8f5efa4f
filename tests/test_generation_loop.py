"""The greedy loop, apart from any program: what it hands each step (ids, positions), where a
row stops (eos, then pad), when the loop ends, and what it refuses before any step runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tp_dialect.runtime.generation import Limits, generate
from tp_dialect.signature import BindError

LIMITS = Limits(vocab=50, positions=16, batch=2)


class Rule:
    """A stand-in session whose "model" answers ``(last id * 3 + position) % 50`` per row,
    and records what each step was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, np.ndarray, int]] = []

    def run(self, step: Any, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        ids, position = np.asarray(inputs["input_ids"]), int(inputs["position"])
        self.calls.append((step, ids.copy(), position))
        last = position + ids.shape[1] - 1  # the position of the last token handed in
        return {"next_ids": (ids[:, -1] * 3 + last) % 50}


def expected(prompt: np.ndarray, k: int, eos: int | None, pad: int) -> np.ndarray:
    """The same rule run token by token in plain Python, rows stopping at eos."""
    rows = []
    for row in prompt:
        seq, out, stopped = list(row), [], False
        for _ in range(k):
            token = pad if stopped else (seq[-1] * 3 + len(seq) - 1) % 50
            out.append(token)
            seq.append(token)
            stopped = stopped or token == eos
        rows.append(out)
    return np.array(rows)


def test_a_prefill_then_one_decode_step_per_token_at_the_next_position() -> None:
    session = Rule()
    prompt = np.array([[1, 2, 3], [4, 5, 6]])
    result = generate(session, lambda n: f"prefill{n}", "decode", prompt, 5, LIMITS)  # type: ignore[arg-type]
    np.testing.assert_array_equal(result.ids, expected(prompt, 5, None, 0))
    steps = [(name, position, ids.shape) for name, ids, position in session.calls]
    assert steps == [("prefill3", 0, (2, 3))] + [("decode", 3 + k, (2, 1)) for k in range(4)]
    assert result.ttft_s >= 0 and result.tpot_s is not None


def test_rows_stop_at_eos_hold_pad_and_the_loop_ends_when_all_stopped() -> None:
    prompt = np.array([[1, 2, 3], [4, 5, 6]])
    free = expected(prompt, 8, None, 0)
    eos = int(free[0, 1])  # row 0 stops at its second token
    session = Rule()
    result = generate(session, lambda n: "p", "d", prompt, 8, LIMITS, eos=[eos], pad=49)  # type: ignore[arg-type]
    np.testing.assert_array_equal(result.ids, expected(prompt, result.ids.shape[1], eos, 49))
    assert result.ids[0, 2:].tolist() == [49] * (result.ids.shape[1] - 2)
    # a stopped row is handed pad, not its own last token
    assert all(ids[0, 0] == 49 for name, ids, _ in session.calls[3:])
    one = generate(
        Rule(), lambda n: "p", "d", prompt, 8, LIMITS, eos=[int(free[0, 0]), int(free[1, 0])]
    )  # type: ignore[arg-type]
    assert one.ids.shape == (2, 1) and one.tpot_s is None  # both rows stopped at once


@pytest.mark.parametrize(
    ("prompt", "k", "message"),
    [
        (np.zeros((2, 0), int), 3, "holds no token"),
        (np.zeros((3, 2), int), 3, "the programs take a batch of 2"),
        (
            np.array([[1, 50], [0, 0]]),
            3,
            r"prompt id 50 \(row 0, position 1\) is outside the vocab of 50",
        ),
        (np.array([[1, -1], [0, 0]]), 3, "prompt id -1"),
        (np.zeros((2, 10), int), 8, "need 17 cache positions; the cache holds 16"),
        (np.zeros((2, 2), int), 0, "max_new_tokens must be at least 1"),
        (np.zeros((2, 2)), 2, "must be integers"),
    ],
)
def test_bad_prompts_are_refused_before_any_step(prompt: np.ndarray, k: int, message: str) -> None:
    session = Rule()
    with pytest.raises(BindError, match=message):
        generate(session, lambda n: "p", "d", prompt, k, LIMITS)  # type: ignore[arg-type]
    assert session.calls == []
