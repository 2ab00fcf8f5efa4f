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
