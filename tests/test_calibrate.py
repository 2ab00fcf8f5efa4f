"""The ``local`` machine calibration: measured figures, the machine file (``tp-calibrate``) and
its MPI side."""

from __future__ import annotations

import json
import math
import stat
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.machine import Machine, machine_from
from tp_dialect.runtime.calibrate import (
    CalibrationError,
    local_machine,
    measure_interpreter,
    measure_local,
    measure_pingpong,
    measure_stream,
)
from tp_dialect.tools import tp_calibrate as cli
from tp_dialect.tools import tp_run

ROOT = Path(__file__).resolve().parents[1]

# Tiny sizes: every measurement in well under a second.
TINY = {
    "memory_bytes": 1 << 20,
    "matvec_k": 64,
    "matvec_n": 64,
    "matmul_side": 32,
    "message_bytes": 1 << 12,
    "iters": 5,
    "stream_shape": (64, 256),
    "touch_bytes": 1 << 16,
    "repeat": 2,
    "timeout": 60.0,
}
TINY_ARGS = [
    "--memory-mb=1",
    "--matvec=64",
    "--matmul=32",
    "--message-mb=0.01",
    "--repeat=2",
    "--timeout=60",
    "--touch-mb=0.0625",
]


@pytest.fixture(scope="module")
def figures() -> dict[str, float]:
    return measure_local(**TINY)


def test_every_figure_is_positive_and_finite(figures: dict[str, float]) -> None:
    assert figures
    for key, value in figures.items():
        assert math.isfinite(value) and value > 0, key
    assert "interpreter_op_overhead" in figures


def test_machine_file_has_only_machine_fields(figures: dict[str, float]) -> None:
    machine = local_machine(figures)
    assert set(machine) <= {f.name for f in fields(Machine)} | {"base"}
    assert machine["name"] == "local" and machine["topology"] == "all-to-all"
    assert "interpreter_op_overhead" not in machine
    assert machine["op_overhead"] == figures["interpreter_op_overhead"]
    assert machine["first_touch_bandwidth"] == figures["first_touch_bandwidth"]


def test_cli_writes_a_file_machine_from_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "local.json"
    assert cli.main(["-o", str(out), *TINY_ARGS]) == 0
    assert "interpreter per op" in capsys.readouterr().out
    machine = machine_from(str(out))
    assert machine.name == "local" and machine.topology == "all-to-all"
    assert machine.max_chips >= 1
    for f in fields(Machine):
        value = getattr(machine, f.name)
        if isinstance(value, float):
            assert math.isfinite(value) and value > 0, f.name
    assert set(json.loads(out.read_text())) == {f.name for f in fields(Machine)} | {"base"}
    assert [p.name for p in tmp_path.iterdir()] == ["local.json"]  # no temporary left


