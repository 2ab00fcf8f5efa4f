"""tp-export's segments run on MPI ranks, rank c as chip c, each running what ``call`` runs
(IREE's compiled functions in `run_mpi_iree`; anything else in the tests).

`run_rank` is one rank's part of the relay: its own chip's ``run`` steps in the relay's
order, a ``copy`` from its chip a send of that buffer (as a host array, non-blocking) posted
right after the rank's run that made it (`rank_order`), a ``copy`` to its chip a receive
(blocking) handed to ``place`` — its device — before a segment reads it. Every rank takes
its runs and receives in the relay's order and posts each send no later than the relay lists
it, and a send never waits, so a receive always has its send posted by a rank that is not
waiting on it: the ranks cannot deadlock. Buffers travel
through mpi4py's ``pkl5`` (pickle protocol 5, the array's bytes out of band: no copy into
the pickle, no size limit of one MPI message).

`run_mpi_iree` is ``tp-run --mpi N --backend iree``'s rank: inputs read on rank 0 and
broadcast, each rank loading only its own weights and slices (`place_weights` with
``chip``), compiling only its own chip's distinct segments (the disk cache is shared; its
entries are written atomically, so ranks compiling one text at once never corrupt it) and
placing only what they read; rank 0 gathers the chips' outputs and runs ``@host`` on IREE.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.runtime import mpi_wait
from tp_dialect.runtime.checkpoint import TensorSource, place_weights
from tp_dialect.runtime.iree_exec import ModuleCache, default_cache_dir, host_outputs, prepare
from tp_dialect.runtime.launch import threads_per_rank
from tp_dialect.runtime.mpi_exec import MpiRun, RankStats, check_world, load_mpi, peak_rss
from tp_dialect.runtime.segments import Call, Entry, Port, run_host, run_segment

Finished = dict[tuple[int, int], Any]
"""A chip's outputs by (chip, index), as ``@host``'s ``output`` arguments name them."""


def to_host(value: Any) -> np.ndarray:
    """``value`` as a host array: an IREE device array copied back, anything else as is."""
    return np.asarray(value.to_host() if hasattr(value, "to_host") else value)


class Links:
    """Buffers sent and received between ranks by name, each name its own tag; counts the
    bytes and the seconds spent sending, receiving and waiting."""

    def __init__(self, comm: Any, names: list[str]) -> None:
        from mpi4py.util import pkl5  # mpi4py is loaded only when ranks run (`load_mpi`)

        self.comm = pkl5.Intracomm(comm)
        self.pkl5 = pkl5
        self.tags = {name: i for i, name in enumerate(sorted(set(names)))}
        self.requests: list[Any] = []
        self.seconds = 0.0
        self.sent = self.received = 0

    def send(self, name: str, value: np.ndarray, dest: int) -> None:
        t0 = time.perf_counter()
        self.requests.append(self.comm.isend(value, dest=dest, tag=self.tags[name]))
        self.sent += value.nbytes
        self.seconds += time.perf_counter() - t0

    def recv(self, name: str, source: int) -> np.ndarray:
        t0 = time.perf_counter()
        mpi_wait.arrived(self.comm, source, self.tags[name])
        value = np.asarray(self.comm.recv(source=source, tag=self.tags[name]))
        self.received += value.nbytes
        self.seconds += time.perf_counter() - t0
        return value

    def drain(self) -> None:
        """Wait for every send posted (the request keeps its buffer alive until then)."""
        t0 = time.perf_counter()
        if mpi_wait.spinning():
            self.pkl5.Request.waitall(self.requests)
        else:
            mpi_wait.poll(lambda: bool(self.pkl5.Request.testall(self.requests)[0]))
        self.requests.clear()
        self.seconds += time.perf_counter() - t0


def copied_names(manifest: dict[str, Any]) -> list[str]:
    """The buffers the relay in ``manifest`` copies from chip to chip."""
    return [step["copy"] for step in manifest["relay"] if "copy" in step]


def rank_order(manifest: dict[str, Any], rank: int) -> list[dict[str, Any]]:
    """The relay's steps as rank ``rank`` takes them: each copy from its chip moved up to
    right after the rank's own run that made the buffer, everything else in the relay's
    order. The relay is one order for a host doing every step; a rank walking it as it is
    would compute its next segment before posting a send the relay lists after that run,
    and the receiver would wait the whole segment (MPI moves a send only while its sender
    calls MPI). A send never waits, so posting it earlier cannot deadlock."""
    made_by = {
        s["function"]: [p["name"] for p in s["results"] if p["kind"] == "send"]
        for s in manifest["segments"]
        if s["chip"] == rank
    }
    relay = manifest["relay"]
    made: dict[str, int] = {}  # a buffer's latest making run (its place in the relay)
    after: dict[int, list[dict[str, Any]]] = {}
    moved: set[int] = set()
    for i, step in enumerate(relay):
        if "run" in step:
            made.update((name, i) for name in made_by.get(step["run"], ()))
        elif step["from"] == rank and step["copy"] in made:
            after.setdefault(made[step["copy"]], []).append(step)
            moved.add(i)
    order: list[dict[str, Any]] = []
    for i, step in enumerate(relay):
        if i not in moved:
            order.append(step)
        order.extend(after.get(i, ()))
    return order


def run_rank(
    manifest: dict[str, Any],
    rank: int,
    comm: Any,
    host_input: Callable[[Port], Any],
    call: Call,
    place: Callable[[np.ndarray], Any] = lambda a: a,
    links: Links | None = None,
) -> Finished:
    """Chip ``rank``'s outputs once it has run its segments by ``call`` in the relay's
    order, trading the relay's copies with the other ranks over ``comm`` (received buffers
    handed to ``place``). Given ``links``, its sends are left posted for the caller to
    `Links.drain`; without, they go through links of its own, awaited before it returns."""
    own = links or Links(comm, copied_names(manifest))
    segments = {s["function"]: s for s in manifest["segments"]}
    inbox: dict[str, Any] = {}
    outbox: dict[str, Any] = {}
    on_host: dict[str, np.ndarray] = {}  # a buffer copied back once, however many receive it
    carried: dict[str, Any] = {}
    finished: Finished = {}
    for step in rank_order(manifest, rank):
        if "copy" in step:
            name = step["copy"]
            if step["from"] == rank:
                if name not in on_host:
                    on_host[name] = to_host(outbox[name])
                own.send(name, on_host[name], step["to"])
            elif step["to"] == rank:
                inbox[name] = place(own.recv(name, step["from"]))
            continue
        seg = segments[step["run"]]
        if seg["chip"] != rank:
            continue
        for port, r in run_segment(seg, inbox, carried, host_input, call):
            if port["kind"] == "send":
                outbox[port["name"]] = r
                on_host.pop(port["name"], None)
            else:
                finished[(rank, port["index"])] = r
    if links is None:
        own.drain()
    return finished


def gather_outputs(comm: Any, finished: Finished, place: Callable[[np.ndarray], Any]) -> Finished:
    """Every chip's outputs on rank 0 (another rank's copied back as host arrays and handed
    to ``place``; rank 0's own kept as they are), an empty dict on the other ranks."""
    rank = comm.Get_rank()
    sent = None if rank == 0 else {k: to_host(v) for k, v in finished.items()}
    from mpi4py.util import pkl5  # loaded when ranks run; outputs out of band, as links'

    mpi_wait.barrier(comm)  # rank 0 waits for the slowest chip without spinning
    gathered = pkl5.Intracomm(comm).gather(sent, root=0)
    if rank != 0:
        return {}
    out = dict(finished)
    for part in gathered[1:]:
        out.update({k: place(v) for k, v in part.items()})
    return out


