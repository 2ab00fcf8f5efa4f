"""Per-chip programs run on MPI ranks: rank c is chip c (mpi4py over MPICH).

Every rank parses the same module and runs only its own ``tp.chip_program`` on a
`ChipRunner`, with only its own weights: its ``tp.shard`` slices, read lazily from the
checkpoint, and the spine weights its program reads (`place_weights` with ``chip``). The
inputs are read on rank 0 and broadcast. At each ``tp.link`` a rank posts what the halt sends
and receives what it receives, then resumes:

* ``relay="direct"``: each sent buffer goes straight to every rank whose program receives it
  (a non-blocking ``Isend`` of the contiguous bytes, tagged by the buffer name's number).
* ``relay="host"``: one more rank (rank N, the host) performs the relay's ``tp.copy`` steps
  in their order: it receives each buffer once from the chip that sends it and sends it to
  every chip the relay copies it to; chips send to and receive from the host only.

Every all-reduce (fold, oneshot, twoshot, ring) reaches per-chip programs already spelled as
links and the chips' own sections — a twoshot or ring as the reduce-scatter and all-gather
tp-transfers writes out (a ring whose tensor has no axis of N elements never gets here:
tp-link-points refuses it) —, so the sums happen in the same order as on the interpreter:
the results are bitwise those of `run_linked`. The chips' ``tp.finish`` values
are gathered to rank 0, which runs the host's statements (``tp.unshard`` ...) on them.

Test hook: with ``TP_MPI_TEST_EXIT_RANK=R`` in the environment, rank R kills itself
(``SIGKILL``) on arriving at its first halt, as a rank killed mid-step would. With
``TP_MPI_PID_DIR=D`` (set by ``tp-run --mpi`` and ``tp-generate --mpi``), a rank that fails
records its error line in ``D``, and each rank's guard (`rank_guard`) how it died, so the
launcher can name the rank even when mpiexec's teardown lost its output.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.ir import Attribute, BlockArgument

from tp_dialect.analysis.calls.chip_runs import (
    expanded_name,
    flat_copy,
    has_chip_calls,
    program_links,
)
from tp_dialect.analysis.rounds import Copy
from tp_dialect.analysis.schedule.programs import check_programs, relay_steps
from tp_dialect.analysis.values import count_run
from tp_dialect.dtypes import numpy_dtype
from tp_dialect.errors import TpError
from tp_dialect.grid import CHIPS_ATTR, MAX_LOWERED_CHIPS, stated_chips
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime import mpi_wait, rank_guard
from tp_dialect.runtime.checkpoint import TensorSource, is_placeholder, place_weights
from tp_dialect.runtime.host_memory import bytes_text
from tp_dialect.signature import entry_function, ports

if TYPE_CHECKING:  # the interpreter is loaded only when ranks run (not to list flags)
    from tp_dialect.runtime.relay_exec import ChipRunner

RELAYS: tuple[str, ...] = ("direct", "host")
TEST_EXIT_ENV = "TP_MPI_TEST_EXIT_RANK"
PID_DIR_ENV = "TP_MPI_PID_DIR"


def record_error(rank: int, line: str) -> None:
    """With ``TP_MPI_PID_DIR`` set, ``rank``'s error ``line`` written to a file there too:
    the launcher reads it when mpiexec, tearing the world down after an abort, lost the
    rank's stderr on the way (it forwards a rank's output only while the rank lives). Never
    raises: the line is on stderr already, and the abort that follows must happen."""
    directory = os.environ.get(PID_DIR_ENV)
    if directory:  # whole or not at all: another rank's abort may end this one mid-write
        path = os.path.join(directory, f"error-{rank}")
        with contextlib.suppress(OSError):
            with open(path + ".part", "w") as f:
                f.write(line)
            os.replace(path + ".part", path)


def recorded_errors(directory: str) -> list[str]:
    """The error lines `record_error` recorded in ``directory``, by rank."""
    found = []
    for name in os.listdir(directory):
        if name.startswith("error-") and name[6:].isdigit():
            with open(os.path.join(directory, name)) as f:
                found.append((int(name[6:]), f.read().strip()))
    return [line for _, line in sorted(found) if line]


def guarded(ranks: int, command: list[str], directory: str, mpiexec: str) -> list[str]:
    """The mpiexec line running ``command`` as ``ranks`` ranks, each under its `rank_guard`,
    which records in ``directory`` how its rank died (`first_death` reads it)."""
    guard = [sys.executable, "-I", "-S", rank_guard.__file__, directory]
    return [mpiexec, "-n", str(ranks), *guard, *command]


def first_death(directory: str, host_rank: int | None = None) -> str | None:
    """The rank whose guard recorded its death first in ``directory``, and how: ``rank 1
    (chip 1) died: Killed (signal 9)`` (``the host`` for ``host_rank``); None when none died."""
    found = []
    for name in os.listdir(directory):
        rank = name.removeprefix(rank_guard.DIED_PREFIX)
        if name.startswith(rank_guard.DIED_PREFIX) and rank.isdigit():
            with open(os.path.join(directory, name)) as f:
                when, _, reason = f.read().partition(" ")
            if when.isdigit():
                found.append((int(when), int(rank), reason.strip()))
    if not found:
        return None
    _, rank, reason = min(found)
    chip = "the host" if rank == host_rank else f"chip {rank}"
    return f"rank {rank} ({chip}) died: {reason}"


class MpiError(TpError):
    """A one-line error of an MPI run."""


def load_mpi() -> ModuleType:
    """mpi4py's ``MPI`` module, initialised; raises MpiError (one line) when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise MpiError(
            f"cannot run on MPI: {err} (install mpi4py and an MPI, e.g. pip install mpich mpi4py)"
        ) from None
    return MPI


