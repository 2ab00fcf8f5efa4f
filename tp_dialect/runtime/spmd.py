"""SPMD programs over xDSL's ``mpi`` dialect (tp-to-mpi's) run on the interpreter: one thread
per rank, each rank's messages through in-process queues.

Every rank runs the entry function on the same inputs with its own interpreter; ``mpi`` ops
mean what MPI says: ``mpi.comm.rank``/``mpi.comm.size`` the rank and the world's size,
``mpi.unwrap_memref`` a buffer's storage, element count and type, ``mpi.isend`` a copy of
the first ``count`` elements to ``(dest, tag)``, ``mpi.recv`` a blocking receive of exactly
``count`` elements of the buffer's type from ``(source, tag)`` written into the buffer
(messages between one pair under one tag arrive in order). A send completes only when it is
received — MPI's least (synchronous) guarantee, so a program that needs buffering to finish
deadlocks here as it could on a real MPI: ``mpi.send`` blocks until then, ``mpi.waitall``
until its requests' sends are. A rank waiting longer than ``timeout`` seconds, a count or
type that does not match, or a failure on any rank stops the run: the first failure is
raised (an error at an op as it is, so a tool locates it; a wait as a `SpmdError` naming the
rank and what it waits for). Rank 0's results are the run's.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from xdsl.dialects import mpi
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from tp_dialect.errors import TpError
from tp_dialect.ops import ShardOp
from tp_dialect.runtime import mpi_wait
from tp_dialect.runtime.binding import bind
from tp_dialect.runtime.numpy_impls import LocatingInterpreter, NumpyFunctions, own_storage
from tp_dialect.signature import entry_function, ports
from tp_dialect.xdsl_compat import func_functions


class SpmdError(RuntimeError, TpError):
    """An SPMD run that failed on a rank (one line for the user)."""


class World:
    """The ranks' mailboxes: one FIFO per (source, dest, tag) of messages, each with the
    event its receiver sets."""

    def __init__(self, size: int, timeout: float) -> None:
        self.size, self.timeout = size, timeout
        self._boxes: dict[tuple[int, int, int], queue.Queue[tuple[np.ndarray, threading.Event]]]
        self._boxes = {}
        self._lock = threading.Lock()
        self.failed = threading.Event()

    def _box(self, source: int, dest: int, tag: int) -> queue.Queue[Any]:
        with self._lock:
            return self._boxes.setdefault((source, dest, tag), queue.Queue())

    def send(self, source: int, dest: int, tag: int, data: np.ndarray) -> threading.Event:
        """Post a copy of ``data``; the event is set when it is received."""
        if not 0 <= dest < self.size:
            raise SpmdError(f"rank {source} sends to rank {dest}, outside the {self.size} ranks")
        taken = threading.Event()
        self._box(source, dest, tag).put((np.array(data, copy=True), taken))
        return taken

    def _wait(self, ready: Callable[[float], Any], rank: int, what: str) -> Any:
        """``ready(step)`` until it answers (not None), a rank fails, or the timeout."""
        waited = 0.0
        while waited < self.timeout:
            if self.failed.is_set():
                raise _Stopped()
            found = ready(0.1)
            if found is not None:
                return found
            waited += 0.1
        raise SpmdError(f"rank {rank} waited {self.timeout:g} s {what}: the ranks deadlock")

    def receive(self, source: int, dest: int, tag: int, like: np.ndarray) -> np.ndarray:
        """The next message from ``source`` to ``dest`` under ``tag`` (``like``: the buffer it
        is expected to fill, which MPI needs and the mailboxes check after)."""
        box = self._box(source, dest, tag)

        def ready(step: float) -> np.ndarray | None:
            try:
                data, taken = box.get(timeout=step)
            except queue.Empty:
                return None
            taken.set()
            return data

        return self._wait(ready, dest, f"for tag {tag} from rank {source}")

    def complete(self, taken: threading.Event, rank: int, dest: int, tag: int) -> None:
        """Return once the send ``taken`` stands for has been received."""
        self._wait(
            lambda step: True if taken.wait(step) else None,
            rank,
            f"for rank {dest} to receive tag {tag}",
        )


class _Stopped(Exception):
    """A rank stopped because another failed (not the failure to report)."""


@register_impls
class MpiFunctions(InterpreterFunctions):
    """The ``mpi`` ops one rank runs, on numpy buffers (module docstring)."""

    def __init__(self, rank: int, world: World) -> None:
        self.rank, self.world = rank, world

    @impl(mpi.CommRankOp)
    def run_rank(self, interpreter: Interpreter, op: mpi.CommRankOp, args: PythonValues):
        return (self.rank,)

    @impl(mpi.CommSizeOp)
    def run_size(self, interpreter: Interpreter, op: mpi.CommSizeOp, args: PythonValues):
        return (self.world.size,)

    @impl(mpi.UnwrapMemRefOp)
    def run_unwrap(self, interpreter: Interpreter, op: mpi.UnwrapMemRefOp, args: PythonValues):
        buffer = args[0]  # the "pointer" is the buffer itself
        return (buffer, int(np.size(buffer)), np.asarray(buffer).dtype)

    @impl(mpi.AllocateTypeOp)
    def run_allocate(self, interpreter: Interpreter, op: mpi.AllocateTypeOp, args: PythonValues):
        return ([None] * int(args[0]),)

    @impl(mpi.VectorGetOp)
    def run_get(self, interpreter: Interpreter, op: mpi.VectorGetOp, args: PythonValues):
        return ((args[0], int(args[1])),)

    def _send(self, args: PythonValues) -> tuple[Any, int, int]:
        buffer, count, _, dest, tag = args[:5]
        flat = np.asarray(buffer).reshape(-1)
        taken = self.world.send(self.rank, int(dest), int(tag), flat[: int(count)])
        return taken, int(dest), int(tag)

    @impl(mpi.IsendOp)
    def run_isend(self, interpreter: Interpreter, op: mpi.IsendOp, args: PythonValues):
        requests, index = args[5]
        requests[index] = self._send(args)  # waitall completes it
        return ()

    @impl(mpi.SendOp)
    def run_send(self, interpreter: Interpreter, op: mpi.SendOp, args: PythonValues):
        taken, dest, tag = self._send(args)
        self.world.complete(taken, self.rank, dest, tag)  # blocks until received
        return ()

    @impl(mpi.RecvOp)
    def run_recv(self, interpreter: Interpreter, op: mpi.RecvOp, args: PythonValues):
        buffer, count, dtype, source, tag = args
        like = np.empty(int(count), dtype)  # what the receive expects: MPI sizes it so
        data = self.world.receive(int(source), self.rank, int(tag), like)
        if data.size != int(count) or data.dtype != dtype:
            raise SpmdError(
                f"rank {self.rank} receives {count} {dtype} under tag {tag} from rank "
                f"{source}, which sent {data.size} {data.dtype}"
            )
        np.asarray(buffer).reshape(-1)[: int(count)] = data
        return () if not op.results else (None,)

    @impl(mpi.WaitallOp)
    def run_waitall(self, interpreter: Interpreter, op: mpi.WaitallOp, args: PythonValues):
        requests, count = args
        for sent in requests[: int(count)]:
            if sent is not None:
                self.world.complete(sent[0], self.rank, sent[1], sent[2])
        return () if not op.results else (None,)


def run_rank(
    module: ModuleOp,
    values: Mapping[str, Any],
    rank: int,
    world: Any,
    storage: bool = False,
    placed: dict[ShardOp, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Rank ``rank``'s run of ``module``'s entry on ``values``, its messages through
    ``world`` (`World`, or `CommWorld` over MPI itself); its results by name."""
    func = entry_function(module)
    ins, outs = ports(func)
    interpreter = LocatingInterpreter(module)
    interpreter.register_implementations(func_functions())
    interpreter.register_implementations(NumpyFunctions(placed, storage=storage))
    interpreter.register_implementations(MpiFunctions(rank, world))
    args = bind(ins, values)
    if storage:
        args = [own_storage(a) for a in args]
    results = interpreter.call_op(func, tuple(args))
    return {
        port.name: np.asarray(r, dtype=port.numpy_dtype)
        for port, r in zip(outs, results, strict=True)
    }