def run_mpi_iree(
    module: ModuleOp,
    source: Callable[[Mapping[str, np.ndarray]], TensorSource],
    inputs: Callable[[], Mapping[str, np.ndarray]],
    comm: Any = None,
    casting: str = "safe",
    cache: ModuleCache | None = None,
) -> MpiRun | None:
    """``module``'s per-chip programs (flat or outlined) run on IREE with rank c as chip c:
    on rank 0 the program's results by name (the in-process IREE run's) and every rank's
    stats, None on the other ranks. ``inputs`` is called on rank 0 only, ``source`` on every
    rank with those inputs. A world that does not fit the programs raises MpiError on every
    rank alike before anything is loaded; any other error is its rank's own (the caller
    aborts)."""
    mpi = load_mpi()
    comm = mpi.COMM_WORLD if comm is None else comm
    rank = comm.Get_rank()
    check_world(module, comm.Get_size(), "direct")
    given = inputs() if rank == 0 else None
    t0 = time.perf_counter()
    mpi_wait.barrier(comm)  # rank 0 has read the inputs (the others wait without spinning)
    given = comm.bcast(given, root=0)
    bcast_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    placement = place_weights(
        module, source(given), given, chip=rank, casting=casting, through_calls=True
    )
    # A rank's share of the cores, as for BLAS (`threads_per_rank`): when that is one core,
    # IREE's worker pool would only contend with the other ranks and with MPI's progress.
    cache = cache or ModuleCache(default_cache_dir())
    alone = cache.target.driver == "local-task" and threads_per_rank(comm.Get_size()) == 1
    driver = "local-sync" if alone else None
    ready = prepare(
        module,
        placement.values,
        placement.placed,
        cache,
        {rank},
        rank == 0,
        driver,
        placement.sliced,
    )
    load = time.perf_counter() - t0
    compute = 0.0

    def timed(entry: Entry, args: list[Any]) -> tuple[Any, ...]:
        nonlocal compute
        t = time.perf_counter()
        try:
            return ready.call(entry, args)
        finally:
            compute += time.perf_counter() - t

    links = Links(comm, copied_names(ready.manifest))
    links.seconds = bcast_s
    mpi_wait.barrier(comm)  # every rank loaded and compiled: the step starts together
    t_step = time.perf_counter()
    finished = run_rank(
        ready.manifest, rank, comm, ready.host_input, timed, ready.device.place, links
    )
    links.drain()
    everything = gather_outputs(comm, finished, ready.device.place)
    results = run_host(ready.manifest, everything, ready.host_input, timed) if rank == 0 else None
    outputs = host_outputs(module, results) if results is not None else {}
    stats = RankStats(
        rank,
        rank,
        ready.placed_bytes,
        peak_rss(),
        load,
        time.perf_counter() - t_step,
        compute,
        links.seconds,
        links.sent,
        links.received,
    )
    every = comm.gather(stats, root=0)
    return MpiRun(outputs, every) if rank == 0 else None
