"""Progress is shown on a terminal after two seconds, and never otherwise."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from fakes import Clock, Terminal

from tp_dialect.runtime.progress import Progress, reporting, tick


def test_a_terminal_sees_progress_only_after_the_delay() -> None:
    out, clock = Terminal(), Clock()
    with reporting(out, total_ops=10, clock=clock) as progress:
        tick(loaded=500_000_000)
        clock.now = 1.9
        tick(ran=3)
        assert out.getvalue() == ""  # under two seconds: nothing
        clock.now = 2.1
        tick(ran=1)
        assert out.getvalue().endswith("tp-run: 0.50 GB loaded, 4/10 linalg ops run\x1b[K")
        clock.now = 2.2
        tick(ran=1)  # within `every` of the last line: not redrawn
        assert out.getvalue().count("\r") == 1
        assert progress.ran == 5
    assert out.getvalue().endswith("\n")  # the line is ended when the work is
    tick(ran=1)  # no progress active any more: a no-op
    assert progress.ran == 5


def test_a_pipe_or_file_sees_nothing() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, clock=clock)
    clock.now = 100.0
    progress.tick(loaded=1, ran=1)
    progress.close()
    assert out.getvalue() == ""


def test_tp_run_on_a_terminal_draws_progress_on_a_long_run(tmp_path: Path) -> None:
    """tp-run with its stderr on a pseudo-terminal and a zero delay (the test hook
    ``TP_PROGRESS_AFTER``) draws the progress line; with stderr a pipe it stays quiet."""
    program = tmp_path / "tiny.mlir"
    bin_dir = Path(sys.executable).parent
    subprocess.run(
        [bin_dir / "tp-gen", "qwen3", "--preset", "tiny", "--chips", "2", "-o", program],
        check=True,
        timeout=120,
    )
    args = [
        str(bin_dir / "tp-run"),
        str(program),
        "--random-weights",
        "0",
        "--random-inputs",
        "1",
    ]
    env = {**os.environ, "TP_PROGRESS_AFTER": "0"}
    piped = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and "linalg ops run" not in piped.stderr
    leader, follower = pty.openpty()
    try:
        run = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=follower, env=env, timeout=120)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert run.returncode == 0
    assert b"linalg ops run" in seen
