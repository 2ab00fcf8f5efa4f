"""Per-chip programs on real MPI ranks (rank c = chip c): the single-process interpreter's
results, bitwise for fold, oneshot and ring (whose rotated folds are the source's sums to f32
rounding); and every fault one line, exit 1, no hang, no output.

Each MPI run is a subprocess bounded by a timeout; they are few and small (mpiexec takes a
fraction of a second to start, and the machine may have two cores for four ranks).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import program, tiny
from ir_helpers import apply
from safetensors.numpy import save_file

from tp_dialect.frontend.qwen3 import generate
from tp_dialect.runtime import mpi_exec
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs, random_weights
from tp_dialect.runtime.mpi_exec import TEST_EXIT_ENV
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools import run_mpi
from tp_dialect.tools.run_mpi import rank_lines
from tp_dialect.tools.source import load_program
from tp_dialect.tools.tp_run import main as tp_run_main
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
MLP = Path(__file__).resolve().parent.parent / "examples" / "megatron_mlp.mlir"
TIMEOUT = 120


def tp_run(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "tp-run"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=None if env is None else {**os.environ, **env},
    )


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [
        ln
        for ln in proc.stderr.splitlines()
        if not ln.startswith(("tp-run: warning", "tp-run: lowering"))
    ]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def qwen3_files(tmp_path: Path, chips: int) -> tuple[Path, Path, Path, dict[str, np.ndarray]]:
    """The tiny 2-layer source program for ``chips``, its checkpoint and inputs files."""
    cfg = tiny(chips=chips, layers=2)
    module = program(cfg)
    src = tmp_path / "src.mlir"
    src.write_text(generate(cfg))
    weights = random_weights(module, 1)
    ckpt, inputs = tmp_path / "w.safetensors", tmp_path / "in.npz"
    save_file(weights, str(ckpt))
    np.savez(inputs, **random_inputs(module, 2, 3))
    return src, ckpt, inputs, weights


def interpreted(
    src: Path, weights: dict[str, np.ndarray], inputs: Path, spec: str
) -> dict[str, np.ndarray]:
    """The single-process interpreter's results of ``src`` lowered by ``spec``."""
    module = load_program(tp_context(), str(src))
    apply(module, spec)
    with np.load(inputs) as data:
        given = {k: data[k] for k in data.files}
    placement = place_weights(module, MemorySource(weights), given)
    return run_program(module, placement.values, placement.placed)


def source_outputs(
    src: Path, weights: dict[str, np.ndarray], inputs: Path
) -> dict[str, np.ndarray]:
    """The single-process interpreter's results of ``src`` as written (no lowering)."""
    module = load_program(tp_context(), str(src))
    with np.load(inputs) as data:
        given = {k: data[k] for k in data.files}
    placement = place_weights(module, MemorySource(weights), given)
    return run_program(module, placement.values, placement.placed)


@pytest.mark.parametrize(
    ("chips", "allreduce", "relay"),
    [
        (1, "fold", "direct"),
        (2, "oneshot", "direct"),
        (2, "fold", "host"),
        (4, "twoshot", "direct"),
        (2, "ring", "direct"),
        (4, "ring", "direct"),
    ],
)
def test_qwen3_on_ranks_matches_the_interpreter(
    tmp_path: Path, chips: int, allreduce: str, relay: str
) -> None:
    src, ckpt, inputs, weights = qwen3_files(tmp_path, chips)
    out = tmp_path / "out.npz"
    proc = tp_run(
        src,
        "--weights",
        ckpt,
        "--inputs",
        inputs,
        "--outputs",
        out,
        "--mpi",
        chips,
        "--allreduce",
        allreduce,
        "--relay",
        relay,
        "--stats",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lowering a copy to per-chip programs" in proc.stderr
    ranks = chips + (relay == "host")
    assert f"on {ranks} MPI rank(s)" in proc.stdout
    assert "peak RSS" in proc.stdout
    spec = f"tp-relocate{{allreduce={allreduce}}},tp-transfers,tp-link-points"
    want = interpreted(src, weights, inputs, spec)
    with np.load(out) as got:
        assert sorted(got.files) == sorted(want)
        for name, value in want.items():
            if allreduce == "twoshot":
                np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)
            else:
                assert np.array_equal(got[name], value), name  # bitwise
        if allreduce == "ring":
            # The ring's rotated folds round otherwise than the source's chip-order sums.
            source = source_outputs(src, weights, inputs)
            for name, value in source.items():
                scale = max(1.0, float(np.abs(value).max()))
                np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5 * scale)


