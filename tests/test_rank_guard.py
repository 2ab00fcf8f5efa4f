"""A rank's guard records how its rank died, ends the same way, passes signals on, and takes
its rank with it; the launcher names the first rank to die even when mpiexec, killing the
others, reports a different one (it did, about one run in ten on a loaded machine)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tp_dialect.runtime import mpi_exec, rank_guard
from tp_dialect.runtime.launch import find_mpiexec, run_bounded


def guard(
    tmp_path: Path, code: str, rank: str = "3", command: list[str] | None = None
) -> subprocess.Popen[str]:
    """``python -c code`` (or ``command``) run as rank ``rank`` under the guard, recording in
    ``tmp_path``, the guard leading a session of its own (as mpiexec starts it)."""
    cmd = [sys.executable, "-I", "-S", rank_guard.__file__, str(tmp_path)]
    cmd += command or [sys.executable, "-I", "-S", "-c", code]
    env = {**os.environ, "PMI_RANK": rank}
    return subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_a_killed_rank_is_recorded_and_its_guard_ends_by_the_same_signal(
    tmp_path: Path,
) -> None:
    proc = guard(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert mpi_exec.first_death(str(tmp_path)) == "rank 3 (chip 3) died: Killed (signal 9)"
    assert mpi_exec.first_death(str(tmp_path), host_rank=3) == (
        "rank 3 (the host) died: Killed (signal 9)"
    )
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


@pytest.mark.parametrize(("code", "status", "died"), [(0, 0, None), (7, 7, "exit code 7")])
def test_an_ended_rank_gives_its_exit_code(
    tmp_path: Path, code: int, status: int, died: str | None
) -> None:
    proc = guard(tmp_path, f"print('out'); raise SystemExit({code})")
    assert proc.wait(timeout=30) == status
    assert proc.stdout is not None and proc.stdout.read() == "out\n"
    said = mpi_exec.first_death(str(tmp_path))
    assert said == (None if died is None else f"rank 3 (chip 3) died: {died}")


def test_a_signal_to_the_guard_goes_to_its_rank(tmp_path: Path) -> None:
    proc = guard(tmp_path, "import sys, time; print('up', flush=True); time.sleep(60)")
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert mpi_exec.first_death(str(tmp_path)) == "rank 3 (chip 3) died: Terminated (signal 15)"


def test_a_signal_to_the_guards_group_reaches_the_rank_once(tmp_path: Path) -> None:
    """mpiexec signals each guard's process group (^C): the rank, in a group of its own,
    gets it from the guard alone, not twice."""
    code = (
        "import signal, time\n"
        "got = []\n"
        "signal.signal(signal.SIGINT, lambda *_: got.append(1))\n"
        "print('up', flush=True)\n"
        "time.sleep(1.5)\n"
        "print(len(got), flush=True)"
    )
    proc = guard(tmp_path, code)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    assert proc.stdout.read() == "1\n"


def test_signals_after_the_rank_ended_change_nothing(tmp_path: Path) -> None:
    """A signal arriving once the rank is reaped is not sent on (its pid may be another's):
    the guard still records the rank's end and ends as it did."""
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
        "print('up', flush=True)\n"
        "time.sleep(0.3)\n"
        "raise SystemExit(5)"
    )
    proc = guard(tmp_path, code)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    while proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGUSR1)
        time.sleep(0.002)
    assert proc.returncode == 5
    assert mpi_exec.first_death(str(tmp_path)) == "rank 3 (chip 3) died: exit code 5"


def test_the_rank_gets_the_signals_python_ignores_back(tmp_path: Path) -> None:
    """Python ignores SIGPIPE at its start; the rank starts with it as a process would."""
    proc = guard(tmp_path, "", command=["/bin/sh", "-c", "kill -PIPE $$"])
    assert proc.wait(timeout=30) == -signal.SIGPIPE
    said = mpi_exec.first_death(str(tmp_path))
    assert said == f"rank 3 (chip 3) died: {signal.strsignal(signal.SIGPIPE)} (signal 13)"


def test_a_rank_that_cannot_start_says_why(tmp_path: Path) -> None:
    proc = guard(tmp_path, "", command=[str(tmp_path / "no-such-python")])
    assert proc.wait(timeout=30) == 127
    assert proc.stderr is not None
    assert proc.stderr.read() == (
        f"rank guard: cannot run {tmp_path / 'no-such-python'}: No such file or directory\n"
    )
    assert mpi_exec.first_death(str(tmp_path)) == "rank 3 (chip 3) died: exit code 127"


def test_a_guard_killed_takes_its_rank_with_it(tmp_path: Path) -> None:
    proc = guard(tmp_path, "import os, time; print(os.getpid(), flush=True); time.sleep(60)")
    assert proc.stdout is not None
    rank = int(proc.stdout.readline())
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(rank) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(rank)
    assert mpi_exec.first_death(str(tmp_path)) is None  # killed, not died: nothing said


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, reaped by init soon, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_earliest_death_is_the_one_named(tmp_path: Path) -> None:
    (tmp_path / "died-0").write_text("200 Killed (signal 9)")
    (tmp_path / "died-2").write_text("100 exit code 1")
    (tmp_path / "died-x").write_text("50 not a rank")
    (tmp_path / "error-1").write_text("tp-run: error: rank 1: no")
    assert mpi_exec.first_death(str(tmp_path)) == "rank 2 (chip 2) died: exit code 1"


def test_under_mpiexec_the_rank_that_died_is_named_not_the_ones_it_killed(
    tmp_path: Path,
) -> None:
    mpiexec = find_mpiexec()
    assert mpiexec is not None
    # Rank 1 dies; mpiexec then kills ranks 0 and 2, and reports any one of the three.
    code = (
        "import os, signal, time; time.sleep(0.3)\n"
        "if os.environ['PMI_RANK'] == '1': os.kill(os.getpid(), signal.SIGKILL)\n"
        "time.sleep(60)"
    )
    for run in range(3):
        pids = tmp_path / str(run)
        pids.mkdir()
        command = [sys.executable, "-I", "-S", "-c", code]
        cmd = mpi_exec.guarded(3, command, str(pids), mpiexec)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0
        assert mpi_exec.first_death(str(pids)) == "rank 1 (chip 1) died: Killed (signal 9)"


def test_a_run_stopped_at_its_timeout_leaves_no_rank_behind(tmp_path: Path) -> None:
    mpiexec = find_mpiexec()
    assert mpiexec is not None
    marker = f"tp-guard-test-{os.getpid()}-{time.monotonic_ns()}"
    command = [sys.executable, "-I", "-S", "-c", f"import time; time.sleep(60)  # {marker}"]
    cmd = mpi_exec.guarded(2, command, str(tmp_path), mpiexec)
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(cmd, os.environ, 3.0)
    deadline = time.monotonic() + 30
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(marker)


def _running(marker: str) -> list[int]:
    """The live processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _alive(int(entry)):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found
