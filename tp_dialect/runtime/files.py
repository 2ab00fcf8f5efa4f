"""Outputs written whole: a regular file is replaced atomically, anything else written through.

A tool's output path is usually a regular file, and a reader must never see half of one: it
is written aside and renamed over the path. But a path may also name a device (``-o
/dev/null``), a FIFO or a terminal; renaming a regular file over those would replace them for
every process on the machine, so they are opened and written like ``>`` in a shell. A symlink
is followed: its target is what is replaced or written through, and the link stays a link.
A FIFO no process reads within 5 seconds is refused rather than waited on for ever, and a
failed write (a full disk) names the user's path.

An input of data (a checkpoint, an ``.npz``) is read only from a regular file: it is checked
by its status, never opened, since opening a FIFO waits for a writer (`not_regular`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import time

from tp_dialect.errors import TpError


class OutputError(OSError, TpError):
    """An output path that cannot be written; the message names the user's path."""


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a regular file — ``a directory`` or ``not a regular file`` (a
    device, a FIFO, a socket) — or None, from its status alone (a FIFO is never opened).
    Raises OSError when there is nothing to examine."""
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        return "a directory"
    return None if stat.S_ISREG(mode) else "not a regular file"


def output_target(path: str | os.PathLike[str]) -> tuple[str, os.stat_result | None]:
    """What writing ``path`` writes: the path a symlink chain ends at, and its status (None:
    nothing there yet, to be created as a regular file). A device, FIFO or pipe is written
    through the path as given: ``/dev/fd/63`` (a shell's ``>(…)``) resolves to no path."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode) and not stat.S_ISDIR(status.st_mode):
        return os.fspath(path), status
    target = os.path.realpath(os.fspath(path))
    return target, status


def check_output(path: str | os.PathLike[str]) -> None:
    """Raise OutputError, before any work, when ``path`` cannot be written: a directory, a
    missing or read-only directory for a new or regular file, or an existing non-regular file
    (a device, a FIFO) that is not writable."""
    target, status = output_target(path)
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OutputError(f"cannot write '{os.fspath(path)}': it is a directory")
    if status is not None and not stat.S_ISREG(status.st_mode):
        if not os.access(target, os.W_OK):
            raise OutputError(f"cannot write '{os.fspath(path)}': permission denied")
        return
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write '{os.fspath(path)}': no directory '{directory}'")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write '{os.fspath(path)}': directory '{directory}' is not writable"
        )


def write_whole(path: str | os.PathLike[str], data: str | bytes) -> None:
    """``path`` holds ``data``: a regular file (or a new one) is replaced whole, or left as it
    was on any failure (no temporary file left behind); a device, FIFO or socket is written
    through and stays what it is. A new file's mode follows the umask; a replaced one keeps
    its own."""
    target, status = output_target(path)
    binary = isinstance(data, bytes)
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OutputError(f"cannot write '{os.fspath(path)}': it is a directory")
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_through(path, target, data)
        return
    mode = stat.S_IMODE(status.st_mode) if status is not None else 0o666 & ~_umask()
    try:
        fd, aside = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tp-", suffix=".tmp")
    except OSError as err:  # the directory: say the user's path, not the temporary one
        raise OutputError(f"cannot write '{os.fspath(path)}': {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(aside, mode)
        os.replace(aside, target)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)
        if isinstance(err, OSError):  # a full disk, say: the user's path, not the aside
            why = err.strerror or str(err)
            raise OutputError(f"cannot write '{os.fspath(path)}': {why}") from None
        raise


FIFO_WAIT = 5.0
"""Seconds a FIFO output is waited on for a reader before it is refused."""


def _write_through(path: str | os.PathLike[str], target: str, data: str | bytes) -> None:
    """``data`` written into the device, FIFO or socket ``target`` (never replaced). A FIFO
    no process opens for reading within `FIFO_WAIT` seconds is refused (opening it would
    wait for ever)."""
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as err:
            if err.errno == errno.ENXIO and time.monotonic() < deadline:
                time.sleep(0.05)  # a FIFO whose reader is not there yet
                continue
            why = "no process reads this FIFO" if err.errno == errno.ENXIO else err.strerror
            raise OutputError(f"cannot write '{os.fspath(path)}': {why}") from None
    os.set_blocking(fd, True)  # a reader: it takes the data as it can
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as err:  # /dev/full, a reader gone
        raise OutputError(f"cannot write '{os.fspath(path)}': {err.strerror}") from None


def _umask() -> int:
    """The process's umask (read by setting it: there is no getter; restored at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
