"""Starting MPI ranks on this machine: which ``mpiexec``, and how many BLAS threads a rank."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside this Python (the ``mpich`` wheel's, in a venv), else the one on
    PATH, else None."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file():
        return str(beside)
    return shutil.which("mpiexec")


def threads_per_rank(ranks: int) -> int:
    """numpy's BLAS threads for each of ``ranks`` ranks sharing this machine's cores."""
    return max(1, (os.cpu_count() or 1) // max(ranks, 1))


def rank_env(ranks: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with numpy's BLAS threads per rank set
    to cores / ``ranks`` where the user has not chosen: ranks share this machine's cores, and
    N ranks each with every core's threads would oversubscribe them N-fold."""
    env = dict(os.environ if base is None else base)
    threads = str(threads_per_rank(ranks))
    for var in BLAS_THREAD_VARS:
        env.setdefault(var, threads)
    return env


def run_bounded(
    cmd: Sequence[str],
    env: Mapping[str, str],
    timeout: float,
    poll: Callable[[], None] | None = None,
    every: float = 0.25,
) -> subprocess.CompletedProcess[str]:
    """``cmd`` (an ``mpiexec`` line) run to its end with its output captured as text, in a
    session of its own; past ``timeout`` seconds the whole session (the launcher and its
    ranks) is killed and ``subprocess.TimeoutExpired`` raised. ``poll``, if given, is called
    about every ``every`` seconds while it runs (the launcher's progress line); the run ends
    as soon as ``cmd`` does, not at the next poll. A missing or unrunnable ``cmd`` raises as
    ``subprocess.Popen`` does."""
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=dict(env),
    )
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            # Waiting in slices loses nothing: communicate keeps what it has read so far.
            out, err = proc.communicate(timeout=max(min(left, every) if poll else left, 0))
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() < deadline and poll is not None:
                poll()
                continue
            with contextlib.suppress(ProcessLookupError):  # it may end as it times out
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise subprocess.TimeoutExpired(list(cmd), timeout) from None
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