@dataclass(frozen=True)
class RankStats:
    """What one rank spent: weights it loaded, its peak memory, its time."""

    rank: int
    chip: int | None  # None: the host rank of relay=host
    weight_bytes: int
    peak_rss_bytes: int
    load_s: float  # placing its weights and binding its inputs
    step_s: float  # the step, every rank loaded to every rank done (the same on all ranks)
    compute_s: float  # running its program
    comm_s: float  # sending, receiving and waiting for what it receives
    sent_bytes: int
    received_bytes: int


def format_rank_stats(stats: list[RankStats]) -> str:
    """A table of ``stats``, one row per rank, and what each column means."""
    rows = [
        "rank  chip  weights loaded  peak RSS     load        step        compute    comm+wait"
        "  sent       received"
    ]
    for s in stats:
        chip = "host" if s.chip is None else str(s.chip)
        rows.append(
            f"{s.rank:<5} {chip:<5} {bytes_text(s.weight_bytes):>14}  "
            f"{bytes_text(s.peak_rss_bytes):>11}"
            f"  {s.load_s * 1e3:>7.1f} ms  {s.step_s * 1e3:>7.1f} ms"
            f"  {s.compute_s * 1e3:>7.1f} ms  {s.comm_s * 1e3:>6.1f} ms  "
            f"{bytes_text(s.sent_bytes):>9}  {bytes_text(s.received_bytes):>9}"
        )
    return "\n".join(rows)


@dataclass
class MpiRun:
    """Rank 0's view of the run: the program's results by name and every rank's stats."""

    outputs: dict[str, np.ndarray]
    stats: list[RankStats]


def program_chips(module: ModuleOp) -> int:
    """The chips ``module`` runs on, one rank each: as many as its per-chip programs
    (numbered 0..N-1), or, before it is split into them, the chip count it states, which the
    lowering gives a program each (at most `MAX_LOWERED_CHIPS`). Reads no weights; raises
    MpiError when there is nothing to run on ranks."""
    chips = _programs(module)
    if chips:
        return len(chips)
    n = stated_chips(module)
    if n is None:
        raise MpiError(
            f"the program states no chip count (module attributes {{{CHIPS_ATTR} = N : i64}}): "
            "MPI runs one rank per chip"
        )
    if n > MAX_LOWERED_CHIPS:
        raise MpiError(
            f"the program states {CHIPS_ATTR} = {n}: it is lowered to per-chip programs, one "
            f"a rank, for at most {MAX_LOWERED_CHIPS} chips"
        )
    return n


def check_world(module: ModuleOp, size: int, relay: str) -> int:
    """The number of chips of ``module``'s per-chip programs, once a world of ``size`` ranks
    fits them (one per chip, plus the host for ``relay="host"``); raises MpiError
    otherwise (alike on every rank), before anything is loaded."""
    if relay not in RELAYS:
        raise MpiError(f"unknown relay '{relay}' (one of {', '.join(RELAYS)})")
    chips = _programs(module)
    if not chips:
        raise MpiError("the program has no per-chip programs to run on ranks")
    want = len(chips) + (relay == "host")
    if size != want:
        host = " plus the host rank (--relay host)" if relay == "host" else ""
        raise MpiError(
            f"world size {size} does not fit the program: it has {len(chips)} chip(s){host}, "
            f"so it runs on {want} rank(s)"
        )
    return len(chips)


def _programs(module: ModuleOp) -> list[int]:
    """The chips of ``module``'s per-chip programs, in order (none before it is split);
    MpiError when they are not 0..N-1."""
    func = entry_function(module)
    chips = sorted(op.chip_index for op in func.body.block.ops if isinstance(op, ChipProgramOp))
    if chips != list(range(len(chips))):
        raise MpiError(f"the programs' chips {chips} are not 0..{len(chips) - 1}")
    return chips


