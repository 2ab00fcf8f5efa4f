"""What a run of the reference interpreter holds in host memory at least, and what the host
has: compared before the run allocates anything, so a program whose tensors cannot fit is
refused in one line rather than ending in a MemoryError (or the kernel's OOM killer).

The rule (`RunNeeds`): a run holds every argument of the entry function for the whole step
(weights, inputs and caches as their types state; with in-place storage, a copy of each), and
while its heaviest op computes, that op's results and the computed tensors it reads; before
the run, random weights or inputs are drawn in float64 one tensor at a time. Each term is
memory the run certainly holds at once, so what it needs is at least their sum — the
interpreter keeps more (every value of a function until it returns). What the host has is
``MemAvailable`` (``/proc/meminfo``), lowered by a cgroup's ``memory.max`` and an
address-space limit (``ulimit -v``) where they are set.
"""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import OpResult, SSAValue

from tp_dialect.analysis.values import callee
from tp_dialect.errors import TpError
from tp_dialect.linalg_kinds import nbytes
from tp_dialect.ops import ShardOp
from tp_dialect.signature import entry_function, ports


class NotEnoughMemory(TpError):
    """A run that needs more memory than the host has, naming both."""


@dataclass(frozen=True)
class RunNeeds:
    """The host memory a run holds at least, by what holds it (bytes)."""

    arguments: int  # every argument of the entry function: weights, inputs, caches
    copies: int  # with in-place storage, the arguments copied once into storage of their own
    heaviest_op: int  # the op whose results and computed operands are the largest
    drawn: int  # the largest random tensor's float64 draw (random weights or inputs)

    @property
    def total(self) -> int:
        # the draws come before the run, one at a time: the larger transient of the two
        return self.arguments + self.copies + max(self.heaviest_op, self.drawn)


def run_needs(
    module: ModuleOp,
    storage: bool = False,
    random_weights: bool = False,
    random_inputs: bool = False,
) -> RunNeeds:
    """What one run of ``module``'s entry function holds at least (the module docstring's
    rule): linear in the ops of the entry function and the functions it calls, each once."""
    func = entry_function(module)
    ins, _ = ports(func)
    arguments = sum(nbytes(arg.type) for arg in func.body.block.args)
    drawn = max(
        (
            8 * math.prod(port.shape)
            for port in ins
            if (port.role == "weight" and random_weights)
            or (port.role == "cache" and random_inputs)
            # an integer input (a position) is filled, not drawn
            or (port.role == "input" and random_inputs and port.numpy_dtype.kind not in "iub")
        ),
        default=0,
    )
    heaviest = max((_working_set(op_results) for op_results in _ops_run(func)), default=0)
    return RunNeeds(arguments, arguments if storage else 0, heaviest, drawn)


def _ops_run(func: FuncOp) -> list[tuple[SSAValue, ...]]:
    """For each op one run of ``func`` executes (nested ones and those of the functions it
    calls, each function once), its results and operands."""
    seen: set[FuncOp] = set()
    pending, found = [func], []
    while pending:
        f = pending.pop()
        if f in seen:
            continue
        seen.add(f)
        for op in f.walk():
            found.append((*op.results, *op.operands))
            if isinstance(op, CallOp) and (target := callee(op)) is not None:
                pending.append(target)
    return found


def _working_set(values: tuple[SSAValue, ...]) -> int:
    """The bytes of the tensors among ``values`` the run computes, each once: an op's
    results, not a block argument (an argument is counted with the arguments; a callee's
    is its call's operand) nor a placed ``tp.shard`` slice (the weight's own data)."""
    computed = {
        id(v): v for v in values if isinstance(v, OpResult) and not isinstance(v.owner, ShardOp)
    }
    return sum(nbytes(v.type) for v in computed.values())


def available_memory() -> tuple[int, str] | None:
    """The bytes this process can still allocate without swapping, and what says so: the
    least of ``MemAvailable``, a cgroup (v2) ``memory.max`` less its ``memory.current``, and
    the address-space limit (``ulimit -v``) less the address space in use. None when the
    host states none of them."""
    found: list[tuple[int, str]] = []
    available = meminfo("MemAvailable")
    if available is not None:
        found.append((available, "MemAvailable"))
    group = _cgroup_room()
    if group is not None:
        found.append((group, "cgroup memory.max"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    in_use = _status("VmSize")
    if soft != resource.RLIM_INFINITY and in_use is not None:
        found.append((max(0, soft - in_use), "ulimit -v"))
    return min(found) if found else None


def meminfo(field: str) -> int | None:
    """A field of ``/proc/meminfo`` in bytes (``MemTotal``, ``MemAvailable``), else None."""
    return _kib_field(Path("/proc/meminfo"), field)


def _status(field: str) -> int | None:
    return _kib_field(Path("/proc/self/status"), field)


def _kib_field(path: Path, field: str) -> int | None:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """What this process's cgroup (v2) may still use, when it has a memory limit."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        group = next(line[3:] for line in lines if line.startswith("0::"))
        folder = Path("/sys/fs/cgroup") / group.lstrip("/")
        limit = (folder / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((folder / "memory.current").read_text()))
    except (OSError, ValueError, StopIteration):
        return None


def check_fits(needs: RunNeeds, what: str) -> None:
    """Raise NotEnoughMemory when ``needs`` is more than `available_memory` (nothing when
    the host states no figure)."""
    found = available_memory()
    if found is None or needs.total <= found[0]:
        return
    has, source = found
    parts = [f"arguments {bytes_text(needs.arguments)}"]
    if needs.copies:
        parts.append(f"their storage copies {bytes_text(needs.copies)}")
    if needs.drawn > needs.heaviest_op:
        parts.append(f"the largest random draw {bytes_text(needs.drawn)}")
    else:
        parts.append(f"the heaviest op's tensors {bytes_text(needs.heaviest_op)}")
    raise NotEnoughMemory(
        f"{what} needs at least {bytes_text(needs.total)} of memory ({', '.join(parts)}) and "
        f"{bytes_text(has)} is available ({source}); --dry-run models it without running"
    )


def bytes_text(n: int) -> str:
    """``n`` bytes in the largest unit that keeps it at 1 or more (decimal units)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
