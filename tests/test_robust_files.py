"""The files tp reads besides a program are read within bounds and refused in one line:
a machine or plan file larger than `MAX_JSON_BYTES` (its size checked before it is read), a
device without end, a FIFO no one writes (never waited on), a directory, a machine file
stating a field twice (as a plan stating a pattern twice)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from limits import BIN, run_limited

from tp_dialect.analysis.machine import MachineError, machine_from
from tp_dialect.analysis.plan import PlanError, load_plan
from tp_dialect.jsonfile import MAX_JSON_BYTES
from tp_dialect.tools import tp_gen, tp_run

TOO_LARGE = f"larger than 1 MiB: tp reads machine and plan files of at most {MAX_JSON_BYTES} bytes"


def run(main: Callable[[Sequence[str] | None], int], *args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def last_error(stderr: str) -> str:
    """The last line of ``stderr`` (warnings and notes come before the error)."""
    return stderr.splitlines()[-1]


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("files") / "tiny.mlir"
    code, _, err = run(tp_gen.main, "qwen3", "--preset", "tiny", "--unsharded", "-o", path)
    assert code == 0, err
    return path


# Machine and plan files.


def test_a_machine_file_stating_a_field_twice_is_refused_by_name(
    tmp_path: Path, unsharded: Path
) -> None:
    """JSON kept the last of the two, silently (a plan already refused this)."""
    path = tmp_path / "m.json"
    path.write_text('{"base": "sn40l", "link_latency": 1e-6,\n "link_latency": 2e-6}\n')
    message = f"machine file '{path}': 'link_latency' is given twice: state each field once"
    with pytest.raises(MachineError) as err:
        machine_from(str(path))
    assert str(err.value) == message
    code, _, printed = run(tp_run.main, unsharded, "--dry-run", "--machine", path)
    assert code == 1 and last_error(printed) == f"tp-run: error: {message}"


@pytest.mark.parametrize("kind", ["machine", "plan"])
def test_a_file_over_the_bound_is_refused_by_its_size_before_it_is_read(
    kind: str, tmp_path: Path, unsharded: Path
) -> None:
    """A sparse 3 GB file: it was read whole (a MemoryError under the 2 GB limit)."""
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(3 << 30)
    if kind == "machine":
        args = [str(BIN / "tp-run"), str(unsharded), "--dry-run", "--machine", str(big)]
        says = f"tp-run: error: cannot read machine file '{big}': {TOO_LARGE}"
    else:
        args = [str(BIN / "tp-opt"), str(unsharded), f"--tp-split=plan={big} chips=2"]
        says = f"{unsharded}: error: tp-split: cannot read plan '{big}': {TOO_LARGE}"
    proc = run_limited(args)
    assert proc.returncode == 1
    assert last_error(proc.stderr) == says


def test_a_file_at_the_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    body = '{"link_latency": 1e-6}'
    path.write_text(body + " " * (MAX_JSON_BYTES - len(body)))
    assert machine_from(str(path)).link_latency == 1e-6
    path.write_text(body + " " * (MAX_JSON_BYTES - len(body) + 1))
    with pytest.raises(MachineError, match="larger than 1 MiB"):
        machine_from(str(path))


@pytest.mark.parametrize(
    ("read", "error", "what"),
    [(machine_from, MachineError, "machine file"), (load_plan, PlanError, "plan")],
)
def test_a_device_without_end_is_read_no_further_than_the_bound(
    read: Callable[[str], object], error: type[Exception], what: str
) -> None:
    """``/dev/zero`` was "no machine" / "no plan file": it exists; it is too large."""
    with pytest.raises(error) as err:
        read("/dev/zero")
    assert str(err.value) == f"cannot read {what} '/dev/zero': {TOO_LARGE}"


@pytest.mark.parametrize(
    ("read", "error", "what"),
    [(machine_from, MachineError, "machine file"), (load_plan, PlanError, "plan")],
)
def test_a_directory_is_named_as_one(
    read: Callable[[str], object], error: type[Exception], what: str, tmp_path: Path
) -> None:
    with pytest.raises(error) as err:
        read(str(tmp_path))
    assert str(err.value).startswith(f"cannot read {what} '{tmp_path}': a directory")


@pytest.mark.parametrize("kind", ["machine", "plan"])
def test_a_fifo_no_one_writes_is_refused_without_waiting(
    kind: str, tmp_path: Path, unsharded: Path
) -> None:
    """Opening a FIFO for reading waits for a writer: opened without waiting, in a child
    process with a time limit."""
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    if kind == "machine":
        args = [str(BIN / "tp-run"), str(unsharded), "--dry-run", "--machine", str(fifo)]
        says = f"tp-run: error: cannot read machine file '{fifo}': "
    else:
        args = [str(BIN / "tp-opt"), str(unsharded), f"--tp-split=plan={fifo} chips=2"]
        says = f"{unsharded}: error: tp-split: cannot read plan '{fifo}': "
    proc = run_limited(args, timeout=60)
    assert proc.returncode == 1
    assert last_error(proc.stderr) == says + "nothing to read (a FIFO no one writes?)"


def test_a_machine_file_on_a_pipe_is_read(unsharded: Path) -> None:
    """``--machine /dev/stdin`` (or ``<(...)``) was refused as "no machine": a pipe is read,
    within the bound."""
    proc = subprocess.run(
        [str(BIN / "tp-run"), str(unsharded), "--dry-run", "--machine", "/dev/stdin"],
        input='{"base": "generic", "link_latency": 1e-6}',
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "on 1 x generic" in proc.stdout


# tp-run --inputs: a regular file only, as --weights.


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (lambda tmp: tmp, "a directory; give an .npz file"),
        (lambda tmp: Path("/dev/zero"), "not a regular file; give an .npz file"),
        (lambda tmp: Path("/dev/null"), "not a regular file; give an .npz file"),
    ],
)
def test_inputs_that_are_not_a_regular_file_are_named(
    path: Callable[[Path], Path], says: str, tmp_path: Path, unsharded: Path
) -> None:
    given = path(tmp_path)
    code, out, err = run(tp_run.main, unsharded, "--random-weights", 0, "--inputs", given)
    assert (code, out) == (1, "")
    assert last_error(err) == f"tp-run: error: cannot read inputs '{given}': {says}"


def test_a_fifo_for_inputs_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, unsharded: Path
) -> None:
    """np.load opened it and waited for a writer, for ever."""
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    args = [str(BIN / "tp-run"), str(unsharded), "--random-weights", "0", "--inputs", str(fifo)]
    proc = run_limited(args, timeout=60)
    assert proc.returncode == 1
    assert last_error(proc.stderr) == (
        f"tp-run: error: cannot read inputs '{fifo}': not a regular file; give an .npz file"
    )
