"""Progress under MPI: ``tp-run --mpi N`` draws the whole run's progress on the user's
terminal from what its ranks report, clears it at the end, and stays quiet on a pipe; a rank
under the user's own mpiexec stays quiet unless asked (``TP_PROGRESS=1``).

Every MPI run is a subprocess bounded by a timeout, and reading the pseudo-terminal is
bounded too, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import Clock, Terminal

from tp_dialect.runtime import progress
from tp_dialect.runtime.launch import find_mpiexec, run_bounded
from tp_dialect.runtime.progress import RankReport, rank_reporting, read_reports, tick, watching

BIN = Path(sys.executable).parent
TIMEOUT = 120


def test_rank_reports_are_summed_and_half_written_ones_skipped(tmp_path: Path) -> None:
    clock = Clock()
    first = RankReport(tmp_path / "0", total_ops=10, clock=clock)
    second = RankReport(tmp_path / "1", total_ops=12, clock=clock)
    assert read_reports(tmp_path) == (0, 0, 22, 2)  # made: both ranks have started
    first.tick(loaded=100, ran=1)
    assert read_reports(tmp_path) == (0, 0, 22, 2)  # within `every`: not written yet
    clock.now = 1.0
    first.tick(ran=1)
    second.tick(loaded=50)
    assert read_reports(tmp_path) == (150, 2, 22, 2)
    second.tick(ran=12)
    second.close()  # the last counters are always written
    (tmp_path / "2.tmp").write_text("7 7 7\n")  # a record being written: not read
    (tmp_path / "3").write_text("garbage\n")
    assert read_reports(tmp_path) == (150, 14, 22, 2)
    assert read_reports(tmp_path / "gone") == (0, 0, 0, 0)


def test_the_launcher_draws_the_ranks_sum_and_clears_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(progress.AFTER_ENV, "0")
    out = Terminal()
    with watching(out, tmp_path, ranks=2) as poll:
        poll()  # no rank has reported: nothing to draw
        assert out.getvalue() == ""
        (tmp_path / "0").write_text("500000000 3 10\n")
        (tmp_path / "1").write_text("250000000 4 10\n")
        poll()
    drawn = out.getvalue()
    assert "\rtp-run (2 ranks): 0.75 GB loaded, 7/20 linalg ops run\x1b[K" in drawn
    assert drawn.endswith("\r\x1b[K")  # cleared: the ranks' own output follows


def test_the_launcher_draws_nothing_on_a_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(progress.AFTER_ENV, "0")
    monkeypatch.delenv(progress.FORCE_ENV, raising=False)
    out = io.StringIO()
    (tmp_path / "0").write_text("1 1 1\n")
    with watching(out, tmp_path, ranks=1) as poll:
        poll()
    assert out.getvalue() == ""


def test_what_a_rank_reports_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the launcher's directory: a file named by the rank. Without: rank 0 draws on
    its stream only if the user sees it (a terminal, or TP_PROGRESS=1); other ranks say
    nothing."""
    monkeypatch.setenv(progress.AFTER_ENV, "0")
    monkeypatch.delenv(progress.FORCE_ENV, raising=False)
    monkeypatch.setenv(progress.DIR_ENV, str(tmp_path))
    stream = Terminal()
    with rank_reporting(1, 5, stream):
        tick(loaded=8, ran=5)
    assert (tmp_path / "1").read_text() == "8 5 5\n" and stream.getvalue() == ""
    monkeypatch.delenv(progress.DIR_ENV)
    with rank_reporting(0, 5, stream):
        tick(ran=2)
    assert "2/5 linalg ops run" in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K")
    for rank, sink in ((1, Terminal()), (0, io.StringIO())):
        with rank_reporting(rank, 5, sink):
            tick(ran=2)
        assert sink.getvalue() == ""
    monkeypatch.setenv(progress.FORCE_ENV, "1")  # the user's mpiexec: a pipe, asked for
    piped = io.StringIO()
    with rank_reporting(0, 5, piped):
        tick(ran=2)
    assert "2/5 linalg ops run" in piped.getvalue()