@pytest.mark.parametrize(
    "command",
    [
        [str(Path(sys.executable).parent / "tp-calibrate")],
        [sys.executable, "-m", "benchmarks.calibrate"],
    ],
    ids=["installed", "benchmarks"],
)
def test_cli_runs_installed_and_as_the_benchmarks_module(
    tmp_path: Path, command: list[str]
) -> None:
    """The console script a plain install has, and ``python -m benchmarks.calibrate`` (make
    bench's habit) running it."""
    out = tmp_path / "local.json"
    done = subprocess.run(
        [*command, "-o", str(out), *TINY_ARGS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "interpreter per op" in done.stdout
    assert machine_from(str(out)).name == "local"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--repeat", "0"], "argument --repeat: 0 must be a finite number at least 1"),
        (["--ranks=two"], "argument --ranks: not a number: 'two'"),
        (["--repet", "2"], "unknown flag --repet (did you mean --repeat?)"),
        (["extra"], "unexpected argument extra"),
    ],
)
def test_bad_arguments_are_one_line_before_any_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    out = tmp_path / "local.json"
    assert cli.main(["-o", str(out), *args]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"tp-calibrate: error: {says}\n"
    assert captured.out == "" and not out.exists()


def test_an_unwritable_output_is_refused_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing-folder" / "local.json"
    assert cli.main(["-o", str(out), *TINY_ARGS]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("tp-calibrate: error: ") and captured.err.count("\n") == 1
    assert captured.out == ""  # no figure was measured


def test_tp_run_dry_run_on_the_local_machine(
    figures: dict[str, float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = tmp_path / "local.json"
    machine.write_text(json.dumps(local_machine(figures)))
    program = tmp_path / "tiny.mlir"
    program.write_text(generate(Qwen3Config.preset("tiny", layers=1, chips=2)))
    assert tp_run.main([str(program), "--dry-run", "--machine", str(machine)]) == 0
    assert "x local" in capsys.readouterr().out


def test_pingpong_runs() -> None:
    link = measure_pingpong(large=1 << 12, iters=5, timeout=60.0)
    assert set(link) == {"latency", "bandwidth", "barrier"}
    assert all(math.isfinite(v) and v > 0 for v in link.values())


def _one_line(err: CalibrationError) -> str:
    text = str(err)
    assert text and "\n" not in text
    return text


def test_missing_mpiexec_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError) as err:
        measure_pingpong(mpiexec=str(tmp_path / "no-mpiexec"), timeout=10.0)
    assert "MPI unavailable" in _one_line(err.value)


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_failing_mpiexec_is_a_one_line_error(tmp_path: Path) -> None:
    exe = _script(tmp_path / "mpiexec", "echo 'first line' >&2; echo 'no MPI here' >&2; exit 3")
    with pytest.raises(CalibrationError) as err:
        measure_pingpong(mpiexec=exe, timeout=10.0)
    assert "no MPI here" in _one_line(err.value)


def test_hanging_mpiexec_times_out(tmp_path: Path) -> None:
    exe = _script(tmp_path / "mpiexec", "exec sleep 30")
    with pytest.raises(CalibrationError) as err:
        measure_pingpong(mpiexec=exe, timeout=0.5)
    assert "timed out" in _one_line(err.value)


def test_cli_reports_missing_mpi_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "local.json"
    code = cli.main(["-o", str(out), "--mpiexec", str(tmp_path / "none"), *TINY_ARGS])
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MPI unavailable" in err
    assert not out.exists()


def test_ranks_streaming_at_once_each_report_a_rate(tmp_path: Path) -> None:
    """One and two ranks streaming a weight at once each give a positive finite rate, and a
    first-touch rate (how they compare depends on the load of the machine, so it is not
    asserted); no launcher is a one-line CalibrationError."""
    for ranks in (1, 2):
        rates = measure_stream(ranks, k=256, n=4096, repeat=3, touch_bytes=1 << 16)
        assert set(rates) == {"bandwidth", "first_touch"}
        assert all(0 < r and math.isfinite(r) for r in rates.values()), ranks
    with pytest.raises(CalibrationError, match="MPI unavailable: no mpiexec at"):
        measure_stream(2, mpiexec=str(tmp_path / "nope"), k=8, n=8, repeat=1)


def test_the_interpreter_is_timed_on_a_first_step_less_its_roofline() -> None:
    """A first step makes every op's plan: it costs more per op than the same step run
    again. The figure is time besides the roofline on the machine given, so a slower
    machine (more roofline) leaves less per op, never below zero."""
    sn40l = machine_from("sn40l")
    fast = measure_interpreter(sn40l, repeat=1)
    assert fast["ops"] > 50 and fast["per_op"] > 0
    assert fast["per_op"] * fast["ops"] <= fast["step_seconds"]
    slow = replace(sn40l, hbm_bandwidth=1.0, peak_flops=1.0)  # the roofline is all of it
    assert measure_interpreter(slow, repeat=1)["per_op"] == pytest.approx(1e-9 / fast["ops"])
