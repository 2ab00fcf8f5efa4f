"""``tp-run --backend iree --iree-target T``: each GPU target's flags are ones IREE compiles
with (checked by compiling a real segment for it, no GPU needed), the target is part of the
cache key, a target whose driver or device is absent is refused in one line before anything
is compiled; and the cache survives every way an entry or its directory can be broken."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import iree.runtime
import numpy as np
import pytest
from helpers import tool
from xdsl.dialects.func import FuncOp

from tp_dialect.passes.export import export_module
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs, random_weights
from tp_dialect.runtime.iree_exec import (
    CPU,
    TARGETS,
    IreeError,
    ModuleCache,
    check_target,
    prepare,
    run_iree,
    segment_text,
)
from tp_dialect.runtime.reference import run_program
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
MLP = ROOT / "examples" / "megatron_mlp.mlir"
PIPELINE = "tp-relocate{allreduce=oneshot},tp-transfers,tp-phase,tp-link-points,tp-relay"
GPUS = ["cuda", "rocm", "vulkan-spirv"]
# What IREE writes into a module for each target: its executable format.
FORMATS = {
    "llvm-cpu": b"embedded-elf",
    "cuda": b"cuda-nvptx-fb",
    "rocm": b"rocm-hsaco-fb",
    "vulkan-spirv": b"vulkan-spirv-fb",
}


def _programs() -> Any:
    module, _ = parse_module(tp_context(), MLP.read_text(), "megatron_mlp.mlir")
    return lowered(module, PIPELINE)


def _segment() -> str:
    """A real segment: chip 0's first stretch of the Megatron MLP, as IREE gets it."""
    module = _programs()
    export_module(module)
    func = next(f for f in module.ops if isinstance(f, FuncOp) and f.sym_name.data != "host")
    return segment_text(func)


def _has_device(driver: str) -> bool:
    """Whether IREE's runtime here has ``driver`` and a device of it (asked directly)."""
    try:
        return bool(iree.runtime.get_driver(driver).query_available_devices())
    except (RuntimeError, ValueError):
        return False


def _tp_run(*args: object) -> subprocess.CompletedProcess[str]:
    return tool("tp-run", *args)


@pytest.mark.parametrize(("name", "arch"), [(n, None) for n in TARGETS] + [("rocm", "gfx90a")])
def test_each_target_compiles_a_segment_for_its_device(
    name: str, arch: str | None, tmp_path: Path
) -> None:
    target = TARGETS[name].for_arch(arch)
    cache = ModuleCache(tmp_path, target)
    vmfb = cache.get(_segment(), "chip 0 segment")
    assert cache.compiled == 1
    assert [f for f, mark in FORMATS.items() if mark in vmfb] == [name]
    if arch is not None:
        assert arch.encode() in vmfb


def test_the_target_and_its_architecture_are_part_of_the_cache_key(tmp_path: Path) -> None:
    text = _segment()
    targets = [*TARGETS.values(), TARGETS["cuda"].for_arch("sm_90")]
    keys = {ModuleCache(tmp_path, t).key(text) for t in targets}
    assert len(keys) == len(targets)
    assert ModuleCache(tmp_path).key(text) == ModuleCache(tmp_path, CPU).key(text)


def test_an_architecture_iree_does_not_know_is_its_first_error_line(tmp_path: Path) -> None:
    cache = ModuleCache(tmp_path, TARGETS["rocm"].for_arch("gfx000"))
    with pytest.raises(IreeError) as err:
        cache.get(_segment(), "chip 0 segment chip0_halt1")
    assert str(err.value) == (
        "chip 0 segment chip0_halt1: IREE refused it: Unknown ROCM target 'gfx000'"
    )
    assert not list(tmp_path.iterdir())


NEEDS = {
    "cuda": "--iree-target cuda needs an NVIDIA GPU and IREE's cuda driver: ",
    "rocm": "--iree-target rocm needs an AMD GPU and IREE's hip driver: ",
    "vulkan-spirv": "--iree-target vulkan-spirv needs a Vulkan GPU and IREE's vulkan driver: ",
}


@pytest.mark.parametrize("name", GPUS)
def test_a_gpu_target_without_its_driver_or_device_is_one_line_before_compiling(
    name: str, tmp_path: Path
) -> None:
    if _has_device(TARGETS[name].driver):  # a machine with this GPU: nothing to refuse
        check_target(TARGETS[name])
        return
    cache = tmp_path / "cache"
    proc = _tp_run(
        MLP, "--random-inputs", 0, "--random-weights", 0, "--backend", "iree",
        "--iree-target", name, "--iree-cache", cache,
    )  # fmt: skip
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and lines[0].startswith("tp-run: error: " + NEEDS[name]), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not cache.exists()  # nothing compiled, not even the cache made
    module = _programs()  # run as a library, without the check: refused before compiling too
    inputs = random_inputs(module, 1, 5)
    placement = place_weights(module, MemorySource(random_weights(module, 0)), inputs)
    with pytest.raises(IreeError, match=f"^IREE could not open a {TARGETS[name].driver} device: "):
        run_iree(module, placement.values, placement.placed, ModuleCache(cache, TARGETS[name]))
    assert not cache.exists()


