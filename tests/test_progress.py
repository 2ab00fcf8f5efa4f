"""Progress is shown on a terminal after two seconds, and never otherwise."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import pytest
from fakes import Clock, Terminal
from ir_helpers import apply, parse
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg.ops import GenericOp

from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.runtime import progress as progress_module
from tp_dialect.runtime.checkpoint import MemorySource, random_inputs, random_weights
from tp_dialect.runtime.mpi_exec import linalg_ops
from tp_dialect.runtime.progress import Progress, reporting, tick
from tp_dialect.signature import entry_function
from tp_dialect.tools import run_io, tp_gen, tp_opt


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run ``args`` with stderr on a pseudo-terminal: its exit code and all it drew there."""
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
    return run.returncode, seen


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
    returncode, seen = on_a_terminal(args, env)
    assert returncode == 0
    assert b"linalg ops run" in seen


# -- the total on outlined programs: @layer's ops run once per call -----------------------

LOWERINGS = {
    "source": "",
    "phased": "tp-relocate,tp-transfers,tp-phase",
    "programs": "tp-relocate,tp-transfers,tp-link-points",
    "relay": "tp-relocate,tp-transfers,tp-link-points,tp-relay",
}
CFG = Qwen3Config.preset("tiny", chips=2, layers=3)


def _lowered(outline: bool, stage: str) -> ModuleOp:
    module = parse(generate(CFG, outline=outline))
    if LOWERINGS[stage]:
        apply(module, LOWERINGS[stage])
    return module


def _flat_count(stage: str) -> int:
    """The generics the flat program (tp-gen without --outline) holds in its entry function,
    counted by a plain walk: a flat program calls nothing, so each runs once."""
    module = _lowered(False, stage)
    return sum(isinstance(op, GenericOp) for op in entry_function(module).walk())


@pytest.mark.parametrize("stage", sorted(LOWERINGS))
def test_the_total_counts_each_call_of_an_outlined_program(
    stage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tp-run's progress line on an outlined program: the total is the flat program's, and
    every op run is counted against it (the line once said ``118/98``)."""
    drawn: list[Progress] = []
    real = progress_module.reporting

    @contextmanager
    def on_a_terminal(_: TextIO, total_ops: int = 0) -> Iterator[Progress]:
        with real(Terminal(), total_ops, after=0.0, every=0.0) as shown:
            drawn.append(shown)
            yield shown

    monkeypatch.setattr(run_io, "reporting", on_a_terminal)
    module = _lowered(True, stage)
    source = MemorySource(random_weights(module, 0))
    run_io.execute(module, source, random_inputs(module, 1, 3))
    [shown] = drawn
    want = _flat_count(stage)
    assert shown.total_ops == want and shown.ran == want
    assert shown.stream.getvalue().endswith(f"{want}/{want} linalg ops run\x1b[K\n")


def test_each_rank_counts_its_per_chip_function_once_per_call() -> None:
    outlined, flat = _lowered(True, "programs"), _lowered(False, "programs")
    for rank in range(CFG.chips):
        assert linalg_ops(outlined, rank) == linalg_ops(flat, rank) > 0


class Ticking:
    """A clock a second later at every reading: every line is due when it is said."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _tp_opt(args: list[str], stderr: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> str:
    """tp-opt in this process with ``stderr`` as its stderr, progress timed by `Ticking`:
    what it wrote on stdout."""
    monkeypatch.setattr(tp_opt, "reporting", functools.partial(reporting, clock=Ticking()))
    monkeypatch.setenv("TP_PROGRESS_AFTER", "0")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(stderr):
        assert tp_opt.main(args) == 0
    return out.getvalue()


def test_tp_opt_says_what_it_is_doing_on_a_terminal_and_clears_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "tiny.mlir"
    assert tp_gen.main(["qwen3", "--preset", "tiny", "--chips", "2", "-o", str(program)]) == 0
    terminal, pipe = Terminal(), io.StringIO()
    args = [str(program), "--tp-relocate", "--tp-phase"]
    shown = _tp_opt(args, terminal, monkeypatch)
    assert shown == _tp_opt(args, pipe, monkeypatch)  # the output is the same
    assert pipe.getvalue() == ""  # a pipe sees no progress
    drawn = terminal.getvalue()
    assert drawn.endswith("\r\x1b[K")  # cleared before the output is written
    parts = [part.removesuffix("\x1b[K") for part in drawn.split("\r")]
    lines = [part for part in parts if part]  # (the clearing leaves nothing)
    parsing = [line for line in lines if line.startswith(f"tp-opt: parsing {program} (")]
    assert parsing and parsing[-1].endswith("%)")
    assert [line for line in lines if not line.startswith("tp-opt: parsing")] == [
        "tp-opt: verifying the input",
        "tp-opt: tp-relocate (pass 1 of 2)",
        "tp-opt: tp-phase (pass 2 of 2)",
        "tp-opt: verifying the output",
        "tp-opt: printing",
    ]


def test_tp_opt_on_a_pseudo_terminal_draws_progress_and_on_a_pipe_none(tmp_path: Path) -> None:
    program = tmp_path / "tiny.mlir"
    assert tp_gen.main(["qwen3", "--preset", "tiny", "--chips", "2", "-o", str(program)]) == 0
    args = [str(Path(sys.executable).parent / "tp-opt"), str(program), "--tp-relocate"]
    env = {**os.environ, "TP_PROGRESS_AFTER": "0"}
    piped = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and piped.stderr == ""
    returncode, seen = on_a_terminal(args, env)
    assert returncode == 0
    assert b"\rtp-opt: parsing" in seen and seen.endswith(b"\r\x1b[K")


def test_a_change_of_phase_is_drawn_at_once_a_percentage_only_when_due() -> None:
    out, clock = Terminal(), Clock()
    progress = Progress(out, after=0.0, clock=clock)
    progress.say("parsing (1%)")
    clock.now = 0.1  # within `every` of the last line
    progress.say("parsing (2%)")
    assert out.getvalue() == "\rtp-run: parsing (1%)\x1b[K"
    progress.say("tp-phase (pass 1 of 1)", force=True)
    assert out.getvalue().endswith("\rtp-run: tp-phase (pass 1 of 1)\x1b[K")
