"""The shard obligation, checked on any IR at any stage, from chip provenance.

A module meets it when, with every value's `Placement` (analysis/certify/provenance.py):

- nothing is opaque: every op is one the analysis sees through, every call is followed;
- every spine-typed tensor holds no chip's data (an all-reduce over every chip, or the seed's
  valid fold of adds, is the only way chip data reaches the spine), and every chip-typed
  tensor holds only its own chip's data (and the spine's); a scalar, index, memref or vector
  holds at most one chip's data;
- a fold of adds over chip partials is a valid all-reduce (one partial per chip, in chip
  order or a cyclic rotation of it — a ring's reduce-scatter —, no partial sum read by
  anything but the next add); its partial sums may be copied to the chip adding next (a
  ``tp.transfer``, a ``tp.link``), which moves no data into the spine;
- a host output (``tp.unshard``) is only returned;
- work placed on chips (a ``tp.section``, a ``tp.chip_program``) touches only data of its own
  chips, save a collective reading each partial where it lives; a scalar is read only where
  it was computed (scalars do not cross chips);
- every result of an entry function (one no call reaches) is spine or a host output;
- a call to a function that places work itself (a section, transfer or barrier, at any call
  depth: an outlined ``@layer``) is a statement of a function, never inside a section or
  a chip program (sections never nest); as a statement it hands the callee a scalar only
  where the callee reads it (`tp_dialect.analysis.calls.summary.CallSummary`), and a scalar it
  returns is held where the callee left it;
- per-chip programs fit together (`analysis/schedule/programs.py`: one program a chip, each buffer
  sent once and received as the type it was sent as, never by its own sender);
- an all-reduce whose partials are contractions over ``tp.shard`` slices of one weight sums
  slices that are disjoint and cover the contracted axis (`analysis/certify/coverage.py`);
- a ``tp.maxloc`` takes one argmax per chip, each over its own run of one axis, offset by
  the run's start, the runs disjoint and covering the axis (`analysis/certify/maxloc.py`).

`check_obligation` raises the first violation, in program order (the contents of a region
before the op holding it), as a `TpReject` diagnostic naming the op, the value and the chip —
save that a fold which is no all-reduce is named first, wherever it stands: its sums leak
wherever they go (into the spine, onto the chips a ring copies them to), and the fold is the
cause.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType, UnregisteredOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from tp_dialect.analysis.calls.chip_runs import flat_copy, has_chip_calls
from tp_dialect.analysis.calls.outlined import ChipWork
from tp_dialect.analysis.calls.summary import Summaries
from tp_dialect.analysis.certify.blocks import check_gather
from tp_dialect.analysis.certify.coverage import ModuleIndex, check_coverage
from tp_dialect.analysis.certify.maxloc import check_maxloc
from tp_dialect.analysis.certify.provenance import Provenance, Solver, join
from tp_dialect.analysis.schedule.programs import check_programs
from tp_dialect.analysis.touch import captured
from tp_dialect.analysis.values import callee, defined_within
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.names import value_name
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    Collective,
    MaxLocOp,
    SectionOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp, RelayOp
from tp_dialect.reject import TpReject
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp
from tp_dialect.ssa import check_dominance

_SPINE_RULE = "chip data reaches the spine only through an all-reduce over every chip"
_PASSING = (YieldOp, FinishOp, LinkOp, TransferOp, BarrierOp, func.ReturnOp)


def check_obligation(module: ModuleOp) -> Provenance:
    """The module's provenance, once every rule of the obligation holds; else the first
    violation raised as a TpDiagnostic (a malformed module — a use its definition does not
    dominate — too: every rule assumes SSA)."""
    try:
        check_dominance(module)
    except VerifyException as err:
        raise TpDiagnostic(getattr(err, "op", None), str(err)) from None
    for op in module.walk():
        # MLIR Shard's ops say how a program is split in a vocabulary the rules below do not
        # read: certifying around them would vouch for what was never checked.
        if op.dialect_name() == "shard":
            raise TpReject.SHARD_NOT_IMPORTED.at(
                op,
                f"'{op.name}' is MLIR Shard's, which the shard obligation does not read: "
                "run tp-import-shard first (an unsharded program annotated with shard ops)",
            )
    for op in module.walk():
        if (
            isinstance(op, func.FuncOp)
            and len(op.body.blocks) == 1  # more blocks mean branches: refused as opaque below
            and any(isinstance(inner, ChipProgramOp) for inner in op.body.block.ops)
        ):
            check_programs(op)  # one program a chip, buffers sent once, received as sent
    if has_chip_calls(module):
        # Per-chip programs calling per-chip functions mean their bodies in place of the
        # calls: the flat programs are what is checked (the programs and their relay were
        # checked above, where they are written), every call's copy of the function
        # included, so the certificate covers the functions in every call; a violation is
        # named at the op of the module it was copied from.
        flat, origin = flat_copy(module)
        try:
            return check_obligation(flat)
        except TpDiagnostic as err:
            if err.op is None:
                raise
            raise TpDiagnostic(origin.get(err.op, err.op), err.message) from None
    prov = Provenance(module)
    index = ModuleIndex(module)
    entries = _entries(module, index)
    for fold in prov.folds:
        # First: a broken fold's sums leak wherever they go (to the spine, to other chips
        # through copies); the fold is what to name.
        if not fold.is_allreduce(prov.n_chips):
            raise fold.refusal(prov.n_chips)
    sums = _partial_sums(module, prov)
    calls = Summaries(prov.n_chips, ChipWork())
    for solver in prov.solvers:
        for op in solver.root.walk(region_first=True):
            _check_op(prov, solver, op, entries, sums, calls)
    for op in module.walk():
        if isinstance(op, AllReduceOp | ReduceScatterOp):
            check_coverage(op.partials, op, prov.top, index)
        elif isinstance(op, AllGatherOp):
            check_gather(op, prov.top, index)
        elif isinstance(op, MaxLocOp):
            check_maxloc(op, prov.top, index)
        elif op in prov.fold_sums:
            check_coverage(prov.fold_of[op].partials, op, prov.top, index)
    return prov


def _entries(module: ModuleOp, index: ModuleIndex) -> set[func.FuncOp]:
    """The functions a host may call (`ModuleIndex.is_entry`)."""
    return {op for op in module.walk() if isinstance(op, func.FuncOp) and index.is_entry(op)}


def _partial_sums(module: ModuleOp, prov: Provenance) -> frozenset[SSAValue]:
    """The partial sums of valid folds (spine-typed, yet holding the chips summed so far),
    and every chip's received copy of one: a ring fold's adds run on one chip after another,
    each reading the sum so far where a link delivered it (`folds.find_folds` follows the
    copies, so each is read by the next add only)."""
    sums = set(prov.partial_sums)
    sent: dict[tuple[Operation | None, str], list[SSAValue]] = {}
    links = [op for op in module.walk() if isinstance(op, LinkOp)]
    for link in links:
        for name, value in zip(link.sends, link.sent, strict=True):
            sent.setdefault((_scope(link), name), []).append(value)
    for link in links:
        for name, value in zip(link.receives, link.received, strict=True):
            senders = sent.get((_scope(link), name), [])
            if senders and all(v in sums for v in senders):
                sums.add(value)
    return frozenset(sums)


def _scope(link: LinkOp) -> Operation | None:
    """The function whose buffer names ``link`` uses (its program is a statement there)."""
    program = link.parent_op()
    return program.parent_op() if program is not None else None


def _check_op(
    prov: Provenance,
    solver: Solver,
    op: Operation,
    entries: set[func.FuncOp],
    sums: frozenset[SSAValue],
    calls: Summaries,
) -> None:
    if (why := prov.opaque.get(op)) is not None:
        reason, what = why
        raise reason.at(
            op, f"'{_op_name(op)}' {what}: the shard obligation cannot be checked through it"
        )
    if not isinstance(op, func.ReturnOp | YieldOp | scf.YieldOp):  # they only hand it on
        for v in op.operands:
            if solver.placement(v).host:
                raise TpReject.HOST_STORE_USED.at(
                    op,
                    f"'{op.name}' computes on %{value_name(v)}, a host output (a tp.unshard's "
                    "result): only the function's return may use it, computing on it would "
                    "move chip data to the spine without an all-reduce",
                )
    parent = op.parent_op()
    if isinstance(parent, linalg.LinalgStructuredOperation) and not isinstance(
        parent, linalg.GenericOp
    ):
        return  # a named op's body (its elements): the op itself is judged, as written
    _check_values(prov, solver, op, sums)
    _check_residency(prov, solver, op, sums, calls)
    if isinstance(op, func.ReturnOp) and op.parent_op() in entries:
        for i, v in enumerate(op.operands):
            p = solver.placement(v)
            if p.chips:
                chip = min(p.chips)
                raise TpReject.CHIP_RESULT.at(
                    op,
                    f"result #{i} {_describe(v, chip)} is chip {chip}'s data: the host gets "
                    "the spine (an all-reduce's sum) or a host store (tp.unshard), never one "
                    "chip's data",
                )


def _check_values(
    prov: Provenance, solver: Solver, op: Operation, sums: frozenset[SSAValue]
) -> None:
    if isinstance(op, SectionOp | ChipProgramOp | ModuleOp | func.FuncOp | RelayOp | UnshardOp):
        # A host store's result is a host output; the others hand on what their bodies
        # compute, which is checked there.
        return
    if op in prov.fold_of:
        return  # a valid fold (an invalid one is refused before): its sums are sanctioned
    if not op.results and not op.has_trait(IsTerminator):
        # No result to hold a mix, but the statement itself works on several chips' data
        # (a copy of a valid fold's partial sum onto the chip adding next is no work).
        copying = isinstance(op, TransferOp | LinkOp)
        read = [v for v in op.operands if not (copying and v in sums)]
        chips = join(solver.placement(v) for v in read).chips
        if len(chips) > 1:
            a, b = sorted(chips)[:2]
            raise TpReject.MIXED_CHIPS.at(op, _mixed(op, solver, a, b, op.operands[0]))
    for v in op.results:  # a region's block arguments never hold more than its results
        chips = solver.placement(v).chips
        owner = chip_of(v.type)
        if owner is not None:
            if chips - {owner}:
                other = min(chips - {owner})
                raise TpReject.MIXED_CHIPS.at(op, _mixed(op, solver, owner, other, v))
        elif isinstance(v.type, TensorType):
            if chips and v not in sums:
                chip = min(chips)
                raise TpReject.LEAK_TO_SPINE.at(
                    op,
                    f"'{op.name}' computes spine value %{value_name(v)} from "
                    f"{_witness(op, solver, chip)}: {_SPINE_RULE}",
                )
        elif len(chips) > 1:
            a, b = sorted(chips)[:2]
            raise TpReject.MIXED_CHIPS.at(op, _mixed(op, solver, a, b, v))


def _op_name(op: Operation) -> str:
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def _mixed(op: Operation, solver: Solver, a: int, b: int, v: SSAValue) -> str:
    first = _witness(op, solver, a, default=f"%{value_name(v)} on chip {a}")
    return (
        f"'{op.name}' mixes {first} with {_witness(op, solver, b)}: a statement works on "
        "one chip's tensors (and the spine)"
    )


def _describe(v: SSAValue, chip: int) -> str:
    name = f"%{value_name(v)}"
    return f"{name} on chip {chip}" if chip_of(v.type) == chip else f"{name} (chip {chip}'s data)"


def _witness(op: Operation, solver: Solver, chip: int, default: str | None = None) -> str:
    """Where ``op`` gets ``chip``'s data from: an operand, a value its regions capture, or an
    operand of a region op it is nested in (control dependence)."""
    for v in op.operands:
        if chip in solver.placement(v).chips:
            return _origin(v, solver, chip)
    for inner in op.walk():
        for v in inner.operands if inner is not op else ():
            if not defined_within(v, op) and chip in solver.placement(v).chips:
                return f"{_origin(v, solver, chip)}, read inside its region"
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, SectionOp | ChipProgramOp | func.FuncOp):
        for v in parent.operands:
            if chip in solver.placement(v).chips:
                return f"{_origin(v, solver, chip)}, an operand of the enclosing '{parent.name}'"
        parent = parent.parent_op()
    return default or f"chip {chip}'s data"


def _origin(v: SSAValue, solver: Solver, chip: int) -> str:
    """``v`` described; a region's block argument traced to the region op's operand that
    brings ``chip``'s data in (a loop's bound, rather than its iteration argument)."""
    owner = v.owner
    region_op = owner.parent_op() if isinstance(owner, Block) else None
    if region_op is not None and not isinstance(region_op, SectionOp | ChipProgramOp | func.FuncOp):
        for u in region_op.operands:
            if chip in solver.placement(u).chips:
                return f"{_describe(v, chip)} through '{region_op.name}' from {_describe(u, chip)}"
    return _describe(v, chip)


def _where(op: Operation) -> tuple[str, frozenset[int]] | None:
    """What the work placed around ``op`` may touch, and why: a section on one chip, that
    chip's data (and the spine); a section on several chips is replicated spine work, the
    spine only; a chip's program, that chip's data."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, SectionOp):
            chips = parent.chip_list
            if len(chips) == 1:
                return f"its section runs on chips {list(chips)}", frozenset(chips)
            return (
                f"its section runs on chips {list(chips)}: replicated spine work",
                frozenset(),
            )
        if isinstance(parent, ChipProgramOp):
            return f"it is in chip {parent.chip_index}'s program", frozenset((parent.chip_index,))
        parent = parent.parent_op()
    return None


