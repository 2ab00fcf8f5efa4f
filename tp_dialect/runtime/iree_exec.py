"""Per-chip programs run as native code built by IREE, in one process, under the host's relay.

`run_iree` exports a copy of the program (tp-export: one plain-MLIR function per stretch a
chip runs between two halts, and ``@host``), compiles its distinct functions with IREE as one
module (`compile_entries`) for the host CPU (``llvm-cpu``, with `iree_tuning`'s spec) or a
GPU, and runs the relay's steps on IREE's runtime: a ``run``
calls the chip's segment, a ``copy`` hands a sent buffer to the receiving chip — links,
carried values and outputs stay IREE device arrays the host only passes on. Weights and
caches are placed on the device once, each distinct slice once.

`ModuleCache` keeps compiled modules on disk, keyed by a SHA-256 of the module's text, the
IREE version, the target and its flags (and the tuning spec): a second run compiles nothing.
An entry is a digest of its payload followed by the payload; one whose digest does not match
(truncated, overwritten) is compiled again and rewritten, never loaded. Entries are written
atomically; a cache that cannot be written is said (`ModuleCache.unwritable`), the run goes
on.

`IreeTarget` is what a run compiles for and runs on: the host CPU (`CPU`, the default) or a
GPU (`TARGETS`: IREE's ``cuda``, ``rocm``, ``vulkan-spirv``), whose driver and device
`check_target` asks IREE's runtime for before anything is compiled.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import os
import platform
import re
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument
from xdsl.printer import Printer

from tp_dialect.errors import TpError
from tp_dialect.ops import ShardOp
from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime import iree_tuning as tuning
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.checkpoint import SliceKey, is_placeholder
from tp_dialect.runtime.reference import bind
from tp_dialect.runtime.segments import Call, Entry, Port, run_segments
from tp_dialect.signature import entry_function, ports

EXTRA = "iree"
"""The extra installing IREE (``pip install 'tp-dialect[iree]'``)."""

# f64 stays f64: IREE would otherwise demote it to f32, changing the numbers.
_KEEP_F64 = "--iree-input-demote-f64-to-f32=false"


@dataclass(frozen=True)
class IreeTarget:
    """One of IREE's compile targets, the flags tp compiles for it and the runtime driver
    that runs what it compiled; its name and compile flags are part of every cache key."""

    name: str
    """iree.compiler's target backend (``llvm-cpu``, ``cuda`` …)."""
    driver: str
    """iree.runtime's HAL driver running its modules (``local-task``, ``cuda`` …)."""
    arch_flag: str
    """The flag naming the device architecture (``--iree-cuda-target``)."""
    arch: str | None
    """Its value (``sm_80``), or None: IREE's default."""
    needs: str
    """What the user needs to run it, as an error says it."""
    flags: tuple[str, ...] = (_KEEP_F64,)

    @property
    def compile_flags(self) -> tuple[str, ...]:
        """The flags handed to IREE's compiler: the architecture's, then the rest."""
        arch = () if self.arch is None else (f"{self.arch_flag}={self.arch}",)
        return (*arch, *self.flags)

    def for_arch(self, arch: str | None) -> IreeTarget:
        """This target built for ``arch`` (None: unchanged)."""
        return self if arch is None else replace(self, arch=arch)


CPU = IreeTarget("llvm-cpu", "local-task", "--iree-llvmcpu-target-cpu", "host", "a CPU")
"""The default: native code for this machine's CPU, on IREE's multi-threaded CPU driver."""

TARGETS = {
    t.name: t
    for t in (
        CPU,
        # PTX for sm_80 (Ampere) is JIT-compiled by the CUDA driver for any newer GPU.
        IreeTarget("cuda", "cuda", "--iree-cuda-target", "sm_80", "an NVIDIA GPU"),
        # AMD code objects run only on the architecture named: gfx942 is MI300.
        IreeTarget("rocm", "hip", "--iree-rocm-target", "gfx942", "an AMD GPU"),
        # No architecture: IREE's portable baseline (SPIR-V 1.3, shaders only) any GPU runs.
        IreeTarget("vulkan-spirv", "vulkan", "--iree-vulkan-target", None, "a Vulkan GPU"),
    )
}
"""The targets ``tp-run --iree-target`` offers, by IREE's name."""

