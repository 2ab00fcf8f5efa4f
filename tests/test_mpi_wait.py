"""A rank waiting on MPI does not hold a core (`tp_dialect.runtime.mpi_wait`): MPICH's own
blocking receive polls at full speed, so a rank blocked 2 s in it uses ~2 s of CPU; through
`mpi_wait` it sleeps between polls. The messages are the same either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RANKS = """
import resource, sys, time
import numpy as np
from mpi4py import MPI
from tp_dialect.runtime import mpi_wait
comm = MPI.COMM_WORLD
if comm.Get_rank() == 0:
    time.sleep(2.0)
    comm.Send(np.arange(4.0), dest=1, tag=7)
    comm.send({"k": 3}, dest=1, tag=8)
    mpi_wait.barrier(comm)
else:
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    buf = np.empty(4)
    mpi_wait.arrived(comm, 0, 7)
    comm.Recv(buf, source=0, tag=7)
    mpi_wait.arrived(comm, 0, 8)
    obj = comm.recv(source=0, tag=8)
    mpi_wait.barrier(comm)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
    print(buf.tolist(), obj, f"{cpu:.3f}", flush=True)
"""


def _waiting_rank(tmp_path: Path, spin: str) -> tuple[str, float]:
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {**os.environ, "TP_MPI_SPIN": spin}
    done = subprocess.run(
        [str(mpiexec), "-n", "2", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    *said, cpu = done.stdout.split()
    return " ".join(said), float(cpu)


@pytest.mark.parametrize("spin", ["0", "1"])
def test_a_waiting_rank_sleeps_unless_spinning_is_asked(tmp_path: Path, spin: str) -> None:
    said, cpu = _waiting_rank(tmp_path, spin)
    assert said == "[0.0, 1.0, 2.0, 3.0] {'k': 3}"
    if spin == "0":  # sleeping between polls: well under the 2 s it waited (MPI's own
        assert cpu < 0.5, cpu  # wait used 1.3-3 s here, by how busy the cores were)


MEET = """
from mpi4py import MPI
from tp_dialect.runtime import mpi_wait
mpi_wait.barrier(MPI.COMM_WORLD)
print("met", flush=True)
"""


def test_ranks_waiting_in_different_modes_still_meet(tmp_path: Path) -> None:
    """One rank spinning, one sleeping: both post a non-blocking barrier (MPI never matches a
    blocking ``Barrier`` with an ``Ibarrier``, so a mixed world would hang)."""
    script = tmp_path / "meet.py"
    script.write_text(MEET)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    rank = [sys.executable, str(script)]
    done = subprocess.run(
        [str(mpiexec), "-n", "1", "-env", "TP_MPI_SPIN", "1", *rank, ":"]
        + ["-n", "1", "-env", "TP_MPI_SPIN", "0", *rank],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("met") == 2  # the ranks' lines may interleave


def test_a_recorded_error_is_whole_or_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rank's error file is written aside and renamed (another rank's abort may end it
    mid-write); an empty one, left by an older writer, is not taken for the error."""
    from tp_dialect.runtime import mpi_exec

    monkeypatch.setenv(mpi_exec.PID_DIR_ENV, str(tmp_path))
    mpi_exec.record_error(2, "tp-run: error: rank 2 (chip 2): it broke")
    (tmp_path / "error-1").write_text("")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["error-1", "error-2"]
    assert mpi_exec.recorded_errors(str(tmp_path)) == ["tp-run: error: rank 2 (chip 2): it broke"]
    monkeypatch.setenv(mpi_exec.PID_DIR_ENV, str(tmp_path / "gone"))  # the abort must follow
    mpi_exec.record_error(3, "tp-run: error: rank 3 (chip 3): no folder for the file")
