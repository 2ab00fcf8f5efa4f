"""Waiting on MPI without holding a core.

MPICH's blocking calls (``Recv``, ``Waitall``, ``Barrier``, ``bcast``) wait by polling at
full speed: a rank waiting for another burns a whole core (measured: a rank blocked 3 s in
``recv`` used 3.0 s of CPU; MPICH's ``MPIR_CVAR_ENABLE_HEAVY_YIELD`` and
``MPIR_CVAR_POLLS_BEFORE_YIELD`` changed nothing). tp's ranks usually share one host's cores
— four chips on a two-core laptop — so a waiting rank took the core the rank it waited for
needed. Here a wait polls MPI's non-blocking form (``Testall``, ``Iprobe``, ``Ibarrier``)
and sleeps between polls, from 20 µs doubling up to `LONGEST`: a wait ends at most that much
after its message came. ``TP_MPI_SPIN=1`` restores MPI's own blocking waits (for ranks on
cores of their own, where polling costs nothing and every microsecond counts); the barriers
that let a rank sleep before a broadcast or a gather stay in both modes, and are non-blocking
barriers in both (MPI never matches ``Barrier`` with ``Ibarrier``), so ranks launched with
different settings still meet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

SPIN_ENV = "TP_MPI_SPIN"
FIRST = 2e-5
"""The first sleep between polls (s)."""
LONGEST = 5e-4
"""The longest sleep between polls (s): how late a wait may end after its message came."""


def spinning() -> bool:
    """Whether MPI's own blocking waits were asked for (``TP_MPI_SPIN`` set, not 0)."""
    return os.environ.get(SPIN_ENV, "0") not in ("", "0")


def poll(done: Callable[[], bool]) -> None:
    """Return once ``done()`` is true, sleeping between calls (20 µs doubling to `LONGEST`)."""
    delay = FIRST
    while not done():
        time.sleep(delay)
        delay = min(2 * delay, LONGEST)


def settle(mpi: Any, requests: Sequence[Any]) -> None:
    """Every request in ``requests`` (mpi4py's) complete."""
    if spinning():
        mpi.Request.Waitall(list(requests))
    else:
        pending = list(requests)
        poll(lambda: bool(mpi.Request.Testall(pending)))


def barrier(comm: Any) -> None:
    """``comm``'s barrier: every rank has come to it."""
    if spinning():
        comm.Ibarrier().Wait()
    else:
        request = comm.Ibarrier()
        poll(lambda: bool(request.Test()))


def arrived(comm: Any, source: int, tag: int) -> None:
    """Return once a message from ``source`` with ``tag`` has begun to arrive. The blocking
    receive that follows takes that message; a large one (or pickle-5's data parts after
    their header) may still keep it waiting, at MPI's full speed, while the data moves."""
    if not spinning():
        poll(lambda: bool(comm.Iprobe(source=source, tag=tag)))