TARGET = CPU.name
"""The default target's name: native code for this machine's CPU."""

_MAGIC = b"tp-iree-1\n"
_MPI_WORLD_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
"""What IREE's runtime reads as 'running under mpiexec' (MPICH's and Open MPI's)."""


class IreeError(TpError):
    """IREE is missing, refused a segment, or failed running one: one line, for the user."""


def iree() -> tuple[ModuleType, ModuleType]:
    """IREE's compiler and runtime modules; an IreeError naming the extra when absent."""
    try:
        import iree.compiler as compiler
        import iree.runtime as runtime
    except ImportError:
        raise IreeError(
            "--backend iree needs IREE, which is not installed: pip install "
            f"'tp-dialect[{EXTRA}]' (iree-base-compiler and iree-base-runtime 3.13.0)"
        ) from None
    return compiler, runtime


def iree_version() -> str:
    """The installed IREE compiler's version (part of every cache key)."""
    try:
        return importlib.metadata.version("iree-base-compiler")
    except importlib.metadata.PackageNotFoundError:
        raise IreeError(
            "IREE's compiler is importable but not installed as iree-base-compiler (its "
            f"version keys the module cache): pip install 'tp-dialect[{EXTRA}]'"
        ) from None


def default_cache_dir() -> Path:
    """Where compiled modules are kept: ``$TP_IREE_CACHE``, else ``tp/iree`` under the
    user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    if given := os.environ.get("TP_IREE_CACHE"):
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tp" / "iree"


@dataclass
class ModuleCache:
    """Compiled modules on disk by the digest of what they are compiled from; counts what
    it compiled and what it found."""

    directory: Path
    target: IreeTarget = CPU
    compiled: int = 0
    hits: int = 0
    rebuilt: int = 0
    unwritable: str = ""
    """Why an entry could not be stored (the first failure), or empty."""
    tuned: bool = True
    """Whether a CPU build takes `iree_tuning`'s spec (bf16 matrix-vector tiles)."""

    def key(self, text: str) -> str:
        """The digest naming ``text``'s compiled module: its text, IREE's version, the target
        and its flags, the machine and its CPU (a cache shared by machines never hands one
        code built for another's CPU)."""
        target = self.target
        stamp = [iree_version(), target.name, *target.compile_flags, platform.machine(), _cpu()]
        stamp += [tuning.SPEC] if self._tuned else []
        return hashlib.sha256("\n".join([*stamp, ""]).encode() + text.encode()).hexdigest()

    @property
    def _tuned(self) -> bool:
        return self.tuned and self.target.name == CPU.name

    def get(self, text: str, where: str) -> bytes:
        """The compiled module of ``text``: from disk when a sound entry is there, else
        compiled (and stored); an IreeError naming ``where`` with IREE's first error line
        when IREE refuses it."""
        path = self.directory / f"{self.key(text)}.vmfb"
        stored = _read_entry(path)
        if stored is not None:
            self.hits += 1
            return stored
        if path.exists():
            self.rebuilt += 1  # a corrupt entry: never trusted, compiled again
        iree()  # installed, else the one line naming the extra
        target = self.target
        try:
            with tempfile.TemporaryDirectory(prefix="tp-iree-") as spec_dir:
                # The CPU's bf16 matrix-vector tiles (`iree_tuning`): a file IREE reads.
                tuned = [tuning.spec_flag(Path(spec_dir))] if self._tuned else []
                vmfb = _compile(text, target.name, [*target.compile_flags, *tuned])
        except TimeoutError as err:
            raise IreeError(f"{where}: {err}") from None
        except Exception as err:  # IREE's CompilerToolError, or its failure to start
            raise IreeError(f"{where}: IREE refused it: {first_error(str(err))}") from None
        self.compiled += 1
        try:
            _write_entry(path, bytes(vmfb))
        except OSError as err:  # a read-only or misplaced cache: the run goes on uncached
            self.unwritable = self.unwritable or f"{err.strerror or err}: {path}"
        return bytes(vmfb)