def test_four_ranks_fold_bitwise_with_check(tmp_path: Path) -> None:
    src, ckpt, inputs, weights = qwen3_files(tmp_path, 4)
    out = tmp_path / "out.npz"
    proc = tp_run(
        src, "--weights", ckpt, "--inputs", inputs, "--outputs", out, "--mpi", 4, "--check"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check against the unsharded program" in proc.stdout
    want = interpreted(src, weights, inputs, "tp-relocate,tp-transfers,tp-link-points")
    with np.load(out) as got:
        assert all(np.array_equal(got[k], v) for k, v in want.items())


def test_megatron_mlp_under_an_existing_launcher(tmp_path: Path) -> None:
    """``mpiexec -n 2 tp-run PROGRAM --backend mpi``, every tensor in one npz."""
    rng = np.random.default_rng(0)
    values = {
        "x": rng.standard_normal((1, 8)),
        "gate": rng.standard_normal((16, 8)),
        "up": rng.standard_normal((16, 8)),
        "down": rng.standard_normal((8, 16)),
    }
    inputs, want, got = tmp_path / "in.npz", tmp_path / "want.npz", tmp_path / "got.npz"
    np.savez(inputs, **{k: v.astype(np.float32) for k, v in values.items()})
    assert tp_run(MLP, "--inputs", inputs, "--outputs", want).returncode == 0
    cmd = [str(BIN / "mpiexec"), "-n", "2", str(BIN / "tp-run"), str(MLP)]
    cmd += ["--inputs", str(inputs), "--outputs", str(got), "--backend", "mpi"]
    cmd += ["--allreduce", "oneshot"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with np.load(want) as a, np.load(got) as b:
        assert a.files == b.files
        assert all(np.array_equal(a[k], b[k]) for k in a.files)


def test_a_tensor_missing_on_a_rank_is_one_line(tmp_path: Path) -> None:
    src, _, inputs, weights = qwen3_files(tmp_path, 2)
    ckpt, out = tmp_path / "bad.safetensors", tmp_path / "out.npz"
    save_file({k: v for k, v in weights.items() if "layers.1.mlp.down" not in k}, str(ckpt))
    proc = tp_run(src, "--weights", ckpt, "--inputs", inputs, "--outputs", out, "--mpi", 2)
    line = one_error(proc)
    assert line.startswith("tp-run: error: rank ")
    assert "checkpoint has no tensor 'model.layers.1.mlp.down_proj.weight'" in line
    assert not out.exists()


def test_a_rank_killed_mid_step_ends_the_run(tmp_path: Path) -> None:
    src, ckpt, inputs, _ = qwen3_files(tmp_path, 2)
    out = tmp_path / "out.npz"
    args = (src, "--weights", ckpt, "--inputs", inputs, "--outputs", out, "--mpi", 2)
    proc = tp_run(*args, env={TEST_EXIT_ENV: "1"})
    line = one_error(proc)
    assert line.startswith("tp-run: error: rank 1 (chip 1) died"), line
    assert not out.exists()


def test_a_wrong_world_size_is_one_line(tmp_path: Path) -> None:
    src, ckpt, inputs, _ = qwen3_files(tmp_path, 2)
    out = tmp_path / "out.npz"
    proc = tp_run(src, "--weights", ckpt, "--inputs", inputs, "--outputs", out, "--mpi", 3)
    line = one_error(proc)
    assert line == (
        "tp-run: error: --mpi 3 does not fit the program: it has 2 chip(s), one rank each: "
        "give --mpi 2"
    )
    assert not out.exists()


def test_a_wrong_world_size_under_your_own_launcher_is_one_line(tmp_path: Path) -> None:
    src, ckpt, inputs, _ = qwen3_files(tmp_path, 2)
    mpiexec = BIN / "mpiexec"
    proc = subprocess.run(
        [str(mpiexec), "-n", "3", str(BIN / "tp-run"), str(src), "--backend", "mpi"]
        + ["--weights", str(ckpt), "--inputs", str(inputs)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode != 0
    assert (
        "tp-run: error: world size 3 does not fit the program: it has 2 chip(s), "
        "so it runs on 2 rank(s)"
    ) in proc.stderr


class FakeLauncher:
    """Stands in for `run_bounded`: records each command it is asked to start, starts none."""

    def __init__(self) -> None:
        self.started: list[list[str]] = []

    def __call__(self, cmd: list[str], *_: object) -> subprocess.CompletedProcess[str]:
        self.started.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 0, "", "")


@pytest.fixture
def launcher(monkeypatch: pytest.MonkeyPatch) -> FakeLauncher:
    fake = FakeLauncher()
    monkeypatch.setattr(run_mpi, "run_bounded", fake)
    monkeypatch.setattr(mpi_exec, "load_mpi", lambda: None)  # no MPI in the test process
    return fake


@pytest.mark.parametrize(
    ("stage", "flags", "ranks"),
    [
        ("source", ["--mpi", "2"], 2),
        ("source", ["--mpi", "2", "--relay", "host"], 3),
        ("programs", ["--mpi", "2"], 2),
    ],
)
def test_the_launcher_starts_as_many_ranks_as_chips(
    launcher: FakeLauncher,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    stage: str,
    flags: list[str],
    ranks: int,
) -> None:
    path = _two_chip_program(tmp_path, stage)
    assert tp_run_main([str(path), "--random-weights", "0", "--random-inputs", "1", *flags]) == 0
    [cmd] = launcher.started
    assert cmd[1:3] == ["-n", str(ranks)]


class LosingLauncher(FakeLauncher):
    """A world whose rank 1 failed, said so and aborted, but whose stderr mpiexec lost in the
    teardown (a race of MPICH's: seen on a loaded machine): only the rank's file remains."""

    def __call__(self, cmd: list[str], *rest: object) -> subprocess.CompletedProcess[str]:
        super().__call__(cmd)
        env = rest[0]
        assert isinstance(env, dict)
        os.environ[mpi_exec.PID_DIR_ENV] = env[mpi_exec.PID_DIR_ENV]
        try:
            mpi_exec.record_error(1, "tp-run: error: rank 1 (chip 1): it broke")
        finally:
            del os.environ[mpi_exec.PID_DIR_ENV]
        return subprocess.CompletedProcess(cmd, 1, "", "")


def test_a_rank_error_lost_by_mpiexec_is_still_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(run_mpi, "run_bounded", LosingLauncher())
    monkeypatch.setattr(mpi_exec, "load_mpi", lambda: None)
    path = _two_chip_program(tmp_path, "source")
    code = tp_run_main([str(path), "--random-weights", "0", "--random-inputs", "1", "--mpi", "2"])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == ["tp-run: error: rank 1 (chip 1): it broke"]


@pytest.mark.parametrize("n", ["1", "3", "1000", str(2**40)])
@pytest.mark.parametrize("stage", ["source", "programs"])
def test_a_world_that_does_not_fit_starts_no_rank(
    launcher: FakeLauncher, capsys: pytest.CaptureFixture[str], tmp_path: Path, stage: str, n: str
) -> None:
    path = _two_chip_program(tmp_path, stage)
    code = tp_run_main([str(path), "--random-weights", "0", "--random-inputs", "1", "--mpi", n])
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and launcher.started == []
    assert err[-1] == (
        f"tp-run: error: --mpi {n} does not fit the program: it has 2 chip(s), one rank each: "
        "give --mpi 2"
    )


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("builtin.module {", "the program states no chip count"),
        (
            "builtin.module attributes {tp.chips = 4096 : i64} {",
            "for at most 1024 chips",
        ),
    ],
)
def test_a_program_with_no_lowerable_chip_count_starts_no_rank(
    launcher: FakeLauncher,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    header: str,
    message: str,
) -> None:
    path = tmp_path / "p.mlir"
    path.write_text(
        f"{header}\n  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {{\n"
        "    func.return %x : tensor<4xf32>\n  }\n}\n"
    )
    code = tp_run_main([str(path), "--random-inputs", "1", "--mpi", "4096"])
    err = capsys.readouterr().err
    assert code == 1 and launcher.started == [] and message in err, err


def _two_chip_program(tmp_path: Path, stage: str) -> Path:
    """A tiny 2-chip Qwen3 layer as written (``source``) or as per-chip programs."""
    module = program(tiny(chips=2))
    if stage == "programs":
        module = module.clone()
        apply(module, "tp-relocate,tp-transfers,tp-link-points")
    path = tmp_path / f"{stage}.mlir"
    path.write_text(str(module))
    return path


def test_ranks_lines_that_ran_together_are_told_apart() -> None:
    err = (
        "tp-run: error: rank 0 (chip 0): cannot open 'x'tp-run: error: rank 1 (chip 1): "
        "cannot open 'x'\n=== banner ===\ntp-run: error: rank 0 (chip 0): cannot open 'x'\n"
    )
    assert rank_lines(err) == [
        "tp-run: error: rank 0 (chip 0): cannot open 'x'",
        "tp-run: error: rank 1 (chip 1): cannot open 'x'",
    ]
