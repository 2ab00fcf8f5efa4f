"""A serving session runs step programs on resident chip state: the same numbers as each step
run on its own with its caches round-tripped through the host, with every weight slice read
once and every cache slice allocated once and updated where the chips hold it."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import program, tiny

from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import MemorySource, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.session import Session

STAGES = {
    "source": "",
    "phased": "tp-relocate,tp-transfers,tp-phase",
    "programs": "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay",
}
CACHES = ("present_key.0", "present_value.0", "present_key.1", "present_value.1")


@functools.cache
def staged(chips: int, stage: str) -> object:
    source = program(tiny(chips=chips, layers=2))
    return lowered(source, STAGES[stage]) if STAGES[stage] else source


def hidden(step: int) -> np.ndarray:
    return np.random.default_rng(100 + step).standard_normal((1, 64)).astype(np.float32)


@pytest.mark.parametrize("chips", [1, 2, 4])
@pytest.mark.parametrize("stage", sorted(STAGES))
def test_steps_on_resident_state_equal_steps_round_tripped(chips: int, stage: str) -> None:
    module = staged(chips, stage)
    weights = random_weights(module, 0)  # type: ignore[arg-type]
    # The reference: every step on its own, its caches handed back to the host and in again.
    caches = {
        f"past_{kind}.{layer}": np.zeros((1, 8, 16, 8), np.float32)
        for kind in ("key", "value")
        for layer in range(2)
    }
    session = Session(MemorySource(weights), cache_outputs=CACHES)
    step = session.prepare(module)  # type: ignore[arg-type]
    for position in range(4):
        inputs = {"hidden_states": hidden(position), "position": np.int64(position)}
        want = run_program(module, {**weights, **caches, **inputs})  # type: ignore[arg-type]
        caches = {name.replace("present", "past"): want[name] for name in want if name in CACHES}
        got = session.run(step, inputs)
        assert sorted(got) == ["hidden_states"]  # the caches stay on the chips
        np.testing.assert_array_equal(got["hidden_states"], want["hidden_states"])
    # each chip's cache slices: allocated once, 2 layers x (key, value) x [1, 8, 16, 8] f32
    assert session.cache_bytes == 4 * 8 * 16 * 8 * 4


def test_weights_are_read_once_and_shared_by_the_programs_of_a_session() -> None:
    """A prefill-like and a decode-like program cutting alike share the session's slices and
    caches: the second program reads nothing and allocates nothing more."""
    a, b = staged(2, "source"), staged(2, "programs")
    session = Session(MemorySource(random_weights(a, 0)), cache_outputs=CACHES)  # type: ignore[arg-type]
    first = session.prepare(a)  # type: ignore[arg-type]
    read, held = session.weight_bytes, session.cache_bytes
    second = session.prepare(b)  # type: ignore[arg-type]
    assert (session.weight_bytes, session.cache_bytes) == (read, held)
    x = {"hidden_states": hidden(0), "position": np.int64(0)}
    y = {"hidden_states": hidden(1), "position": np.int64(1)}
    # step 0 by one program, step 1 by the other: the cache written by the first is read by
    # the second where the chips hold it
    session.run(first, x)
    got = session.run(second, y)
    alone = Session(MemorySource(random_weights(a, 0)), cache_outputs=CACHES)  # type: ignore[arg-type]
    only = alone.prepare(a)  # type: ignore[arg-type]
    alone.run(only, x)
    np.testing.assert_array_equal(got["hidden_states"], alone.run(only, y)["hidden_states"])


def _driven(
    chips: int, out: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """tests/mpi_session_driver.py run as ``chips`` ranks writing ``out``."""
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "mpiexec"),
            "-n",
            str(chips),
            sys.executable,
            str(Path(__file__).parent / "mpi_session_driver.py"),
            str(out),
            str(chips),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=Path(__file__).parent,
    )


@pytest.mark.parametrize(("chips", "outline"), [(2, "flat"), (4, "outline")])
def test_an_mpi_session_keeps_each_chips_caches_on_its_rank(
    chips: int, outline: str, tmp_path: Path
) -> None:
    """Ranks as chips, each keeping its caches across steps: bitwise the single-process
    session's outputs, step after step."""
    out = tmp_path / "steps.npz"
    proc = _driven(chips, out, "3", outline)
    assert proc.returncode == 0, proc.stderr
    got = np.load(out)
    module = staged(chips, "programs")
    session = Session(MemorySource(random_weights(module, 0)), cache_outputs=CACHES)  # type: ignore[arg-type]
    step = session.prepare(module)  # type: ignore[arg-type]
    for position in range(3):
        want = session.run(
            step, {"hidden_states": hidden(position), "position": np.int64(position)}
        )
        np.testing.assert_array_equal(got[f"hidden_{position}"], want["hidden_states"])


def test_rank_0_failing_mid_step_ends_every_rank_with_its_reason(tmp_path: Path) -> None:
    """Rank 0's chip failing while the other ranks wait on its links (fault injected by the
    driver) ends the world at once with rank 0's line; closing the session instead would
    wait for ranks that cannot hear it (the run hung until the launcher's timeout)."""
    proc = _driven(2, tmp_path / "steps.npz", "3", "flat", "fail-rank0", timeout=120)
    assert proc.returncode != 0
    assert "error: rank 0: injected fault" in proc.stderr
    assert not (tmp_path / "steps.npz").exists()