STALL_SECONDS = 20.0
"""How long IREE's compiler may go without using any CPU before it is taken as stuck: it
is CPU-bound throughout, and was seen stuck in a futex wait, at no CPU, for 20 minutes."""

ATTEMPTS = 3
"""How often a stuck compile is run in all: the stall is rare, but two in a row were seen
once, in a test run loading both cores."""

# The stall was a futex wait, which threads waiting on each other make; one thread
# compiles a segment as fast on this 2-core machine (0.47 s either way for the MLP's) into
# the same bytes, so the flag is not part of the cache key.
_ONE_THREAD = "--mlir-disable-threading"


def _compile(text: str, backend: str, flags: list[str]) -> bytes:
    """IREE's compiler run on ``text`` (as ``iree.compiler.compile_str`` runs it), bounded: a
    run that uses no CPU for `STALL_SECONDS`, or is not finished in two minutes plus a second
    per 10 kB of text, is killed and run again, `ATTEMPTS` times in all, then a
    TimeoutError."""
    from iree.compiler.tools import binaries, core

    with core.TempFileSaver.implicit() as saver:
        options = core.CompilerOptions(target_backends=[backend], extra_args=[*flags, _ONE_THREAD])
        command = core.build_compile_command_line("-", saver, options)
    seconds = 120 + len(text) / 10_000
    for _ in range(ATTEMPTS):
        done = _run_watched(command, text.encode("utf-8"), seconds, STALL_SECONDS)
        if done is None:
            continue
        if done.returncode != 0:
            raise binaries.CompilerToolError(done)
        return done.stdout
    raise TimeoutError(
        f"IREE's compiler was killed {ATTEMPTS} times (no CPU for {STALL_SECONDS:.0f} s, "
        f"or still running after {seconds:.0f} s)"
    )


