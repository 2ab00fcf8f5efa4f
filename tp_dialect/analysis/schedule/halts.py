"""link_points / LinkPoint: where each chip's own program halts for transfers.

Chip c's program is the sections it runs, in program order (a spine section on every chip,
a chip section on its chip, the seed's all-reduce on chip 0 where it folds, a oneshot one on
every chip, a maxloc likewise; host stores run on the host; a twoshot or ring all-reduce once
tp-transfers has spelled it as sections and transfers). For each tensor that crosses
(`transfers`), its sender halts after the section that stores it and its receiver before the
first section that loads it — except before the first section: that receive is the host's to
place before the chip starts (halt 0). Halts at one boundary are one LinkPoint; they come in
program order.

In an outlined program a lowered call (`tp_dialect.analysis.calls.outlined`) is a step of every
chip's program (each calls its own part of the callee, a per-chip function): it reads each operand
on the chips its callee reads the argument on and leaves its results where its summary says
(`CallSummary`), so what crosses for it crosses in the caller, before the call. A callee's
own plan (``start=False``) has no start halt: what its first section receives is its link 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Operation, SSAValue

from tp_dialect.analysis.calls.summary import CallSummary, known_callee
from tp_dialect.analysis.schedule.crossings import call_reads, transfers
from tp_dialect.analysis.timing.cost import split_axis
from tp_dialect.analysis.touch import collective, reads_where, statements
from tp_dialect.collectives import ALLREDUCE, spelled_choices
from tp_dialect.names import value_name
from tp_dialect.ops import (
    AllReduceOp,
    Collective,
    MaxLocOp,
    SectionOp,
    TransferOp,
    UnshardOp,
)
from tp_dialect.reject import TpReject


@dataclass
class LinkPoint:
    """One halt of one chip: before its section ``before`` (== len: at the end)."""

    chip: int
    halt: int
    before: int
    sends: list[tuple[SSAValue, str]] = field(default_factory=list[tuple[SSAValue, str]])
    receives: list[tuple[SSAValue, str]] = field(default_factory=list[tuple[SSAValue, str]])


@dataclass
class ChipPlan:
    """Chip ``chip``'s program: its sections (and lowered calls) in order and its link points
    in order."""

    chip: int
    sections: list[SectionOp | CallOp]
    links: list[LinkPoint]


def runs_on(section: SectionOp | CallOp, n_chips: int = 0) -> tuple[int, ...]:
    """The chips whose own programs hold ``section`` (none: the host runs it); a lowered
    call runs on every one of the ``n_chips`` (each calls its own part of the callee)."""
    if isinstance(section, CallOp):
        return tuple(range(n_chips))
    coll = collective(section)
    if isinstance(coll, UnshardOp):
        return ()
    if isinstance(coll, Collective) and not coll.lands_on_every_chip:
        return (0,)  # formed on chip 0 (fold)
    if isinstance(coll, MaxLocOp):
        return section.chip_list  # every chip picks for itself
    if isinstance(coll, AllReduceOp):
        algorithm = coll.algorithm_name
        if not coll.entry.split:
            return section.chip_list  # every chip adds every partial it received
        result_t = coll.result.type
        n = len(coll.partials)
        if isinstance(result_t, TensorType) and split_axis(result_t, n) is None:
            unsplit = [e.name for e in ALLREDUCE.values() if not e.split]
            # tp-transfers leaves a ring it cannot cut into N slices as the collective.
            raise TpReject.NOT_LINKABLE.at(
                coll,
                f"a {algorithm} all-reduce of {result_t} over {n} chips needs an axis of at "
                f"least {n} elements to give every chip a slice before per-chip programs can "
                f"hold it: relocate with allreduce={spelled_choices(unsplit)}",
            )
        raise TpReject.NOT_LINKABLE.at(
            coll,
            f"a {algorithm} all-reduce is spelled as transfers only once tp-transfers has "
            "expanded it, which per-chip programs cannot hold: relocate with "
            f"allreduce={spelled_choices(list(ALLREDUCE))}, then run tp-transfers",
        )
    return section.chip_list


def buffer_names(values: list[SSAValue]) -> dict[SSAValue, str]:
    """A unique, readable buffer name for each crossing value."""
    names: dict[SSAValue, str] = {}
    used: set[str] = set()
    for v in values:
        if v in names:
            continue
        base = value_name(v)
        name, k = base, 1
        while name in used:
            name, k = f"{base}.{k}", k + 1
        used.add(name)
        names[v] = name
    return names


def link_points(
    func: FuncOp,
    n_chips: int,
    calls: Mapping[FuncOp, CallSummary] | None = None,
    start: bool = True,
) -> dict[int, ChipPlan]:
    """Each chip's program plan for the sectioned ``func``, chips 0..N-1 (its lowered calls'
    callees summarized by ``calls``; without ``start``, as a per-chip function: no halt 0);
    a located refusal when a statement is not a section (``not-sectioned``) or a chip's
    section reads a host output (``host-store-used``: the host stores it after every chip
    has finished). Linear in the sections' chips: each is visited once, on each chip it
    runs on."""
    stmts = statements(func)
    # (value, from, to, the op asking for it: a transfer, or the section reading it)
    crossing: list[tuple[SSAValue, int, int, Operation]] = []
    sections: list[SectionOp | CallOp] = []
    for op in stmts:
        if isinstance(op, TransferOp):
            crossing.append((op.input, op.src, op.dst, op))
        elif isinstance(op, SectionOp) or known_callee(op, calls or {}) is not None:
            sections.append(op)  # type: ignore[arg-type]
        else:
            raise TpReject.NOT_SECTIONED.at(
                op, f"'{op.name}' is not in a tp.section: run tp-relocate before tp-link-points"
            )
    crossing += [(t.value, t.src, t.dst, t.reader) for t in transfers(func, n_chips, calls)]
    plans = {c: ChipPlan(c, [], []) for c in range(n_chips)}
    position: dict[int, dict[SectionOp, int]] = {c: {} for c in plans}
    hosted: set[SSAValue] = set()  # what the host's own statements store
    for s in sections:
        chips = runs_on(s, n_chips)
        if not chips:
            hosted.update(s.outs)
        for c in chips:
            position[c][s] = len(plans[c].sections)
            plans[c].sections.append(s)
    names = buffer_names([v for v, _, _, _ in crossing])
    first_read: dict[int, dict[SSAValue, int]] = {c: {} for c in plans}
    for section in sections:  # in program order: the first read on a chip is met first
        summary = known_callee(section, calls or {})
        reads = (
            call_reads(section, summary) if summary is not None else reads_where(section, n_chips)  # type: ignore[arg-type]
        )
        for value, chip in reads:
            if value in hosted:
                reader = _reader_in(section, value)
                raise TpReject.HOST_STORE_USED.at(
                    reader,
                    f"'{reader.name}' reads %{value_name(value)}, a host output "
                    "(a tp.unshard's result, stored once every chip has finished): only the "
                    "function's return may use it",
                )
            if section in position[chip]:
                first_read[chip].setdefault(value, position[chip][section])
    sends: dict[tuple[int, int], list[tuple[SSAValue, str]]] = {}
    receives: dict[tuple[int, int], list[tuple[SSAValue, str]]] = {}
    for value, src, dst, asker in crossing:
        writer = value.owner
        if not isinstance(writer, SectionOp | CallOp) or writer not in position[src]:
            raise TpReject.NOT_SECTIONED.at(
                asker,
                f"chip {src} would send %{names[value]} to chip {dst}, but no section of "
                f"chip {src}'s program stores it",
            )
        at = position[src][writer] + 1
        if (value, names[value]) not in sends.setdefault((src, at), []):
            sends[(src, at)].append((value, names[value]))
        reader = first_read[dst].get(value)
        if reader is not None:
            receives.setdefault((dst, reader), []).append((value, names[value]))
    for c, plan in plans.items():
        bounds = sorted({b for (chip, b) in (*sends, *receives) if chip == c})
        halt = 1
        for b in bounds:
            at_start = b == 0 and start
            point = LinkPoint(
                c, 0 if at_start else halt, b, sends.get((c, b), []), receives.get((c, b), [])
            )
            plan.links.append(point)
            halt += not at_start
    return plans


def _reader_in(section: SectionOp | CallOp, value: SSAValue) -> Operation:
    """The first op inside ``section`` that reads ``value`` (``section`` itself if none:
    where a diagnostic about the read points)."""
    if isinstance(section, CallOp):
        return section
    for op in section.body.walk():
        if value in op.operands:
            return op
    return section
