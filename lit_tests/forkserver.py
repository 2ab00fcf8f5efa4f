"""A fork server for the lit suite: tp's tools start in milliseconds instead of a second.

Every RUN line starts tp-opt (or tp-gen, tp-run) and FileCheck as new Python processes, and a
new Python spends ~1 s importing xDSL, numpy and tp before it reads its input: 90% of the lit
suite's time. `start` launches one server that imports them once; the commands lit finds on
its PATH are then small clients (`-I -S` Pythons, ~20 ms) that hand the server their
arguments, working directory, environment and standard streams. The server forks a child per
command, which runs the same ``main`` the installed script runs on those streams and sends
back its exit code. Nothing but the imports is shared: the server runs nothing else, so each
child starts as a fresh process would after its imports. ``TP_LIT_FORK=0`` runs the installed
scripts instead (tests/test_lit_forkserver.py checks both give the same output and codes).

The server lives as long as the lit run: it stops when the pipe lit holds on its stdin closes.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

TOOLS = ("tp-opt", "tp-gen", "tp-run", "filecheck")
"""The commands the server runs: installed scripts, whose entry points it calls."""

CLIENT = """#!{python} -IS
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect({socket!r})
socket.send_fds(s, [b"x"], [0, 1, 2])
head = json.dumps([{name!r}, sys.argv[1:], os.getcwd(), dict(os.environ)]).encode()
s.sendall(len(head).to_bytes(8, "big") + head)
code = b""
while len(code) < 4 and (part := s.recv(4 - len(code))):
    code += part
if len(code) < 4:
    sys.stderr.write("{name}: the lit fork server's child ended without an exit code\\n")
    sys.exit(1)
sys.exit(int.from_bytes(code, "big", signed=True))
"""
"""A command on lit's PATH: its streams and arguments to the server, its exit code back."""


_RUNNING: list[subprocess.Popen[bytes]] = []
"""The server this process started: held so its stdin stays open while this process lives."""


def start(python: str) -> str | None:
    """The folder of a running server's clients (to put first on PATH), or ``None`` when the
    server could not start (lit then runs the installed scripts)."""
    folder = tempfile.mkdtemp(prefix="tp-lit-")
    path = os.path.join(folder, "server.sock")
    server = subprocess.Popen(
        [python, __file__, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert server.stdout is not None
    if server.stdout.readline() != b"ready\n":  # the imports failed: the tools would too
        server.kill()
        shutil.rmtree(folder, ignore_errors=True)
        return None
    for name in TOOLS:
        client = Path(folder) / name
        client.write_text(CLIENT.format(python=python, socket=path, name=name))
        client.chmod(0o755)
    _RUNNING.append(server)
    return folder


def _mains() -> dict[str, Callable[[], object]]:
    """Each tool's console-script entry point, loaded (the one cost the server pays once);
    called with no arguments it reads ``sys.argv``, as the installed script calls it."""
    return {
        name: next(iter(entry_points(group="console_scripts", name=name))).load() for name in TOOLS
    }


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = conn.recv(n - len(data))
        if not part:
            raise EOFError("the client left")
        data += part
    return data


def _exit_code(code: object) -> int:
    """What Python's exit makes of ``main``'s return or ``SystemExit``'s code."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _fresh_stdio() -> None:
    """Standard streams made anew on descriptors 0-2, as a starting Python makes them: the
    server's were made for its own pipes (seekable, buffering and terminal state differ)."""
    encoding = sys.stdout.encoding
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        open(0, "rb", closefd=False), encoding=encoding, errors=sys.stdin.errors
    )
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        open(1, "wb", closefd=False),
        encoding=encoding,
        errors=sys.stdout.errors,
        line_buffering=os.isatty(1),
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        open(2, "wb", closefd=False),
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=True,
    )


def _child(conn: socket.socket, mains: dict[str, Callable[[], object]]) -> None:
    """Runs one command as its own process would, then ends this process."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
    name, argv, cwd, env = json.loads(_read(conn, int.from_bytes(_read(conn, 8), "big")))
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    _fresh_stdio()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [name, *argv]
    try:
        code = _exit_code(mains[name]())
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    conn.sendall(code.to_bytes(4, "big", signed=True))
    os._exit(code & 0xFF)


def serve(path: str) -> None:
    """Forks a child per connection on ``path`` until stdin closes."""
    mains = _mains()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin], [], [])
            while True:  # reap the children that ended
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        break
                except ChildProcessError:
                    break
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
                return
            if listener in ready:
                conn, _ = listener.accept()
                if os.fork() == 0:
                    try:  # never back into this loop: a child that failed is one more server
                        listener.close()
                        _child(conn, mains)
                    finally:
                        os._exit(1)
                conn.close()
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


if __name__ == "__main__":
    serve(sys.argv[1])