def linalg_ops(module: ModuleOp, rank: int) -> int:
    """How many ``linalg.generic`` ops rank ``rank`` runs in its step: those of chip
    ``rank``'s program (each per-chip function it calls once per call), and on rank 0 also the
    host's statements' (a rank past the last chip, the host of ``relay="host"``, runs none) —
    what its progress counts up to."""
    func = entry_function(module)
    count = 0
    for op in func.body.block.ops:
        chip = op.chip_index if isinstance(op, ChipProgramOp) else 0  # the host's: rank 0
        if chip == rank:
            count += count_run(op, GenericOp)  # a per-chip function once per call
    return count


class Wire:
    """Point-to-point transfers of named buffers: bytes for tensors, pickles otherwise."""

    def __init__(self, comm: Any, mpi: ModuleType, names: list[str]) -> None:
        self.comm, self.mpi = comm, mpi
        self.tags = {name: i for i, name in enumerate(sorted(names))}
        bound = comm.Get_attr(mpi.TAG_UB)
        if bound is not None and len(self.tags) > bound:
            raise MpiError(f"{len(self.tags)} buffer names exceed MPI's {bound} tags")
        self.requests: list[Any] = []
        self.keep: list[Any] = []  # buffers alive until their sends complete
        self.seconds = 0.0
        self.sent = 0
        self.received = 0

    def send(self, name: str, value: Any, type_: Attribute, dest: int) -> None:
        t0 = time.perf_counter()
        tag = self.tags[name]
        if isinstance(type_, TensorType):
            data = np.ascontiguousarray(value, dtype=numpy_dtype(type_.element_type))
            raw = data.reshape(-1).view(np.uint8)
            self.keep.append(raw)
            self.requests.append(self.comm.Isend([raw, self.mpi.BYTE], dest=dest, tag=tag))
            self.sent += raw.nbytes
        else:
            self.requests.append(self.comm.isend(value, dest=dest, tag=tag))
        self.seconds += time.perf_counter() - t0

    def recv(self, name: str, type_: Attribute, source: int) -> Any:
        t0 = time.perf_counter()
        tag = self.tags[name]
        if isinstance(type_, TensorType):
            shape = tuple(type_.get_shape())
            value: Any = np.empty(shape, numpy_dtype(type_.element_type))
            raw = value.reshape(-1).view(np.uint8)
            mpi_wait.arrived(self.comm, source, tag)
            self.comm.Recv([raw, self.mpi.BYTE], source=source, tag=tag)
            self.received += raw.nbytes
        else:
            mpi_wait.arrived(self.comm, source, tag)
            value = self.comm.recv(source=source, tag=tag)
        self.seconds += time.perf_counter() - t0
        return value

    def drain(self) -> None:
        t0 = time.perf_counter()
        mpi_wait.settle(self.mpi, self.requests)
        self.requests.clear()
        self.keep.clear()
        self.seconds += time.perf_counter() - t0


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def run_mpi(
    module: ModuleOp,
    source: Callable[[Mapping[str, np.ndarray]], TensorSource],
    inputs: Callable[[], Mapping[str, np.ndarray]],
    storage: bool = False,
    relay: str = "direct",
    comm: Any = None,
    casting: str = "safe",
) -> MpiRun | None:
    """``module``'s per-chip programs run with rank c as chip c (``relay="host"``: and the
    relay's copies on rank N): on rank 0 the program's results by name (bitwise those of the
    single-process interpreter) and every rank's stats, None on the other ranks. ``inputs``
    is called on rank 0 only (its values are broadcast); ``source`` on chip ranks, with
    those values, each rank then loading only its own share (converted by ``casting``). A
    world that does not fit the programs raises MpiError on every rank alike before anything
    is loaded; any other error is its rank's own, and the caller must abort the world
    (`abort`)."""
    from tp_dialect.runtime.reference import bind
    from tp_dialect.runtime.relay_exec import ChipRunner, host_results

    mpi = load_mpi()
    comm = mpi.COMM_WORLD if comm is None else comm
    rank = comm.Get_rank()
    chips = check_world(module, comm.Get_size(), relay)
    if has_chip_calls(module):
        # A rank loads only its own shards, by the tp.shard op that cuts each; a per-chip
        # function's shard op cuts a new layer's weight at every call, so the rank runs the
        # flat programs its calls stand for (the same ops in the same order: the same bits).
        module, _ = flat_copy(module)
    func = entry_function(module)
    index = check_programs(func)
    wire = Wire(comm, mpi, list(index.sent))
    given = inputs() if rank == 0 else None
    t0 = time.perf_counter()
    mpi_wait.barrier(comm)  # rank 0 has read the inputs (the others wait without spinning)
    given = comm.bcast(given, root=0)
    wire.seconds += time.perf_counter() - t0
    host_rank = chips if relay == "host" else None
    compute = load = 0.0
    weight_bytes = 0
    finished: tuple[Any, ...] | None = None
    args: list[Any] = []
    placed: dict[Any, np.ndarray] = {}
    runner: ChipRunner | None = None
    if rank != host_rank:
        t0 = time.perf_counter()
        placement = place_weights(module, source(given), given, chip=rank, casting=casting)
        ins, _ = ports(func)
        args = bind(ins, placement.values)
        placed = placement.placed
        weight_bytes = placement.placed_bytes + sum(
            np.asarray(v).nbytes
            for port, v in zip(ins, args, strict=True)
            if port.key_in(given) is None and not is_placeholder(v)
        )
        program = index.programs[rank]
        own = []
        for v in program.inputs:
            assert isinstance(v, BlockArgument)
            own.append(args[v.index])
        runner = ChipRunner(module, program, own, placed, storage)
        load = time.perf_counter() - t0
    mpi_wait.barrier(comm)  # every rank loaded: the step starts together
    t_step = time.perf_counter()
    if runner is None:
        _host_relay(func, index, wire)
    else:
        compute += run_chip(runner, program, index, wire, host_rank)
        finished = runner.outputs
    wire.drain()
    mpi_wait.barrier(comm)  # the step ends when the last rank is done
    step = time.perf_counter() - t_step
    stats = RankStats(
        rank,
        None if rank == host_rank else rank,
        weight_bytes,
        peak_rss(),
        load,
        step,
        compute,
        wire.seconds,
        wire.sent,
        wire.received,
    )
    gathered = comm.gather((finished, stats), root=0)
    if rank != 0:
        return None
    assert gathered is not None
    by_chip = {c: gathered[c][0] for c in range(chips)}
    results = host_results(module, func, args, by_chip, placed, storage)
    _, outs = ports(func)
    named = {
        port.name: np.asarray(r, dtype=port.numpy_dtype)
        for port, r in zip(outs, results, strict=True)
    }
    return MpiRun(named, [s for _, s in gathered])


