"""The files tp reads besides a program are read within bounds and refused in one line:
a machine or plan file larger than `MAX_JSON_BYTES` (its size checked before it is read), a
device without end, a FIFO no one writes (never waited on), a directory, a machine file
stating a field twice (as a plan stating a pattern twice)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from limits import BIN, run_limited

from tp_dialect.analysis.split.plan import PlanError, load_plan
from tp_dialect.jsonfile import MAX_JSON_BYTES
from tp_dialect.machine import MachineError, machine_from
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


# tp-run --inputs: a member is read only in the shape of the port it binds.


def _inputs_with(path: Path, program: Path, name: str, shape: tuple[int, ...], zeros: int) -> Path:
    """The program's random inputs as an .npz, plus member ``name`` whose header states
    ``shape`` (f32) followed by ``zeros`` zero bytes, deflated."""
    from numpy.lib import format as fmt

    from tp_dialect.runtime.checkpoint import random_inputs
    from tp_dialect.tools.source import parse_module
    from tp_dialect.universe import tp_context

    module = parse_module(tp_context(), program.read_text(), str(program))[0]
    buffer = io.BytesIO()
    np.savez(buffer, **{k: v for k, v in random_inputs(module, 1, 3).items() if k != name})
    path.write_bytes(buffer.getvalue())
    header = io.BytesIO()
    fmt.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open(f"{name}.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            chunk = bytes(1 << 24)
            for _ in range(zeros // len(chunk)):
                f.write(chunk)
    return path


def test_a_member_no_port_binds_is_never_decompressed(tmp_path: Path, unsharded: Path) -> None:
    """A 5 MB file holding 1 GB of zeros under a name no port binds: it was read whole (a
    MemoryError under an 800 MB address space, reported as "a damaged .npz"); now its header
    alone is read and the run goes on."""
    path = _inputs_with(tmp_path / "in.npz", unsharded, "junk", (1 << 28,), 1 << 30)
    assert path.stat().st_size < 8 << 20
    args = [str(BIN / "tp-run"), str(unsharded), "--random-weights", "0", "--inputs", str(path)]
    proc = run_limited(args, address_space=800 << 20, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"ran {unsharded}")


def test_a_member_stating_more_than_it_holds_is_refused_by_its_stated_shape(
    tmp_path: Path, unsharded: Path
) -> None:
    """Its stated 8 GB was allocated before its data was found missing."""
    path = _inputs_with(tmp_path / "in.npz", unsharded, "hidden_states", (2 * 10**9,), 0)
    args = [str(BIN / "tp-run"), str(unsharded), "--random-weights", "0", "--inputs", str(path)]
    proc = run_limited(args, address_space=800 << 20)
    assert proc.returncode == 1
    assert last_error(proc.stderr) == (
        "tp-run: error: argument 'hidden_states': expected shape [1, 64], found [2000000000]"
    )


# Outputs: the format a suffix names, a FIFO no one reads, a pipe, a full device.


@pytest.mark.parametrize(
    ("flag", "path", "says"),
    [
        ("--timeline", "chart.svg", "the chart is a PNG; name the file .png"),
        ("--timeline", "chart.txt", "the chart is a PNG; name the file .png"),
        ("--trace", "trace.png", "the trace is JSON (Chrome's trace format); name the file .json"),
        ("--report", "report.json.gz", "the report is JSON; name the file .json"),
    ],
)
def test_a_model_output_named_as_another_format_is_refused_before_the_run(
    flag: str, path: str, says: str, tmp_path: Path, unsharded: Path
) -> None:
    """``--timeline chart.svg`` wrote a PNG named chart.svg."""
    out = tmp_path / path
    code, printed, err = run(tp_run.main, unsharded, "--dry-run", flag, out)
    assert (code, printed) == (1, "")
    assert err == f"tp-run: error: {flag} '{out}': {says}\n"
    assert not out.exists()


def test_a_model_output_with_its_suffix_in_capitals_or_none_is_written(
    tmp_path: Path, unsharded: Path
) -> None:
    chart, trace = tmp_path / "CHART.PNG", tmp_path / "trace"
    code, _, err = run(tp_run.main, unsharded, "--dry-run", "--timeline", chart, "--trace", trace)
    assert code == 0, err
    assert chart.read_bytes()[:4] == b"\x89PNG" and trace.read_text().startswith("{")


def test_a_fifo_no_one_reads_is_refused_after_a_bounded_wait(
    tmp_path: Path, unsharded: Path
) -> None:
    """Opening a FIFO for writing waited for a reader, for ever."""
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    args = [str(BIN / "tp-run"), str(unsharded), "--dry-run", "--report", str(fifo)]
    proc = run_limited(args, timeout=60)
    assert proc.returncode == 1
    assert last_error(proc.stderr) == (
        f"tp-run: error: cannot write '{fifo}': no process reads this FIFO"
    )


def test_a_failed_write_to_a_device_names_the_path(unsharded: Path) -> None:
    """It was ``tp-run: error: [Errno 28] No space left on device``, naming nothing."""
    code, _, err = run(tp_run.main, unsharded, "--dry-run", "--report", "/dev/full")
    assert code == 1
    assert last_error(err) == "tp-run: error: cannot write '/dev/full': No space left on device"


def test_a_pipe_given_as_a_dev_fd_path_is_written_through(unsharded: Path) -> None:
    """``-o >(…)`` (``/dev/fd/63``) was "No such file or directory": its real path is no
    path (``pipe:[…]``)."""
    read, write = os.pipe()
    try:
        code, _, err = run(tp_run.main, unsharded, "--dry-run", "--report", f"/dev/fd/{write}")
        assert code == 0, err
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as f:
        assert json.loads(f.read())["chips"] == 1


def test_a_member_of_an_outsized_dtype_is_refused_by_its_dtype(
    tmp_path: Path, unsharded: Path
) -> None:
    """A 1 GB-an-element void dtype in the port's shape: its 64 GB were allocated."""
    from numpy.lib import format as fmt

    header = io.BytesIO()
    stated = {"descr": "|V1000000000", "fortran_order": False, "shape": (1, 64)}
    fmt.write_array_header_1_0(header, stated)
    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hidden_states.npy", header.getvalue())
    args = [str(BIN / "tp-run"), str(unsharded), "--random-weights", "0", "--inputs", str(path)]
    proc = run_limited(args, address_space=800 << 20)
    assert proc.returncode == 1
    assert last_error(proc.stderr) == (
        f"tp-run: error: cannot read inputs '{path}': 'hidden_states' holds |V1000000000, "
        "1000000000 bytes an element: an input is numbers"
    )


