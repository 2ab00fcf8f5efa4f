"""The model's shared core: stages, labels, what a statement costs and where a program runs.

Invariant: every simulation reads a program through these functions alone — a section's time
is `section_time` (the roofline of its ops from `tp_dialect.analysis.timing.cost`, plus a ``ring``
all-reduce's alpha-beta link time), a crossing's is the machine's ``transfer_time``, work is
attributed to a layer by `layer_of` its label — so two modes given the same program differ only
in how they order and overlap the same pieces of work. Nothing here runs a pass: a program is
modelled at the stage it is given (`stage_of`), and `require_stage` refuses one a mode cannot
run. An outlined program's lowered calls are followed, never inlined (`calls`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.calls.flat_runs import CallError, Runs
from tp_dialect.analysis.schedule.programs import placed_sections
from tp_dialect.analysis.timing.cost import Cost, allreduce_link_time, nbytes, op_cost
from tp_dialect.analysis.touch import collective, is_constant, statements
from tp_dialect.analysis.values import origin
from tp_dialect.errors import TpError
from tp_dialect.grid import stated_chips
from tp_dialect.machine import Machine
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, Collective, SectionOp, TransferOp, UnshardOp
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime.model.timeline import Slice
from tp_dialect.signature import entry_function

MODES: tuple[str, ...] = ("sequential", "phase", "relay", "dataflow")
"""The simulations, in the order a report lists them."""

NEEDS: dict[str, str] = {
    "sequential": "sectioned",
    "phase": "sectioned",
    "relay": "programs",
    "dataflow": "programs",
}
"""The stage each mode runs on: sections and transfers, or per-chip programs."""


class ModelError(TpError):
    """The modelled machine cannot run the program as written (named tensor and chip)."""


def chips_of(module: ModuleOp) -> int:
    """The module's chip count N (1 when it states none)."""
    return stated_chips(module) or 1


def stage_of(module: ModuleOp) -> str:
    """Which lowering stage the entry function is at: ``programs`` (per-chip programs),
    ``phased`` (sections with a ``tp.phase`` on every statement), ``sectioned`` (sections and
    transfers) or ``source`` (neither). An outlined program is read with the functions its
    lowered calls run (`calls.Runs`): sections in a callee make it sectioned, and it is
    phased when every statement of every function run, the calls included, has a phase."""
    func = entry_function(module)
    ops = list(func.body.block.ops)
    if any(isinstance(op, ChipProgramOp) for op in ops):
        return "programs"
    try:
        runs = Runs(func)
        stmts = [op for f in runs.functions() for op in runs.statements(f)]
    except CallError:  # recursion: the simulations refuse it; the entry's own stage here
        stmts = statements(func)
    if not any(isinstance(op, SectionOp | TransferOp) for op in stmts):
        return "source"
    if stmts and all(isinstance(op.attributes.get("tp.phase"), IntegerAttr) for op in stmts):
        return "phased"
    return "sectioned"


def require_stage(module: ModuleOp, mode: str) -> None:
    """Returns if ``mode`` can model ``module`` as it stands; raises ModelError naming the
    stage it needs otherwise (lowering is the caller's: ``tp-run --dry-run`` lowers a copy)."""
    if mode not in NEEDS:
        raise ModelError(f"unknown mode '{mode}' ({', '.join(MODES)})")
    stage = stage_of(module)
    have = "programs" if stage == "programs" else "source" if stage == "source" else "sectioned"
    if have != NEEDS[mode]:
        wanted = {
            "sectioned": "a sectioned program (tp-relocate, tp-transfers)",
            "programs": "per-chip programs (tp-relocate, tp-transfers, tp-link-points)",
        }[NEEDS[mode]]
        what = {"source": "a source program", "programs": "per-chip programs"}.get(
            have, "a sectioned program"
        )
        raise ModelError(f"{mode} mode needs {wanted}, not {what}: lower it first")


def default_mode(module: ModuleOp) -> str:
    """The mode a program's stage suggests: per-chip programs -> relay, phased sections ->
    phase, other sections -> sequential (a source program must be lowered first)."""
    stage = stage_of(module)
    if stage == "source":
        raise ModelError("a source program has no modelled step: lower it first")
    return {"programs": "relay", "phased": "phase"}.get(stage, "sequential")


def label_of(op: Operation) -> str:
    """A statement's name in reports: a section's label, a transfer's tensor."""
    if isinstance(op, SectionOp):
        return op.label.data if op.label else ""
    if isinstance(op, TransferOp):
        return value_name(op.input)
    return ""


def layer_rank(layer: str) -> int:
    """Where a layer sorts: the prologue first, then layers by number."""
    return -1 if layer == "prologue" else int(layer.split()[1])


def section_time(
    section: SectionOp, machine: Machine, n: int, cost: Cost | None = None
) -> tuple[float, str]:
    """How long ``section`` takes on each of its chips, and its kind: ``compute``, or
    ``collective`` for an all-reduce or a maxloc (its adds or compares, plus a ``ring``'s
    link time: the ring exchanges inside the collective, so no transfer shows it; every
    other algorithm's data moves by transfers). ``cost``: its `op_cost`, if already
    known."""
    coll = collective(section)
    compute = (cost or op_cost(section)).time(machine)
    if isinstance(coll, Collective):
        link = 0.0
        if isinstance(coll, AllReduceOp) and coll.entry.inside_time is not None:
            link = allreduce_link_time(coll.algorithm_name, nbytes(coll.result.type), n, machine)
        return compute + link, "collective"
    return compute, "compute"


def section_slices(
    section: SectionOp,
    chips: Sequence[int],
    label: str,
    start: float,
    layer: str | None,
    n: int,
    machine: Machine,
) -> list[Slice]:
    """``section`` running on each of ``chips`` from ``start``, as timeline slices (its time
    and kind from `section_time`, its FLOPs and bytes as arguments), costed once."""
    cost = op_cost(section)
    duration, kind = section_time(section, machine, n, cost)
    args = {"flops": cost.flops, "bytes": cost.bytes}
    return [Slice(f"chip {c}", label, start, duration, kind, layer, args) for c in chips]


def is_host_store(section: SectionOp) -> bool:
    """A ``tp.unshard`` section: the host storing chips' parts, no chip's work."""
    return isinstance(collective(section), UnshardOp)


def host_argument(value: SSAValue, func: FuncOp) -> BlockArgument | None:
    """The entry function's argument ``value`` stands for (through sections and chip
    programs), if it is one."""
    root = origin(value)
    if isinstance(root, BlockArgument) and root.owner is func.body.block:
        return root
    return None


def is_host(value: SSAValue, func: FuncOp) -> bool:
    """Host data every chip holds its own copy of: a function argument (seen through chip
    programs) or a constant. It crosses nothing and is never a live tensor of the model."""
    if host_argument(value, func) is not None:
        return True
    return not isinstance(value, BlockArgument) and is_constant(value.owner)  # type: ignore[arg-type]


def placed_in(runs: Runs, func: FuncOp) -> list[tuple[SectionOp, tuple[int, ...]]]:
    """`placed_sections` of ``func``, read once however many frames of ``runs`` run it."""
    key = ("placed", func)
    if key not in runs.cache:
        runs.cache[key] = list(placed_sections(func))
    return runs.cache[key]