def _check_residency(
    prov: Provenance, solver: Solver, op: Operation, sums: frozenset[SSAValue], calls: Summaries
) -> None:
    """Work placed on chips touches only their data; a collective reads partials where they
    live (a program may be handed another chip's partial for one); what a chip's program
    sends and hands out is its own chip's data (or a valid fold's partial sum, sent on to
    the chip adding next); a scalar is read only where it was computed."""
    if isinstance(op, SectionOp):
        _check_section_placement(op, calls)
    if isinstance(op, func.CallOp):
        _check_placing_call(op, calls)
    if isinstance(op, FinishOp | LinkOp):
        program = op.parent_op()
        assert isinstance(program, ChipProgramOp)
        what = "handed out" if isinstance(op, FinishOp) else "sent"
        if isinstance(op, LinkOp):
            values = [v for v in op.sent if v not in sums]
        else:
            values = list(op.values)
        _check_program_io(solver, op, program, values, f"{what} by chip {program.chip_index}")
        return
    if (
        isinstance(op, (Collective, ReduceScatterOp, UnshardOp, SectionOp, *_PASSING))
        or op in prov.fold_of
    ):
        return  # a collective (or a valid fold of adds) reads each partial where it lives
    where = _where(op)
    if where is None:
        return
    text, allowed = where
    if isinstance(op, func.CallOp) and (callee := prov.callee_context(op)) is not None:
        # The callee's work runs here too: all of it on these chips' data.
        for v, p in callee.of.items():
            if foreign := p.chips - allowed:
                raise TpReject.SECTION_CHIP.at(
                    op,
                    f"'{op.name}' runs @{op.callee.string_value()}, which computes "
                    f"%{value_name(v)} from chip {min(foreign)}'s data, but {text}",
                )
    for v in (*op.results, *op.operands):
        foreign = solver.placement(v).chips - allowed
        if foreign:
            chip = min(foreign)
            verb = "is on" if chip_of(v.type) == chip else "derives from data on"
            raise TpReject.SECTION_CHIP.at(op, f"%{value_name(v)} {verb} chip {chip}, but {text}")


