"""A ``local`` machine measured on the machine this runs on, as a machine file `machine_from`
reads (`tp_dialect.machine`).

What is measured, and which `Machine` field it becomes:

- streaming memory bandwidth with numpy, arrays larger than the last-level cache: a copy
  (read + write, counted as the cost model counts bytes) and a sum (read only), best of a
  few;
- matmul FLOP/s with numpy: a ``[1, K] x [K, N]`` f32 matvec (decode's shape, its weight
  larger than the cache) and a square matmul. The matvec is memory-bound (2 FLOPs per
  4-byte weight): its FLOP/s is bandwidth in disguise, and the roofline charges it through
  ``hbm_bandwidth``, not ``peak_flops``. So ``peak_flops`` is the square matmul's figure, the
  compute roof. The copy's, sum's and matvec's figures are reported, not used;
  `measure_local` also reports the roofline's time for the matvec next to the measured one;
- ``hbm_bandwidth``: the rate at which each of the ranks sharing this machine streams a
  decode weight (``x @ w.T``) while all do (`measure_stream`), the median of a few passes:
  a decode step's bytes are mostly weights read once, each at the rate a pass usually gets
  (the best pass runs up to 1.5x the typical one here);
- point-to-point latency and bandwidth between two MPI ranks (an mpi4py ping-pong, run as
  ``mpiexec -n 2 python -m tp_dialect.runtime.calibrate --pingpong``): ``link_latency`` is
  half the round trip of an 8-byte message, ``link_bandwidth`` a large message's bytes over
  half its round trip; ``barrier_latency`` is one ``MPI_Barrier`` of the two ranks;
- ``host_copy_overhead``: the fixed cost of one small host copy (a numpy copy of a few
  bytes, the call included);
- ``op_overhead``, the reference interpreter's time per op besides its roofline in a step
  as ``tp-run`` runs one — a process's first, in which each op's plan is worked out as it
  first runs: a tiny generated program lowered to per-chip programs, freshly parsed each
  time and run once as an MPI rank runs its chip, its time less its roofline over the ops
  the model counts (the model adds it per op: a chip of this machine is a process
  dispatching ops one by one);
- ``first_touch_bandwidth``: the rate at which memory new to a process is mapped in on its
  first write (the OS faults in each page), besides the write: numpy copies of an array
  into new buffers, kept alive so each is new, against copies into one already written,
  measured on the ranks right after they stream (`measure_stream`). The model charges it
  on the new buffer each update copies its cache into (value semantics): in a decode step
  those are the large new buffers.

Topology ``all-to-all`` (every pair of ranks talks directly), ``max_chips`` the CPU count,
``hbm_bytes`` the total RAM, ``sram_bytes`` the largest CPU cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from tp_dialect.errors import TpError
from tp_dialect.machine import MACHINES, Machine
from tp_dialect.runtime.host_memory import meminfo
from tp_dialect.runtime.launch import find_mpiexec, rank_env, run_bounded


class CalibrationError(RuntimeError, TpError):
    """A measurement that could not be made, with a one-line reason."""


def _best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` timed runs of ``fn`` (after one warm-up run), in seconds."""
    fn()
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


# -- memory and compute ----------------------------------------------------------------------