def _run_watched(
    command: list[str], data: bytes, seconds: float, stall: float
) -> subprocess.CompletedProcess[bytes] | None:
    """``command`` run on ``data``, its output captured; None when it was killed: still
    running after ``seconds``, or ``stall`` seconds without CPU time (where /proc says it:
    a stuck compiler then costs half a minute, not the whole bound). The input is a file the
    command reads at its own pace (a pipe would have to be fed between the waits)."""
    with tempfile.TemporaryFile() as source:
        source.write(data)
        source.seek(0)
        with subprocess.Popen(
            command, stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as proc:
            try:
                start = time.monotonic()
                busy, busy_at = _cpu_ticks(proc.pid), start
                while True:
                    try:
                        out, err = proc.communicate(timeout=1.0)
                        return subprocess.CompletedProcess(command, proc.returncode, out, err)
                    except subprocess.TimeoutExpired:
                        pass
                    now = time.monotonic()
                    ticks = _cpu_ticks(proc.pid)
                    if ticks != busy:
                        busy, busy_at = ticks, now
                    if now - start > seconds or (ticks is not None and now - busy_at > stall):
                        proc.kill()
                        proc.communicate()
                        return None
            except BaseException:  # an interrupt: the compiler goes too
                proc.kill()
                raise


def _cpu_ticks(pid: int) -> int | None:
    """CPU time process ``pid`` has used, in clock ticks (all its threads), from Linux's
    /proc; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rpartition(")")[2].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (OSError, ValueError, IndexError):
        return None


def check_target(target: IreeTarget) -> None:
    """Return only when IREE's compiler offers ``target`` and its runtime has the target's
    driver with at least one device; else an IreeError saying what the user needs (asked
    before anything is compiled)."""
    compiler, runtime = iree()
    needs = f"--iree-target {target.name} needs {target.needs} and IREE's {target.driver} driver"
    if target.name not in compiler.query_available_targets():
        raise IreeError(f"{needs}: this IREE compiler has no {target.name} target")
    try:
        devices = runtime.get_driver(target.driver).query_available_devices()
    except (RuntimeError, ValueError) as err:  # what IREE raises for a driver it cannot load
        raise IreeError(f"{needs}: {iree_message(str(err))}") from None
    if not devices:
        raise IreeError(f"{needs}: no {target.driver} device found")


_STATUS = re.compile(r"^(?:Error [\w ]+: )?(?:\S+:\d+: )?[A-Z_]+; ")


def iree_message(error: str, limit: int = 200) -> str:
    """IREE runtime's error as one line: its first, without the C source location and status
    code IREE puts first, at most ``limit`` characters."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    line = _STATUS.sub("", lines[0] if lines else "no message").rstrip(":; ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


@functools.cache
def _cpu() -> str:
    """This CPU as code built for ``target-cpu=host`` depends on it: its model and feature
    flags (Linux's /proc/cpuinfo), else what Python knows of it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = [line for line in f if line.startswith(("model name", "flags"))][:2]
    except OSError:
        lines = []
    return "".join(lines).strip() or platform.processor()


def first_error(diagnostics: str) -> str:
    """IREE's first ``error:`` line, its ``<stdin>:L:C:`` location kept as ``line L:C`` (an
    ``<unknown>:0:`` one, a flag's, dropped)."""
    for line in diagnostics.splitlines():
        if "error:" in line:
            where, _, message = line.partition("error:")
            place = re.fullmatch(r"\s*<stdin>:(\d+:\d+):\s*", where)
            return f"line {place[1]}: {message.strip()}" if place else message.strip()
    lines = [line.strip() for line in diagnostics.splitlines() if line.strip()]
    return lines[0] if lines else "no diagnostic"


def _read_entry(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if len(data) <= head or not data.startswith(_MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(_MAGIC) : head]:
        return None
    return payload


def _write_entry(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".vmfb")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def segment_text(func: FuncOp) -> str:
    """``func`` alone as a module IREE compiles, its function named ``@main`` and its
    values unnamed: segments that differ only in names (chip 1's and chip 2's) are one
    text, compiled once."""
    return _module_text([_plain(func, "main")])


def bundle_text(funcs: list[FuncOp]) -> str:
    """The segments ``funcs`` (distinct texts) as one module IREE compiles in one go, the
    i-th's function named ``@s<i>``, values unnamed: one compiler run for a program's
    segments, not one each."""
    return _module_text([_plain(f, f"s{i}") for i, f in enumerate(funcs)])


def _plain(func: FuncOp, name: str) -> FuncOp:
    copy = func.clone()
    copy.sym_name = type(copy.sym_name)(name)
    for op in copy.walk():
        for r in op.results:
            r.name_hint = None
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    a.name_hint = None
    copy.attributes.clear()
    copy.arg_attrs = None
    copy.res_attrs = None
    return copy


def _module_text(funcs: list[FuncOp]) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(ModuleOp(funcs))
    return out.getvalue() + "\n"


@dataclass
class IreeRun:
    """A run's results by name, and what it compiled."""

    outputs: dict[str, np.ndarray]
    functions: int
    distinct: int
    compiled: int
    hits: int
    rebuilt: int
    compile_s: float = 0.0
    place_s: float = 0.0
    run_s: float = 0.0


@dataclass
class Device:
    """IREE's runtime on the target's device (the host CPU by default): one device, a
    context per compiled module."""

    runtime: ModuleType
    config: Any = None
    contexts: list[Any] = field(default_factory=list)
    target: IreeTarget = field(default=CPU, kw_only=True)

    def __post_init__(self) -> None:
        # Under mpiexec IREE's runtime sees the world size in the environment and gives the
        # device an MPI channel provider of its own (dlopen of libmpi.so; failing when it is
        # not on the library path). tp's ranks trade buffers through mpi4py and use none of
        # IREE's collectives: the variables are hidden while the device is made.
        hidden = {v: os.environ.pop(v) for v in _MPI_WORLD_VARS if v in os.environ}
        try:
            self.config = self.runtime.Config(self.target.driver)
        except (RuntimeError, ValueError) as err:
            raise IreeError(
                f"IREE could not open a {self.target.driver} device: {iree_message(str(err))}"
            ) from None
        finally:
            os.environ.update(hidden)

    def module(self, vmfb: bytes, where: str = "a module") -> Any:
        """The compiled module ``vmfb`` loaded on the device: its functions by name; an
        IreeError naming ``where`` when IREE cannot load it (say, code built for another
        device)."""
        ctx = self.runtime.SystemContext(config=self.config)
        try:
            ctx.add_vm_module(self.runtime.VmModule.copy_buffer(self.config.vm_instance, vmfb))
        except (RuntimeError, ValueError) as err:
            raise IreeError(
                f"{where}: IREE could not load it on its {self.target.driver} device: "
                f"{iree_message(str(err))}"
            ) from None
        self.contexts.append(ctx)
        return ctx.modules.module

    def place(self, value: Any) -> Any:
        # np.ascontiguousarray would make a scalar 1-d: a 0-d port stays 0-d
        return self.runtime.asdevicearray(self.config.device, np.require(value, requirements="C"))


def input_slices(module: ModuleOp) -> dict[tuple[str, int, tuple[tuple[int, int], ...]], ShardOp]:
    """Each chip slice of a host input a program's ``tp.shard`` cuts, by (input, axis,
    ranges) as tp-export's manifest names it."""
    func = entry_function(module)
    ins, _ = ports(func)
    names = {a: p.name for a, p in zip(func.body.block.args, ins, strict=True)}
    out = {}
    for program in func.body.block.ops:
        if not isinstance(program, ChipProgramOp):
            continue
        for op in program.walk():
            src = op.source if isinstance(op, ShardOp) else None
            if isinstance(src, BlockArgument) and src.owner is program.body.block:
                name = names[program.inputs[src.index]]
                sl = op.slice  # type: ignore[union-attr]
                ranges = tuple((int(a), int(n)) for a, n in sl.ranges)
                out.setdefault((name, sl.axis_index, ranges), op)  # type: ignore[arg-type]
    return out


def entry_caller(
    functions: Mapping[str, Any], device: Device, donated: Callable[[Port], bool]
) -> Call:
    """Runs a manifest entry by its compiled function (``functions``, by entry name), an
    argument IREE may write getting a copy of its own unless ``donated``: the host reads
    every other buffer it holds again (iree-org/iree#16168: IREE writes such arguments in
    place). IREE's runtime failing is an IreeError naming the entry, one line."""

    def call(entry: Entry, args: list[Any]) -> tuple[Any, ...]:
        given = [
            device.place(a.to_host()) if port.get("written") and not donated(port) else a
            for a, port in zip(args, entry["arguments"], strict=True)
        ]
        try:
            returned = functions[entry["function"]](*given)
        except (RuntimeError, ValueError) as err:  # what IREE's runtime raises
            raise IreeError(
                f"{where_of(entry)}: IREE failed running it: {iree_message(str(err))}"
            ) from None
        return as_results(returned, len(entry["results"]))

    return call


def code_of(entry: Entry) -> str:
    """The function an entry runs: its own, or the shared one it names (``code``: a part of
    an outlined program's per-chip function, run once per call)."""
    return str(entry.get("code", entry["function"]))


def compile_entries(
    funcs: Mapping[str, FuncOp],
    entries: list[Entry],
    cache: ModuleCache,
    device: Device,
    compiled: dict[str, Any],
) -> dict[str, Any]:
    """Each entry's compiled function by its name: the distinct segment texts not in
    ``compiled`` (functions by text, filled in) compiled as one module, a single compiler
    run; when IREE refuses that module, each text alone, so the error names the chip and
    segment IREE refuses."""
    by_code: dict[str, str] = {}  # a shared function printed once, however many calls
    for e in entries:
        if code_of(e) not in by_code:
            by_code[code_of(e)] = segment_text(funcs[code_of(e)])
    texts = {e["function"]: by_code[code_of(e)] for e in entries}
    new: dict[str, Entry] = {}
    for entry in entries:
        text = texts[entry["function"]]
        if text not in compiled and text not in new:
            new[text] = entry
    if new:
        bundle = bundle_text([funcs[code_of(e)] for e in new.values()])
        try:
            vmfb = cache.get(bundle, "the program's segments")
        except IreeError:
            for text, entry in new.items():
                cache.get(text, where_of(entry))  # raises, naming the segment
            raise
        try:
            module = device.module(vmfb, "the program's segments")
        except IreeError:
            for text, entry in new.items():  # raises, naming the segment
                device.module(cache.get(text, where_of(entry)), where_of(entry))
            raise
        for i, text in enumerate(new):
            compiled[text] = module[f"s{i}"]
    return {e["function"]: compiled[texts[e["function"]]] for e in entries}


@dataclass
class Prepared:
    """Some entries of a program's export compiled and their host inputs placed on one
    device, each distinct function and each input or slice once: what `call` runs them by,
    what `host_input` hands them, ready for a relay (`run_segments`, or one MPI rank's)."""

    manifest: dict[str, Any]
    device: Any
    call: Call
    host_input: Callable[[Port], Any]
    functions: int
    distinct: int
    compile_s: float
    place_s: float
    placed_bytes: int


def prepare(
    module: ModuleOp,
    values: Mapping[str, Any],
    placed: Mapping[ShardOp, np.ndarray] | None = None,
    cache: ModuleCache | None = None,
    chips: Container[int] | None = None,
    host: bool = True,
    driver: str | None = None,
    sliced: Mapping[SliceKey, np.ndarray] | None = None,
) -> Prepared:
    """``module``'s export (a copy's) with the segments of ``chips`` (every chip: None) and,
    with ``host``, ``@host`` compiled by IREE and every host input or slice they read placed
    on the device, once. ``placed``, ``sliced``: the slices the host already loaded
    (`place_weights`: by their ``tp.shard``, and by what they cut for an outlined program's
    calls); any other slice is cut from ``values``. ``driver``: IREE's runtime driver instead of the
    cache's target's (say ``local-sync``, the calling thread alone, for ``local-task``'s pool
    of worker threads; the compiled code is the same)."""
    _, runtime = iree()
    cache = cache or ModuleCache(default_cache_dir())
    func = entry_function(module)
    ins, _ = ports(func)
    host_values = {p.name: v for p, v in zip(ins, bind(ins, values), strict=True)}
    exported = module.clone()
    export_module(exported)
    manifest = manifest_of(exported)
    funcs = {f.sym_name.data: f for f in exported.ops if isinstance(f, FuncOp)}
    entries = [s for s in manifest["segments"] if chips is None or s["chip"] in chips]
    entries += [manifest["host"]] if host else []
    t0 = time.perf_counter()
    target = cache.target if driver is None else replace(cache.target, driver=driver)
    device = Device(runtime, target=target)
    called = compile_entries(funcs, entries, cache, device, {})
    t1 = time.perf_counter()
    slices = input_slices(module)
    placed = placed or {}
    resident: dict[Any, Any] = {}  # each host input and slice on the device, once

    def host_port(port: Port) -> Any:
        key = resident_key(port)
        if key in resident:
            return resident[key]
        if port["kind"] == "input":
            data = host_values[port["name"]]
            if is_placeholder(data):
                raise RuntimeError(f"'{port['name']}' read whole, but never loaded")
        else:
            shard = slices.get(key)
            if shard is not None and shard in placed:
                data = placed[shard]
            elif sliced is not None and key in sliced:
                data = sliced[key]
            else:
                whole = np.asarray(host_values[port["name"]])
                if is_placeholder(whole):
                    raise RuntimeError(f"a slice of '{port['name']}' that was never loaded")
                data = slice_of(whole, port["axis"], key[2])
        resident[key] = device.place(data)
        return resident[key]

    reads = Counter(
        resident_key(p) for e in entries for p in e["arguments"] if p["kind"] in RESIDENT
    )

    def donated(port: Port) -> bool:
        """Whether the argument's buffer may be written: a host input or slice (placed in a
        buffer of its own, aliasing nothing) that no other argument reads, say a chip's
        cache slice, which its update then writes in place as a chip's memory would."""
        return port["kind"] in RESIDENT and reads[resident_key(port)] == 1

    call = entry_caller(called, device, donated)

    for entry in entries:  # every input placed, once
        for port in entry["arguments"]:
            if port["kind"] in RESIDENT:
                host_port(port)
    placed_bytes = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in resident.values())
    return Prepared(
        manifest,
        device,
        call,
        host_port,
        len(called),
        len({id(f) for f in called.values()}),
        t1 - t0,
        time.perf_counter() - t1,
        placed_bytes,
    )


def run_iree(
    module: ModuleOp,
    values: Mapping[str, Any],
    placed: Mapping[ShardOp, np.ndarray] | None = None,
    cache: ModuleCache | None = None,
    sliced: Mapping[SliceKey, np.ndarray] | None = None,
) -> IreeRun:
    """``module`` (per-chip programs with or without their relay) run on IREE: its results
    by name, equal to the reference interpreter's to f32 rounding. ``placed``, ``sliced``:
    the slices the host already loaded (`place_weights`); any other slice is cut from
    ``values``."""
    cache = cache or ModuleCache(default_cache_dir())
    prepared = prepare(module, values, placed, cache, sliced=sliced)
    t0 = time.perf_counter()
    results = run_segments(prepared.manifest, prepared.host_input, prepared.call)
    return IreeRun(
        host_outputs(module, results),
        prepared.functions,
        prepared.distinct,
        cache.compiled,
        cache.hits,
        cache.rebuilt,
        prepared.compile_s,
        prepared.place_s,
        time.perf_counter() - t0,
    )


def host_outputs(module: ModuleOp, results: tuple[Any, ...]) -> dict[str, np.ndarray]:
    """``@host``'s device results as the program's outputs by name, in their dtypes."""
    _, outs = ports(entry_function(module))
    return {
        port.name: np.asarray(r.to_host(), dtype=port.numpy_dtype)
        for port, r in zip(outs, results, strict=True)
    }


RESIDENT = ("input", "shard")
"""The ports the host places on the device once: host inputs, whole or as chip slices."""


def resident_key(port: dict[str, Any]) -> tuple[Any, ...]:
    """A placed port's identity: the input's name, and for a slice its axis and ranges."""
    if port["kind"] == "input":
        return (port["name"],)
    return (port["name"], port["axis"], tuple((int(a), int(n)) for a, n in port["ranges"]))


def where_of(entry: dict[str, Any]) -> str:
    """A manifest entry as an error names it: its chip and segment, or the host's part."""
    if "chip" in entry:
        return f"chip {entry['chip']} segment {entry['function']}"
    return "the host's @host"


def as_results(returned: Any, n: int) -> tuple[Any, ...]:
    """What an IREE function returned as a tuple of ``n`` (it returns one value bare)."""
    if n == 0:
        return ()
    if n == 1 and not isinstance(returned, tuple | list):
        return (returned,)
    return tuple(returned)