def _check_program_io(
    solver: Solver,
    at: Operation,
    program: ChipProgramOp,
    values: Sequence[SSAValue],
    what: str,
) -> None:
    for v in values:
        foreign = solver.placement(v).chips - {program.chip_index}
        if foreign:
            chip = min(foreign)
            raise TpReject.SECTION_CHIP.at(
                at,
                f"%{value_name(v)} holds chip {chip}'s data, but is {what}: a chip's program "
                "sends and hands out only its own chip's data and the spine",
            )


def _check_placing_call(op: func.CallOp, calls: Summaries) -> None:
    """A call to a function placing work is a function's statement (sections never nest),
    handing a scalar only to chips that hold it where the callee reads it."""
    f = callee(op)
    if f is None or not calls.work.places(f):
        return
    name = f.sym_name.data
    where = _where(op)
    if where is not None or not isinstance(op.parent_op(), func.FuncOp):
        inside = where[0] if where is not None else f"it is inside a '{op.parent_op().name}'"  # type: ignore[union-attr]
        raise TpReject.SECTION_CHIP.at(
            op,
            f"'func.call' calls @{name}, which places its own work on chips, but {inside}: "
            "sections never nest, a call placing work is a statement of a function",
        )
    summary = calls.of(f)
    for v, readers in zip(op.arguments, summary.reads if summary else (), strict=False):
        held = None if isinstance(v.type, TensorType) else _held(v, calls)
        missing = sorted(readers - held) if held is not None else []
        if missing:
            raise TpReject.SECTION_CHIP.at(
                op,
                f"'func.call' hands @{name} %{value_name(v)}, computed on chips "
                f"{sorted(held)}, which @{name} reads on chip {missing[0]}: a scalar does not "  # type: ignore[arg-type]
                "cross chips, so it is computed wherever it is read",
            )