def measure_bandwidth(nbytes: int = 256 << 20, repeat: int = 5) -> dict[str, float]:
    """Streaming bandwidth in B/s over an ``nbytes`` f32 array: ``copy`` counts the bytes
    read and written (as the cost model does), ``read`` the bytes a sum reads."""
    n = max(nbytes // 4, 1)
    src = np.ones(n, dtype=np.float32)
    dst = np.empty_like(src)
    copy_s = _best(lambda: np.copyto(dst, src), repeat)
    read_s = _best(lambda: src.sum(), repeat)
    return {"copy": 2 * src.nbytes / copy_s, "read": src.nbytes / read_s}


def measure_matmul(
    k: int = 8192, n: int = 8192, square: int = 1024, repeat: int = 5
) -> dict[str, float]:
    """FLOP/s of numpy f32 products: ``matvec`` a ``[1, k] x [k, n]`` product (2kn FLOPs,
    memory-bound), ``matmul`` a ``square``-sided square product (2 square^3 FLOPs)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, k), dtype=np.float32)
    w = rng.standard_normal((k, n), dtype=np.float32)
    matvec_s = _best(lambda: x @ w, repeat)
    a = rng.standard_normal((square, square), dtype=np.float32)
    b = rng.standard_normal((square, square), dtype=np.float32)
    matmul_s = _best(lambda: a @ b, repeat)
    return {
        "matvec": 2 * k * n / matvec_s,
        "matvec_seconds": matvec_s,
        "matvec_bytes": float(w.nbytes + x.nbytes + 4 * n),
        "matvec_flop_count": float(2 * k * n),
        "matmul": 2 * square**3 / matmul_s,
    }


def measure_host_copy(nbytes: int = 8, repeat: int = 2000) -> float:
    """Seconds of one small host copy (``nbytes``), the numpy call included: the fixed cost
    of a relay copy besides its bytes."""
    src = np.ones(max(nbytes // 4, 1), dtype=np.float32)
    dst = np.empty_like(src)

    def copies() -> None:
        for _ in range(repeat):
            np.copyto(dst, src)

    return _best(copies, 3) / repeat


def measure_interpreter(machine: Machine, repeat: int = 3) -> dict[str, float]:
    """The reference interpreter's time per op besides its roofline on ``machine`` (its
    other figures, measured), in a step as ``tp-run`` runs one: a process runs its program
    once, so each op's plan is worked out as it first runs. A tiny two-layer Qwen3 decode
    step lowered to per-chip programs for one chip, parsed anew each time (its plans not yet
    made) and run once as an MPI rank runs its chip (`ChipRunner`), the median of ``repeat``
    runs, less its sections' roofline, over the ops the model counts in them (``per_op``);
    also the step's time and op count."""
    from xdsl.ir import BlockArgument
    from xdsl.parser import Parser

    from tp_dialect.analysis.schedule.programs import index_programs, placed_sections
    from tp_dialect.analysis.timing.cost import op_cost
    from tp_dialect.frontend.qwen3 import Qwen3Config, generate
    from tp_dialect.passes.universe import lowered
    from tp_dialect.runtime.checkpoint import (
        MemorySource,
        place_weights,
        random_inputs,
        random_weights,
    )
    from tp_dialect.runtime.reference import bind
    from tp_dialect.runtime.relay_exec import ChipRunner
    from tp_dialect.signature import entry_function, ports
    from tp_dialect.universe import tp_context

    text = generate(Qwen3Config.preset("tiny", layers=2, chips=1))
    roofline = replace(machine, op_overhead=0.0)
    steps: list[float] = []
    ops = 0
    roof = 0.0
    for _ in range(max(repeat, 1)):
        module = Parser(tp_context(), text, "<tiny>").parse_module()
        module = lowered(module, "tp-relocate,tp-transfers,tp-link-points")
        func = entry_function(module)
        placement = place_weights(
            module,
            MemorySource(random_weights(module, seed=0)),
            random_inputs(module, seed=1, position=3),
            chip=0,
        )
        ins, _ = ports(func)
        args = bind(ins, placement.values)
        program = index_programs(func).programs[0]
        own = []
        for v in program.inputs:  # a chip program's operands: the entry's arguments
            assert isinstance(v, BlockArgument)
            own.append(args[v.index])
        sections = [s for s, chips in placed_sections(func) if 0 in chips]
        ops = sum(op_cost(s).ops for s in sections)
        roof = sum(op_cost(s).time(roofline) for s in sections)
        t0 = time.perf_counter()
        ChipRunner(module, program, own, placement.placed).run_to(-1)
        steps.append(time.perf_counter() - t0)
    step = sorted(steps)[len(steps) // 2]
    return {"per_op": max(step - roof, 1e-9) / max(ops, 1), "ops": float(ops), "step_seconds": step}


# -- MPI ping-pong ---------------------------------------------------------------------------


def default_mpiexec() -> str:
    """The ``mpiexec`` next to this interpreter (a venv's), else the one on PATH, else the
    bare name (launching it then fails with a clear error)."""
    return find_mpiexec() or "mpiexec"


def measure_pingpong(
    mpiexec: str | None = None,
    large: int = 4 << 20,
    iters: int = 50,
    timeout: float = 60.0,
) -> dict[str, float]:
    """Link figures between two MPI ranks, or CalibrationError with a one-line reason:
    ``latency`` (s, half an 8-byte round trip), ``bandwidth`` (B/s, a ``large``-byte message
    over half its round trip) and ``barrier`` (s, one barrier of the two ranks)."""
    args = ["--pingpong", "--large", str(large), "--iters", str(iters)]
    return _run_ranks(2, args, mpiexec, timeout, "ping-pong")


def measure_stream(
    ranks: int = 1,
    mpiexec: str | None = None,
    k: int = 4096,
    n: int = 12288,
    repeat: int = 5,
    timeout: float = 60.0,
    touch_bytes: int = 8 << 20,
) -> dict[str, float]:
    """How ``ranks`` MPI ranks on this machine use its memory while all run at once (each
    with cores/ranks BLAS threads, as ``tp-run --mpi`` gives them), the slowest rank's
    figures; CalibrationError when MPI fails:

    - ``bandwidth`` (B/s): the rate each streams a decode weight (``x @ w.T``, ``w`` an
      ``[n, k]`` f32 matrix, as the interpreter reads an ``[out, in]`` weight), the median
      of ``repeat`` passes: a chip's memory bandwidth when ranks are its chips and share
      the node's memory;
    - ``first_touch`` (B/s): then the rate at which the OS maps in new memory on its first
      write (a page fault and a zeroed page), besides the write itself: ``repeat`` copies
      of a ``touch_bytes`` array into new buffers (kept, so each is new, as an update's
      copy is) against copies into one already written, medians. The memory they get was
      just freed by the rank: on a virtual machine whose host takes back memory left free
      for a while, a page it took back costs several times more to map in again; that is
      the machine's weather, not the program's cost, and shows as spread between runs."""
    env = rank_env(ranks)
    args = ["--stream", "--k", str(k), "--n", str(n), "--iters", str(repeat)]
    args += ["--touch", str(touch_bytes)]
    return _run_ranks(ranks, args, mpiexec, timeout, "memory stream", env)


def _run_ranks(
    ranks: int,
    args: list[str],
    mpiexec: str | None,
    timeout: float,
    what: str,
    env: dict[str, str] | None = None,
) -> dict[str, float]:
    """This module's rank side run on ``ranks`` ranks with ``args``: the JSON figures rank 0
    prints, or CalibrationError with a one-line reason."""
    exe = mpiexec or default_mpiexec()
    cmd = [exe, "-n", str(ranks), sys.executable, "-m", "tp_dialect.runtime.calibrate", *args]
    try:
        proc = run_bounded(cmd, env or os.environ, timeout)
    except FileNotFoundError:
        raise CalibrationError(f"MPI unavailable: no mpiexec at '{exe}'") from None
    except PermissionError:
        raise CalibrationError(f"MPI unavailable: cannot run '{exe}'") from None
    except subprocess.TimeoutExpired:
        raise CalibrationError(f"MPI {what} timed out after {timeout:g} s ({exe})") from None
    stdout, stderr = proc.stdout, proc.stderr
    if proc.returncode != 0:
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        reason = lines[-1] if lines else f"exit code {proc.returncode}"
        raise CalibrationError(f"MPI {what} failed ({exe}): {reason}")
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return {key: float(v) for key, v in json.loads(line).items()}
    raise CalibrationError(f"MPI {what} printed no figures ({exe})")


def _median(times: list[float]) -> float:
    return max(sorted(times)[len(times) // 2], 1e-9)


def _stream_rank(k: int, n: int, iters: int, touch_bytes: int) -> None:
    """The rank side of `measure_stream`: rank 0 prints the slowest rank's figures."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(comm.Get_rank())
    w = rng.standard_normal((n, k), dtype=np.float32)
    x = rng.standard_normal((1, k), dtype=np.float32)
    passes = []
    for _ in range(max(iters, 1) + 1):
        comm.Barrier()  # every rank streams at once
        t0 = time.perf_counter()
        x @ w.T
        passes.append(time.perf_counter() - t0)
    stream = w.nbytes / _median(passes[1:])  # the first pass warms BLAS up
    # Memory touched and freed just now: the new buffers below get pages the OS has at
    # hand, not ones a hypervisor took back (see `measure_stream`).
    del w
    np.ones((max(iters, 1) + 2) * max(touch_bytes // 4, 1), dtype=np.float32)
    src = np.ones(max(touch_bytes // 4, 1), dtype=np.float32)
    written = np.zeros_like(src)
    into_written, into_new, kept = [], [], []
    comm.Barrier()
    for _ in range(max(iters, 1)):
        t0 = time.perf_counter()
        np.copyto(written, src)
        into_written.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        kept.append(src.copy())  # what an update's copy does: a new buffer, written once
        into_new.append(time.perf_counter() - t0)
    fault = max(_median(into_new) - _median(into_written), 1e-9)
    figures = comm.gather((stream, src.nbytes / fault), root=0)
    if comm.Get_rank() == 0:
        assert figures is not None
        rates = {
            "bandwidth": min(f[0] for f in figures),
            "first_touch": min(f[1] for f in figures),
        }
        print(json.dumps(rates), flush=True)


def _pingpong_rank(large: int, iters: int) -> None:
    """The rank side of `measure_pingpong`: rank 0 prints its figures as one JSON line."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit("the ping-pong needs exactly 2 ranks")
    rank = comm.Get_rank()
    peer = 1 - rank

    def round_trip(buf: np.ndarray, count: int) -> float:
        best = math.inf
        comm.Barrier()
        for _ in range(count):
            t0 = MPI.Wtime()
            if rank == 0:
                comm.Send(buf, dest=peer)
                comm.Recv(buf, source=peer)
            else:
                comm.Recv(buf, source=peer)
                comm.Send(buf, dest=peer)
            best = min(best, MPI.Wtime() - t0)
        return best

    small = np.zeros(8, dtype=np.uint8)
    big = np.zeros(max(large, 8), dtype=np.uint8)
    round_trip(small, 5)  # warm-up
    latency = round_trip(small, iters) / 2
    round_trip(big, 1)
    bandwidth = big.nbytes / (round_trip(big, max(iters // 10, 3)) / 2)
    comm.Barrier()
    barrier = math.inf
    for _ in range(iters):
        t0 = MPI.Wtime()
        comm.Barrier()
        barrier = min(barrier, MPI.Wtime() - t0)
    if rank == 0:
        figures = {"latency": latency, "bandwidth": bandwidth, "barrier": barrier}
        print(json.dumps(figures), flush=True)


# -- the machine -----------------------------------------------------------------------------


def total_ram() -> float:
    """Bytes of RAM this machine has (``MemTotal`` in /proc/meminfo), else 0 when unknown."""
    return float(meminfo("MemTotal") or 0)


def largest_cache() -> float:
    """Bytes of the largest CPU cache of cpu0 (sysfs), else 0 when unknown."""
    sizes = [0.0]
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    for size in root.glob("index*/size"):
        try:
            text = size.read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            sizes.append(float(digits) * scale)
    return max(sizes)


def measure_local(
    mpiexec: str | None = None,
    memory_bytes: int = 256 << 20,
    matvec_k: int = 8192,
    matvec_n: int = 8192,
    matmul_side: int = 1024,
    message_bytes: int = 4 << 20,
    iters: int = 50,
    repeat: int = 5,
    timeout: float = 60.0,
    ranks: int = 1,
    stream_shape: tuple[int, int] = (4096, 12288),
    touch_bytes: int = 8 << 20,
) -> dict[str, float]:
    """Every figure of the local machine whose chips are ``ranks`` MPI ranks sharing it, each
    finite and positive, or CalibrationError (MPI unavailable or failing): the fields
    `local_machine` writes and the raw figures behind them (``interpreter_*``,
    copy/read/matvec). A chip's ``hbm_bandwidth`` and ``first_touch_bandwidth`` are those of
    each of ``ranks`` ranks while all run (`measure_stream`: new buffers of ``touch_bytes``,
    best the size of the caches the program's updates copy): ranks share the node's memory.
    ``op_overhead`` is measured last (`measure_interpreter`): time besides the roofline of
    the figures before it."""
    bw = measure_bandwidth(memory_bytes, repeat)
    mm = measure_matmul(matvec_k, matvec_n, matmul_side, repeat)
    link = measure_pingpong(mpiexec, message_bytes, iters, timeout)
    k, n = stream_shape
    memory = measure_stream(ranks, mpiexec, k, n, repeat, timeout, touch_bytes)
    hbm_bandwidth = memory["bandwidth"]
    peak = mm["matmul"]
    measured = replace(
        MACHINES["sn40l"],
        peak_flops=peak,
        hbm_bandwidth=hbm_bandwidth,
        copies_updates=True,
        first_touch_bandwidth=memory["first_touch"],
    )
    interp = measure_interpreter(measured, max(repeat - 2, 1))  # an odd count: a median
    predicted = max(mm["matvec_flop_count"] / peak, mm["matvec_bytes"] / hbm_bandwidth)
    ram = total_ram()
    cache = largest_cache()
    figures = {
        "peak_flops": peak,
        "hbm_bandwidth": hbm_bandwidth,
        "hbm_bytes": ram if ram > 0 else float(memory_bytes),
        "sram_bytes": cache if cache > 0 else 1.0 * (1 << 20),
        "link_latency": link["latency"],
        "link_bandwidth": link["bandwidth"],
        "barrier_latency": link["barrier"],
        "host_copy_overhead": measure_host_copy(),
        "max_chips": float(os.cpu_count() or 2),
        "op_overhead": interp["per_op"],
        "first_touch_bandwidth": memory["first_touch"],
        "copy_bandwidth": bw["copy"],
        "read_bandwidth": bw["read"],
        "matvec_flops": mm["matvec"],
        "matvec_seconds": mm["matvec_seconds"],
        "matvec_model_seconds": predicted,
        "interpreter_op_overhead": interp["per_op"],
        "interpreter_ops": interp["ops"],
        "interpreter_step_seconds": interp["step_seconds"],
    }
    bad = [k for k, v in figures.items() if not (math.isfinite(v) and v > 0)]
    if bad:
        raise CalibrationError(f"unusable measurement(s): {', '.join(bad)}")
    return figures


def local_machine(figures: dict[str, float]) -> dict[str, object]:
    """The machine file for ``figures`` (from `measure_local`): every `Machine` field, named
    ``local``, all-to-all, and nothing `machine_from` would refuse."""
    machine: dict[str, object] = {
        "base": "sn40l",
        "name": "local",
        "topology": "all-to-all",
        "copies_updates": True,  # the reference interpreter's value semantics
        "prefetch_weights": False,  # it reads a weight when an op runs, never ahead
    }
    for f in fields(Machine):
        if f.name in machine:
            continue
        if f.name == "max_chips":
            machine[f.name] = int(figures["max_chips"])
        else:
            machine[f.name] = float(figures[f.name])
    return machine


def main(argv: Sequence[str] | None = None) -> int:
    """The rank side of the ping-pong (``--pingpong``, under ``mpiexec -n 2``) or of the
    memory stream (``--stream``, under ``mpiexec -n RANKS``): 0 once its figures are out."""
    p = argparse.ArgumentParser(prog="python -m tp_dialect.runtime.calibrate")
    p.add_argument("--pingpong", action="store_true", help="run one rank of the ping-pong")
    p.add_argument("--stream", action="store_true", help="run one rank of the memory stream")
    p.add_argument("--k", type=int, default=4096, help="stream: the weight's input size")
    p.add_argument("--n", type=int, default=12288, help="stream: the weight's output size")
    p.add_argument("--large", type=int, default=4 << 20, help="bandwidth message, bytes")
    p.add_argument("--touch", type=int, default=8 << 20, help="stream: first-touch array, bytes")
    p.add_argument("--iters", type=int, default=50)
    args = p.parse_args(argv)
    if args.stream:
        _stream_rank(args.k, args.n, args.iters, args.touch)
        return 0
    if not args.pingpong:
        p.error("only --pingpong or --stream runs here; calibrate with tp-calibrate")
    _pingpong_rank(args.large, args.iters)
    return 0


if __name__ == "__main__":
    sys.exit(main())