class _Driver:
    def __init__(self, devices: list[dict[str, Any]]) -> None:
        self.devices = devices

    def query_available_devices(self) -> list[dict[str, Any]]:
        return self.devices


def test_a_driver_without_a_device_or_that_fails_is_said_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(iree.runtime, "get_driver", lambda name: _Driver([]))
    with pytest.raises(IreeError, match=r"^--iree-target cuda needs an NVIDIA GPU and IREE's "
                       r"cuda driver: no cuda device found$"):  # fmt: skip
        check_target(TARGETS["cuda"])

    def fails(name: str) -> None:
        raise RuntimeError(
            "Error creating driver: c/runtime/src/iree/hal/drivers/hip/dynamic_symbols.c:155: "
            "UNAVAILABLE; HIP runtime library not available: please ensure installed:\n  Tried"
        )

    monkeypatch.setattr(iree.runtime, "get_driver", fails)
    with pytest.raises(IreeError) as err:
        check_target(TARGETS["rocm"])
    assert str(err.value) == (
        "--iree-target rocm needs an AMD GPU and IREE's hip driver: HIP runtime library not "
        "available: please ensure installed"
    )
    monkeypatch.setattr(iree.runtime, "get_driver", lambda name: _Driver([{"device_id": 0}]))
    check_target(TARGETS["cuda"])  # a device: accepted


def test_a_module_built_for_another_device_is_one_line_naming_the_segment(
    tmp_path: Path,
) -> None:
    """A program's module that its device cannot load (Vulkan code on the CPU's driver):
    one line naming the first segment that fails alone, not the bundle."""
    module = _programs()
    inputs = random_inputs(module, 1, 5)
    placement = place_weights(module, MemorySource(random_weights(module, 0)), inputs)
    cache = ModuleCache(tmp_path, TARGETS["vulkan-spirv"])
    with pytest.raises(IreeError) as err:
        prepare(module, placement.values, placement.placed, cache, driver="local-task")
    message = str(err.value)
    assert message.startswith("chip 0 segment chip0_halt1: IREE could not load it on its ")
    assert "local-task device: HAL device `__device_0` not found or unavailable" in message
    assert "\n" not in message and len(message) < 300


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--iree-target", "cuda"], "tp-run: error: --iree-target is for --backend iree"),
        (
            ["--iree-target-arch", "sm_90"],
            "tp-run: error: --iree-target-arch is for --backend iree",
        ),
        (
            ["--backend", "iree", "--iree-target-arch", "sm_90"],
            "tp-run: error: --iree-target-arch is for a GPU target: llvm-cpu builds for this "
            "machine's CPU",
        ),
        (
            ["--backend", "iree", "--iree-target", "cuda", "--iree-target-arch", "sm 90;x"],
            "tp-run: error: --iree-target-arch 'sm 90;x': not an architecture name",
        ),
        (
            ["--backend", "iree", "--iree-target", "metal-spirv"],
            "tp-run: error: argument --iree-target: invalid choice: 'metal-spirv'",
        ),
    ],
)
def test_target_flags_out_of_place_are_refused_first(flags: list[str], message: str) -> None:
    proc = _tp_run(MLP, "--random-inputs", 0, *flags)
    assert proc.returncode == 1
    assert proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1, proc.stderr


def _run(cache: ModuleCache) -> tuple[dict[str, np.ndarray], Any]:
    module = _programs()
    weights = random_weights(module, 0)
    placement = place_weights(module, MemorySource(weights), random_inputs(module, 1, 5))
    run = run_iree(module, placement.values, placement.placed, cache)
    want = run_program(module, placement.values, placement.placed)
    for name, value in want.items():
        np.testing.assert_allclose(run.outputs[name], value, rtol=1e-5, atol=1e-6)
    return run.outputs, run


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of the module itself
    path.write_bytes(bytes(data))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _directory(path: Path) -> None:
    path.unlink()
    (path / "inside").mkdir(parents=True)


