"""Outputs written whole: a regular file is replaced atomically, anything else written through.

A tool's output path is usually a regular file, and a reader must never see half of one: it
is written aside and renamed over the path. But a path may also name a device (``-o
/dev/null``), a FIFO or a terminal; renaming a regular file over those would replace them for
every process on the machine, so they are opened and written like ``>`` in a shell. A symlink
is followed: its target is what is replaced or written through, and the link stays a link.

An input of data (a checkpoint, an ``.npz``) is read only from a regular file: it is checked
by its status, never opened, since opening a FIFO waits for a writer (`not_regular`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


class OutputError(OSError):
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
    nothing there yet, to be created as a regular file)."""
    target = os.path.realpath(os.fspath(path))
    try:
        return target, os.stat(target)
    except FileNotFoundError:
        return target, None


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
        with open(target, "wb" if binary else "w") as f:  # never replaced: written through
            f.write(data)
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
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)
        raise


def _umask() -> int:
    """The process's umask (read by setting it: there is no getter; restored at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
