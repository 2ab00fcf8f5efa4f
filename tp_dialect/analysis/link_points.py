"""link_points / LinkPoint: where each chip's own program halts for transfers.

Chip c's program is the sections it runs, in program order (a spine section on every chip,
a chip section on its chip, the seed's all-reduce on chip 0 where it folds; host stores run
on the host). For each tensor that crosses (`transfers`), its sender halts after the section
that stores it and its receiver before the first section that loads it — except before the
first section: that receive is the host's to place before the chip starts (halt 0). Halts at
one boundary are one LinkPoint; they come in program order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from tp_dialect.analysis.touch import collective, reads_where, statements
from tp_dialect.analysis.transfers import transfers
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, SectionOp, TransferOp, UnshardOp
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
    """Chip ``chip``'s program: its sections in order and its link points in order."""

    chip: int
    sections: list[SectionOp]
    links: list[LinkPoint]


def runs_on(section: SectionOp) -> tuple[int, ...]:
    """The chips whose own programs hold ``section`` (none: the host runs it)."""
    coll = collective(section)
    if isinstance(coll, UnshardOp):
        return ()
    if isinstance(coll, AllReduceOp):
        algorithm = coll.algorithm_name
        if algorithm == "fold":
            return (0,)
        if algorithm == "oneshot":
            return section.chip_list  # every chip adds every partial it received
        why = (
            "exchanges inside the collective"
            if algorithm == "ring"
            else "is spelled as transfers only once tp-transfers has expanded it"
        )
        raise TpReject.NOT_LINKABLE.at(
            coll,
            f"a {algorithm} all-reduce {why}, which per-chip programs cannot hold: relocate "
            "with allreduce=fold, oneshot, twoshot or auto, then run tp-transfers",
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


def link_points(func: FuncOp, n_chips: int) -> dict[int, ChipPlan]:
    """Each chip's program plan for the sectioned ``func``."""
    stmts = statements(func)
    crossing: list[tuple[SSAValue, int, int]] = []
    sections: list[SectionOp] = []
    for op in stmts:
        if isinstance(op, TransferOp):
            crossing.append((op.input, op.src, op.dst))
        elif isinstance(op, SectionOp):
            sections.append(op)
        else:
            raise TpReject.NOT_SECTIONED.at(
                op, f"'{op.name}' is not in a tp.section: run tp-relocate before tp-link-points"
            )
    crossing += [(t.value, t.src, t.dst) for t in transfers(func, n_chips)]
    plans = {c: ChipPlan(c, [s for s in sections if c in runs_on(s)], []) for c in range(n_chips)}
    position = {c: {s: i for i, s in enumerate(p.sections)} for c, p in plans.items()}
    names = buffer_names([v for v, _, _ in crossing])
    first_read: dict[int, dict[SSAValue, int]] = {c: {} for c in plans}
    for c, plan in plans.items():
        for i, section in enumerate(plan.sections):
            for value, chip in reads_where(section, n_chips):
                if chip == c:
                    first_read[c].setdefault(value, i)
    sends: dict[tuple[int, int], list[tuple[SSAValue, str]]] = {}
    receives: dict[tuple[int, int], list[tuple[SSAValue, str]]] = {}
    for value, src, dst in crossing:
        writer = value.owner
        if not isinstance(writer, SectionOp) or writer not in position[src]:
            raise TpReject.NOT_SECTIONED.at(
                writer if isinstance(writer, SectionOp) else None,
                f"chip {src} sends {names[value]} but no section of its program stores it",
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
            point = LinkPoint(
                c, 0 if b == 0 else halt, b, sends.get((c, b), []), receives.get((c, b), [])
            )
            plan.links.append(point)
            halt += b != 0
    return plans