def test_run_bounded_polls_while_waiting_and_still_times_out() -> None:
    calls: list[float] = []
    t0 = time.monotonic()
    done = run_bounded(
        [sys.executable, "-c", "import time; time.sleep(0.6); print('ok')"],
        os.environ,
        TIMEOUT,
        lambda: calls.append(time.monotonic()),
        every=0.1,
    )
    assert done.returncode == 0 and done.stdout == "ok\n"
    assert len(calls) >= 2  # polled while it ran
    assert time.monotonic() - t0 < 30  # ended when it did, not at a late poll
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            os.environ,
            0.5,
            lambda: None,
            every=0.1,
        )


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, bytes]:
    """``args`` run with stderr on a pseudo-terminal: exit code, stdout, what the terminal
    showed. Bounded by TIMEOUT both ways: the process and the reading."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=follower, env=env, start_new_session=True
        )
        os.close(follower)
        follower = -1
        seen = b""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    return proc.returncode, out.decode(), seen


@pytest.fixture(scope="module")
def tiny_two_chips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    program = tmp_path_factory.mktemp("progress") / "tiny.mlir"
    subprocess.run(
        [BIN / "tp-gen", "qwen3", "--preset", "tiny", "--chips", "2", "-o", program],
        check=True,
        timeout=TIMEOUT,
    )
    return program


def test_tp_run_mpi_draws_progress_on_a_terminal_and_clears_it(tiny_two_chips: Path) -> None:
    """The launcher's stderr a pseudo-terminal, zero delay: the line (both ranks' ops
    summed, 29 each) is drawn and cleared before the ranks' own lines."""
    env = {**os.environ, progress.AFTER_ENV: "0"}
    env.pop(progress.FORCE_ENV, None)
    args = [str(BIN / "tp-run"), str(tiny_two_chips), "--mpi", "2"]
    code, out, seen = _on_a_terminal([*args, "--random-weights", "0", "--random-inputs", "1"], env)
    assert code == 0, seen.decode(errors="replace")
    assert "on 2 MPI rank(s)" in out
    text = seen.decode()
    assert "\rtp-run (2 ranks): " in text and "58/58 linalg ops run" in text
    drawn, _, after = text.rpartition("linalg ops run\x1b[K")
    assert after.startswith("\r\x1b[K")  # cleared before anything else is said
    assert "tp-run: lowering" in after  # the ranks' lines, each on a line of its own


def test_tp_run_mpi_is_quiet_on_a_pipe(tiny_two_chips: Path) -> None:
    env = {**os.environ, progress.AFTER_ENV: "0"}
    env.pop(progress.FORCE_ENV, None)
    proc = subprocess.run(
        [str(BIN / "tp-run"), str(tiny_two_chips), "--mpi", "2"]
        + ["--random-weights", "0", "--random-inputs", "1"],
        capture_output=True,  # bytes: text mode would read a \r as a line end
        env=env,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"\r" not in proc.stderr and b"linalg ops run" not in proc.stderr


def test_under_your_own_mpiexec_a_pipe_is_quiet_unless_asked(tiny_two_chips: Path) -> None:
    """mpiexec gives its ranks a pipe, never a terminal: rank 0 draws only with
    TP_PROGRESS=1, and hydra passes its line rewritten in place through as it is."""
    mpiexec = find_mpiexec()
    assert mpiexec is not None, "the mpich wheel's mpiexec is a test dependency"
    args = [mpiexec, "-n", "2", str(BIN / "tp-run"), str(tiny_two_chips), "--backend", "mpi"]
    args += ["--random-weights", "0", "--random-inputs", "1"]
    env = {**os.environ, progress.AFTER_ENV: "0"}
    env.pop(progress.FORCE_ENV, None)
    quiet = subprocess.run(args, capture_output=True, env=env, timeout=TIMEOUT)
    assert quiet.returncode == 0, quiet.stderr
    assert b"\r" not in quiet.stderr and b"linalg ops run" not in quiet.stderr
    asked = subprocess.run(  # bytes: text mode would read each \r as a line end
        args, capture_output=True, env={**env, progress.FORCE_ENV: "1"}, timeout=TIMEOUT
    )
    said = asked.stderr.decode()
    assert asked.returncode == 0, said
    assert "\rtp-run: " in said and "/29 linalg ops run" in said
    assert said.endswith("\r\x1b[K")  # cleared at the end