@pytest.mark.parametrize(
    ("read", "error", "text"),
    [
        (machine_from, MachineError, '{"max_chips": ' + "1" * 5000 + "}"),
        (load_plan, PlanError, '{"a.b": {"style": "packed_colwise", "parts": ' + "1" * 5000 + "}}"),
    ],
)
def test_a_number_of_thousands_of_digits_is_refused_by_its_length(
    read: Callable[[str], object], error: type[Exception], text: str, tmp_path: Path
) -> None:
    """Python's int() refuses more than 4300 digits with a ValueError of its own: it was an
    internal error."""
    path = tmp_path / "f.json"
    path.write_text(text)
    with pytest.raises(error) as err:
        read(str(path))
    assert str(err.value).endswith(": a whole number 5000 digits long: at most 100")


# A program on stdin: -.


def test_a_program_on_stdin_is_read_as_dash(unsharded: Path) -> None:
    """``tp-gen … | tp-run - …`` was "cannot read program '-'"."""
    text = unsharded.read_text()
    proc = subprocess.run(
        [str(BIN / "tp-run"), "-", "--random-weights", "0", "--random-inputs", "1"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ran - (1 chip(s))")
    proc = subprocess.run(
        [str(BIN / "tp-opt"), "-"], input=text, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "func.func @decode" in proc.stdout, proc.stderr
    proc = subprocess.run(
        [str(BIN / "tp-run"), "-", "--dry-run"],
        input="builtin.module { %x = }\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("stdin:1:23: error: operation name expected\n")


def test_mpi_ranks_cannot_share_stdin() -> None:
    code, out, err = run(tp_run.main, "-", "--mpi", "2", "--random-weights", "0")
    assert (code, out) == (1, "")
    assert err == "tp-run: error: --mpi: every rank reads the program: give a file, not - (stdin)\n"
