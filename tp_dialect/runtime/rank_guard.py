"""A rank's guard: runs one MPI rank as its child and, when the rank dies, records how before
anything else can: ``python -I -S rank_guard.py DIR COMMAND...`` (mpiexec's command for each
rank under ``tp-run --mpi`` and ``tp-generate --mpi``).

Why: when a rank dies, mpiexec kills every other rank and reports *one* dead process, not
always the first (on a loaded machine it named a rank it had killed itself, about one run in
ten). The guard is mpiexec's process for its rank; it writes ``DIR/died-<rank>`` (the rank from
``PMI_RANK``, the reason as mpiexec words it, ``Killed (signal 9)``) before it ends the same way
its rank did, and mpiexec kills the other ranks only after that. A guard killed by mpiexec
takes its rank with it (``PR_SET_PDEATHSIG``) and records nothing, so the first rank to die
is the one recorded. The rank runs in a process group of its own, so a signal mpiexec sends
the guard's group (^C) reaches it once, through the guard.

Standard library only, loaded without site-packages: it adds milliseconds to a rank's start.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time

DIED_PREFIX = "died-"
"""``DIR/died-<rank>`` holds ``<monotonic ns> <reason>``: when and how that rank died."""

_FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
_PR_SET_PDEATHSIG = 1
_IGNORED_BY_PYTHON = (signal.SIGPIPE, signal.SIGXFSZ)
"""Ignored by Python at its start: restored for the rank, and before the guard re-raises."""


def _die_with_parent() -> None:
    """This process (the rank, between fork and exec) killed when its guard dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: mpiexec's own clean-up still applies
        pass


def record_death(directory: str, rank: str, reason: str) -> None:
    """``reason`` written whole to ``directory/died-<rank>`` (or nothing: never raises)."""
    path = os.path.join(directory, f"{DIED_PREFIX}{rank}")
    try:
        with open(path + ".part", "w") as f:
            f.write(f"{time.monotonic_ns()} {reason}")
        os.replace(path + ".part", path)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    """Run ``argv[1:]`` as this rank and end as it ended, recording a death in ``argv[0]``."""
    directory, command = argv[0], argv[1:]
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        _die_with_parent()
        if os.getppid() != parent:  # the guard died before the request took effect
            os._exit(1)
        try:
            os.setpgid(0, 0)  # a signal to the guard's group reaches the rank once
            for sig in _IGNORED_BY_PYTHON:
                signal.signal(sig, signal.SIG_DFL)
            os.execv(command[0], command)
        except OSError as err:
            os.write(2, f"rank guard: cannot run {command[0]}: {err.strerror}\n".encode())
        finally:
            os._exit(127)

    def forward(number: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, number)

    for sig in _FORWARDED:
        signal.signal(sig, forward)
    _, status = os.waitpid(child, 0)
    for sig in _FORWARDED:  # the rank is gone: nothing to forward to (its pid may be reused)
        signal.signal(sig, signal.SIG_IGN)
    rank = os.environ.get("PMI_RANK", "?")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        record_death(directory, rank, f"{signal.strsignal(sig)} (signal {sig})")
        # End as the rank did (mpiexec then reports the same), leaving no core of the guard's
        # own in place of the rank's.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep theirs
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        record_death(directory, rank, f"exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