def run_chip(
    runner: ChipRunner,
    program: ChipProgramOp,
    index: Any,
    wire: Wire,
    host_rank: int | None,
) -> float:
    """Run ``runner`` to its end, trading buffers at each of its halts; its compute time."""
    chip = runner.chip
    later = [link.halt for link in program_links(program) if link.halt != 0]
    receivers: dict[str, list[int]] = {}
    for c, names in index.received.items():
        for name in names:
            receivers.setdefault(name, []).append(c)
    die = os.environ.get(TEST_EXIT_ENV) == str(chip)
    compute = 0.0
    for halt in [*later, None]:
        standing = runner.standing
        if standing is not None:
            link, tag = standing
            for name, result in zip(link.receives, link.received, strict=True):
                name = expanded_name(name, tag)  # a per-chip call's own buffer
                src = index.sent[name].chip if host_rank is None else host_rank
                runner.inbox[name] = wire.recv(name, result.type, src)
        t0 = time.perf_counter()
        runner.run_to(-1 if halt is None else halt)
        compute += time.perf_counter() - t0
        if die:  # the test hook: a rank killed mid-step
            os.kill(os.getpid(), signal.SIGKILL)
            os._exit(9)
        arrived = runner.standing
        if halt is None or arrived is None:
            break
        link, tag = arrived
        for name, value in zip(link.sends, link.sent, strict=True):
            name = expanded_name(name, tag)
            dests = sorted(receivers.get(name, [])) if host_rank is None else [host_rank]
            for dest in dests:
                wire.send(name, runner.outbox[name], value.type, dest)
            runner.outbox.pop(name, None)
    if runner.outputs is None:
        raise MpiError(f"chip {chip} did not reach its tp.finish")
    return compute


def _host_relay(func: Any, index: Any, wire: Wire) -> None:
    """The host rank's part of relay=host: each ``tp.copy`` in the relay's order, a buffer
    received once from the chip that sends it and sent on to each chip it is copied to."""
    held: dict[str, Any] = {}
    for step in relay_steps(func):
        if not isinstance(step, Copy):
            continue  # run_to: the chips run themselves, as their receives arrive
        type_ = index.sent[step.tensor].type
        if step.tensor not in held:
            held[step.tensor] = wire.recv(step.tensor, type_, step.src)
        wire.send(step.tensor, held[step.tensor], type_, step.dst)


def abort(comm: Any = None, code: int = 1) -> None:
    """End every rank of the world now (after this rank has said why): ``MPI_Abort``."""
    mpi = load_mpi()
    (mpi.COMM_WORLD if comm is None else comm).Abort(code)