def _check_section_placement(section: SectionOp, calls: Summaries) -> None:
    """A section in a chip's program runs on that chip; a scalar a section reads is held
    on every chip it runs on (scalars do not cross chips)."""
    program = section.parent_op()
    if isinstance(program, ChipProgramOp) and section.chip_list != (program.chip_index,):
        raise TpReject.SECTION_CHIP.at(
            section,
            f"a section on chips {list(section.chip_list)} in chip {program.chip_index}'s "
            f"program: a chip's program runs its own work only",
        )
    for v in captured(section):
        if isinstance(v.type, TensorType):
            continue  # tensors cross chips by tp.transfer
        held = _held(v, calls)
        missing = sorted(set(section.chip_list) - held) if held is not None else []
        if missing:
            raise TpReject.SECTION_CHIP.at(
                section,
                f"%{value_name(v)} is computed on chips {sorted(held)}, but is read on chip "
                f"{missing[0]}: a scalar does not cross chips, so it is computed wherever it "
                "is read",
            )


def _held(
    value: SSAValue, calls: Summaries, seen: set[SSAValue] | None = None
) -> frozenset[int] | None:
    """The chips a function-level value is held on (None: every chip): a section's result
    on its chips, a chip program's result on its chip, a result of a call placing work
    where its callee leaves it; an op outside sections and programs computes where
    everything it reads (operands, and values its regions capture) is held."""
    owner = value.owner
    if isinstance(owner, SectionOp):
        return frozenset(owner.chip_list)
    if isinstance(owner, ChipProgramOp):
        return frozenset((owner.chip_index,))
    if isinstance(owner, func.CallOp) and isinstance(owner.parent_op(), func.FuncOp):
        f = callee(owner)
        summary = calls.of(f) if f is not None and calls.work.places(f) else None
        if summary is not None:
            held = summary.held[value.index]  # type: ignore[attr-defined]
            if isinstance(held, int):  # handed straight back
                return _held(owner.arguments[held], calls, seen)
            return held
    if not isinstance(owner, Operation) or not isinstance(owner.parent_op(), func.FuncOp):
        return None  # an argument (every chip holds its own), or local to a program
    seen = set() if seen is None else seen
    if value in seen:
        return None
    seen.add(value)
    held: frozenset[int] | None = None
    reads = [*owner.operands]
    reads += [v for inner in owner.walk() for v in inner.operands if not defined_within(v, owner)]
    for v in reads:
        h = _held(v, calls, seen)
        if h is not None:
            held = h if held is None else held & h
    return held