def run_spmd(
    module: ModuleOp,
    values: Mapping[str, Any],
    ranks: int,
    timeout: float = 600.0,
    storage: bool = False,
    placed: dict[ShardOp, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """The entry function of ``module`` run by ``ranks`` ranks on ``values`` (every rank the
    same inputs), a thread each, messages between them in process; rank 0's results by
    name. With ``storage``, in-place updates overwrite their destination (each rank its own
    copy of the inputs), as `run_program`'s storage semantics; ``placed``: slices already
    cut for the ``tp.shard`` ops (shared, read only)."""
    world = World(ranks, timeout)
    results: list[dict[str, np.ndarray] | None] = [None] * ranks
    errors: list[tuple[int, BaseException]] = []  # in the order they happened

    def rank_main(rank: int) -> None:
        try:
            results[rank] = run_rank(module, values, rank, world, storage, placed)
        except _Stopped:
            pass
        except BaseException as err:  # noqa: BLE001 - the first is raised below
            errors.append((rank, err))
            world.failed.set()

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:  # the first: a wait names its rank; an error at an op is located as it is
        raise errors[0][1]
    assert results[0] is not None
    return results[0]


class CommWorld:
    """`World`'s messages over MPI itself (an mpi4py communicator): a rank each process,
    sends as ``Isend`` of a copy completed by ``Wait``, receives as ``Recv`` into a buffer
    of the expected size (a message of another size is an error); the bytes travel (MPI
    has no bf16)."""

    def __init__(self, comm: Any) -> None:
        self.comm, self.size = comm, comm.Get_size()

    def send(self, source: int, dest: int, tag: int, data: np.ndarray) -> tuple[Any, np.ndarray]:
        if not 0 <= dest < self.size:
            raise SpmdError(f"rank {source} sends to rank {dest}, outside the {self.size} ranks")
        # as bytes: MPI (through mpi4py) has no bf16, and the bits are all that travel
        copy = np.ascontiguousarray(data).copy().reshape(-1).view(np.uint8)
        return self.comm.Isend(copy, dest=dest, tag=tag), copy  # the copy lives until done

    def receive(self, source: int, dest: int, tag: int, like: np.ndarray) -> np.ndarray:
        from mpi4py import MPI

        status = MPI.Status()
        mpi_wait.arrived(self.comm, source, tag)
        self.comm.Probe(source=source, tag=tag, status=status)
        got = status.Get_count(MPI.BYTE)
        if got != like.nbytes:
            raise SpmdError(
                f"rank {dest} receives {like.size} {like.dtype} under tag {tag} from rank "
                f"{source}, which sent {got} bytes"
            )
        self.comm.Recv(like.reshape(-1).view(np.uint8), source=source, tag=tag)
        return like

    def complete(self, sent: tuple[Any, np.ndarray], rank: int, dest: int, tag: int) -> None:
        request = sent[0]
        if mpi_wait.spinning():
            request.Wait()
        else:
            mpi_wait.poll(lambda: bool(request.Test()))


def is_spmd(func: Operation) -> bool:
    """Whether ``func`` asks MPI for its rank: an SPMD body every rank runs."""
    return any(isinstance(op, mpi.CommRankOp) for op in func.walk())


__all__ = ["CommWorld", "MpiFunctions", "SpmdError", "World", "is_spmd", "run_rank", "run_spmd"]