@pytest.mark.parametrize("corrupt", [_flip, _empty, _directory])
def test_a_broken_entry_is_rebuilt_never_loaded(corrupt: Any, tmp_path: Path) -> None:
    first, run = _run(ModuleCache(tmp_path))
    entries = sorted(tmp_path.glob("*.vmfb"))
    assert len(entries) == 1 and run.distinct > 1  # the program's segments: one module
    corrupt(entries[0])
    cache = ModuleCache(tmp_path)
    outputs, run = _run(cache)
    assert (run.compiled, run.rebuilt, run.hits) == (1, 1, 0)
    for name, want in first.items():
        assert np.array_equal(outputs[name], want), name
    if corrupt is _directory:  # not replaced (a directory is not the cache's to remove): said
        assert cache.unwritable.startswith("Is a directory")
        assert (entries[0] / "inside").is_dir()
    else:  # rewritten: the next run finds it
        assert cache.unwritable == ""
        assert _run(ModuleCache(tmp_path))[1].compiled == 0


def test_a_cache_that_cannot_be_written_warns_and_the_run_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = blocker / "cache"  # under a file: no directory can be made there (even as root)
    out = tmp_path / "out.npz"
    flags = ["--random-inputs", 1, "--random-weights", 0, "--backend", "iree", "--outputs", out]
    proc = _tp_run(MLP, *flags, "--iree-cache", cache)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"tp-run: warning: compiled modules not kept in {cache}: Not a directory" in proc.stderr
    ref = tmp_path / "ref.npz"
    assert _tp_run(MLP, *flags[:4], "--outputs", ref).returncode == 0
    got, want = np.load(out), np.load(ref)
    for name in want.files:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_a_compile_that_hangs_is_killed_and_run_again_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tp_dialect.runtime.iree_exec as iree_exec

    real = iree_exec._run_watched
    calls: list[float] = []

    def hang_first(command: list[str], data: bytes, seconds: float, stall: float) -> Any:
        calls.append(seconds)
        return None if len(calls) == 1 else real(command, data, seconds, stall)

    monkeypatch.setattr(iree_exec, "_run_watched", hang_first)
    cache = ModuleCache(tmp_path)
    assert len(cache.get(_segment(), "chip 0 segment 0")) > 0
    assert len(calls) == 2 and cache.compiled == 1


def test_a_compile_that_hangs_every_time_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tp_dialect.runtime.iree_exec as iree_exec

    commands: list[list[str]] = []
    monkeypatch.setattr(iree_exec, "_run_watched", lambda command, *rest: commands.append(command))
    with pytest.raises(IreeError) as err:
        ModuleCache(tmp_path).get(_segment(), "chip 0 segment 0")
    # three runs, each with MLIR's threads off (where the stall was seen)
    assert len(commands) == 3 and all("--mlir-disable-threading" in c for c in commands)
    assert str(err.value).startswith(
        "chip 0 segment 0: IREE's compiler was killed 3 times (no CPU for 20 s, or still running "
        "after "
    )
    assert not list(tmp_path.glob("*.vmfb"))


def test_a_process_using_no_cpu_is_killed_as_stalled_and_a_busy_one_is_not() -> None:
    """The watch behind the compiler's bound: a child asleep (no CPU, like the compiler
    stuck in a futex wait) is killed after the stall time, long before the wall bound;
    one computing for longer than the stall time runs to its end, its input read whole."""
    from tp_dialect.runtime.iree_exec import _run_watched

    start = time.monotonic()
    asleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    assert _run_watched(asleep, b"", seconds=50, stall=2) is None
    assert time.monotonic() - start < 20
    busy = "import sys, time\nd = sys.stdin.buffer.read()\nt = time.time()\n"
    busy += "while time.time() - t < 3: pass\nprint(len(d))"
    done = _run_watched([sys.executable, "-c", busy], b"x" * 300_000, seconds=50, stall=2)
    assert done is not None and done.returncode == 0
    assert done.stdout.strip() == b"300000"
    # a child that reads its input only after the watch's first waits gets all of it
    late_reader = "import sys, time\nt = time.time()\nwhile time.time() - t < 2.5: pass\n"
    late_reader += "print(len(sys.stdin.buffer.read()))"
    done = _run_watched([sys.executable, "-c", late_reader], b"y" * 300_000, 50, 2)
    assert done is not None and done.stdout.strip() == b"300000"
    late = _run_watched([sys.executable, "-c", busy], b"", seconds=1, stall=50)
    assert late is None


def test_a_process_whose_cpu_time_cannot_be_read_has_none() -> None:
    """Where /proc cannot say (no such process, or no /proc), the watch keeps only the wall
    bound: `_cpu_ticks` answers None."""
    from tp_dialect.runtime.iree_exec import _cpu_ticks

    assert _cpu_ticks(2**22 + 7) is None  # above Linux's pid_max: never a process
    if Path("/proc/self/stat").exists():  # where /proc says it, this busy process has used CPU
        sum(range(10**6))
        ticks = _cpu_ticks(os.getpid())
        assert isinstance(ticks, int) and ticks > 0
