"""check_programs: per-chip programs (and their relay) that fit together.

tp-link-points writes one ``tp.chip_program`` per chip whose ``tp.link`` ops send and
receive buffers by name; the relay (``tp.relay``, or the schedule tp-relay would build)
copies each name from the one chip that sends it to the chips that receive it. Nothing in an
op verifier can see across programs, so a hand-edited or mis-generated function may hold two
programs for one chip, a name sent twice, a name received as another type than it was sent,
a chip receiving its own name, a name nobody sends, or a relay written for other programs.
Each would make the relay drop a program, copy the wrong tensor, or wait forever; this
module refuses them up front, each as a located TpReject diagnostic.

One pass over the programs' top-level ops and one over the relay's steps, with dicts keyed by
chip and by buffer name: linear in the size of the function.

`placed_sections` says which chips run each section of a function, at every stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute

from tp_dialect.analysis.calls.chip_runs import (
    ProgramLink,
    check_chip_calls,
    program_links,
    relay_steps_of,
    tag_of,
)
from tp_dialect.analysis.rounds import Copy, Deadlock, Halt, RelayStep, relay_schedule
from tp_dialect.analysis.touch import collective
from tp_dialect.ops import BarrierOp, Collective, SectionOp, TransferOp, UnshardOp
from tp_dialect.program_ops import ChipProgramOp, RelayOp
from tp_dialect.reject import TpReject


@dataclass(frozen=True)
class Sent:
    """Where a buffer name is sent: the chip, the link (as the program runs it) and the type
    it is sent as."""

    chip: int
    link: ProgramLink
    type: Attribute


@dataclass
class ProgramIndex:
    """The programs of a function, by chip, and every sent buffer by name."""

    programs: dict[int, ChipProgramOp] = field(default_factory=dict)
    sent: dict[str, Sent] = field(default_factory=dict)
    received: dict[int, set[str]] = field(default_factory=dict)
    """The names each chip's program receives."""


def _links(program: ChipProgramOp) -> list[ProgramLink]:
    # A program's own links and those of the per-chip functions it calls, as it runs them.
    return program_links(program)


def index_programs(func: FuncOp) -> ProgramIndex:
    """The index of ``func``'s chip programs, guaranteed consistent: one program per chip,
    each buffer name sent once, and every received name sent by another chip as the type it
    is received as; raises a located TpDiagnostic (a TpReject reason) at the first op that
    breaks this."""
    index = ProgramIndex()
    check_chip_calls(func.parent_op() or func)  # per-chip functions called where they may be
    for op in func.body.block.ops:
        if isinstance(op, SectionOp | TransferOp | BarrierOp):
            raise TpReject.SECTION_CHIP.at(
                op,
                f"'{op.name}' at function level beside per-chip programs: in a function of "
                "per-chip programs, chips work only in their programs",
            )
        if not isinstance(op, ChipProgramOp):
            continue
        chip = op.chip_index
        if chip in index.programs:
            raise TpReject.DUPLICATE_PROGRAM.at(
                op,
                f"'tp.chip_program' on chip {chip} is a second program for chip {chip}; "
                "a chip runs one program (the relay would drop one of them)",
            )
        index.programs[chip] = op
        index.received[chip] = set()
        for link in _links(op):
            for name, value in zip(link.sends, link.op.sent, strict=True):
                if (first := index.sent.get(name)) is not None:
                    raise TpReject.DUPLICATE_SEND.at(
                        link.op,
                        f'{_link(link, chip)} sends "{name}" '
                        f"({value.type}), but chip {first.chip} already sends it at link "
                        f"{first.link.halt} ({first.type}): a buffer name is sent once",
                    )
                index.sent[name] = Sent(chip, link, value.type)
    # Receives are checked once every send is known: a receiver may come before its sender.
    for chip, program in index.programs.items():
        for link in _links(program):
            for name, result in zip(link.receives, link.op.received, strict=True):
                _check_receive(index, chip, link, name, result.type)
                index.received[chip].add(name)
    return index


def _link(link: ProgramLink, chip: int) -> str:
    """A link as diagnostics name it: a program's by its halt, a per-chip function's by its
    own number, the call running it and the halt that makes it on the chip."""
    if link.call is None:
        return f"'tp.link' {link.halt} on chip {chip}"
    callee = link.call.callee.string_value()
    tag = tag_of(link.call)
    call = f"the call tagged {tag!r}" if tag else "an untagged call"
    return f"'tp.link' {link.op.halt} of @{callee} ({call}: chip {chip}'s halt {link.halt})"


def _check_receive(
    index: ProgramIndex, chip: int, link: ProgramLink, name: str, type_: Attribute
) -> None:
    where = f'{_link(link, chip)} receives "{name}"'
    sent = index.sent.get(name)
    if sent is None:
        raise TpReject.DEADLOCK.at(
            link.op,
            f"{where} ({type_}), but no chip sends it: the relay would wait for it forever",
        )
    if sent.chip == chip:
        raise TpReject.SELF_COPY.at(
            link.op,
            f"{where} ({type_}), which chip {chip} sends itself at link {sent.link.halt}: "
            "a chip cannot receive its own buffer",
        )
    if sent.type != type_:
        raise TpReject.LINK_TYPE.at(
            link.op,
            f"{where} as {type_}, but chip {sent.chip} sends it as {sent.type} "
            f"(at link {sent.link.halt})",
        )


def program_halts(program: ChipProgramOp) -> list[Halt]:
    """A chip program's halts: its start (link 0 if it has one), its links, its end."""
    links = list(_links(program))
    halts = [] if links and links[0].halt == 0 else [Halt(0, frozenset(), frozenset())]
    halts += [Halt(lk.halt, frozenset(lk.sends), frozenset(lk.receives)) for lk in links]
    halts.append(Halt(halts[-1].index + 1, frozenset(), frozenset()))
    return halts


def programs(func: FuncOp) -> list[ChipProgramOp]:
    """``func``'s chip programs, in order."""
    return [op for op in func.body.block.ops if isinstance(op, ChipProgramOp)]


def schedule(func: FuncOp) -> list[RelayStep]:
    """The relay schedule of ``func``'s chip programs (raises TpDiagnostic on deadlock)."""
    progs = programs(func)
    if not progs:
        raise TpReject.NOT_SECTIONED.at(
            func, f"@{func.sym_name.data} has no per-chip programs: run tp-link-points first"
        )
    try:
        return relay_schedule({p.chip_index: program_halts(p) for p in progs})
    except Deadlock as err:
        raise TpReject.DEADLOCK.at(progs[0], str(err)) from None


def relay_steps(func: FuncOp) -> list[RelayStep]:
    """The relay in ``func`` (a ``tp.relay`` op, its repeats unrolled), or the schedule
    computed from its programs (the one tp-relay would write)."""
    for op in func.body.block.ops:
        if isinstance(op, RelayOp):
            return [step for step, _ in relay_steps_of(op)]
    return schedule(func)


def _describe(program: ChipProgramOp) -> str:
    """A program's halts in a few words (a program may have hundreds of links)."""
    links = [link.halt for link in _links(program)]
    end = (links[-1] if links else 0) + 1
    if not links:
        return f"it has no links; its end is halt {end}"
    if links == list(range(links[0], links[-1] + 1)):
        shown = f"{links[0]}" if len(links) == 1 else f"{links[0]}..{links[-1]}"
    else:
        shown = ", ".join(map(str, links))
    return f"its links are {shown}, its end is halt {end}"


def check_relay(relay: RelayOp, index: ProgramIndex) -> None:
    """``relay``, replayed step by step as the host runs it, fits the indexed programs: each
    copy moves a name its source chip has already sent (it stands past the halt that sends
    it) to a different chip whose program receives it; each run_to runs a chip that has a
    program to its next halt, once every name its current halt receives has been copied to
    it; and every chip ends at its end. Else a located TpDiagnostic at the first step that
    does not fit (a relay that cannot be followed to its end: ``deadlock``; a copy to the
    same chip: ``self-copy``)."""
    halts = {chip: program_halts(p) for chip, p in index.programs.items()}
    pos = dict.fromkeys(halts, 0)
    available: set[str] = set()  # names some chip has reached the halt that sends them
    inbox: dict[int, set[str]] = {chip: set() for chip in halts}
    misfit = "the relay does not fit the programs"
    for s, step in relay_steps_of(relay):
        if isinstance(s, Copy):
            name, src, dst = s.tensor, s.src, s.dst
            where = f"'tp.copy' round {s.round} of \"{name}\""
            if src == dst:
                raise TpReject.SELF_COPY.at(step, f"{where} goes from chip {src} to itself")
            sent = index.sent.get(name)
            if sent is None or sent.chip != src:
                who = "no chip does" if sent is None else f"chip {sent.chip} does"
                raise TpReject.DEADLOCK.at(
                    step,
                    f'{where} from chip {src}, but chip {src} never sends "{name}" ({who}): '
                    f"{misfit}",
                )
            if dst not in index.programs:
                raise TpReject.DEADLOCK.at(
                    step, f"{where} to chip {dst}, but chip {dst} has no program: {misfit}"
                )
            if name not in index.received[dst]:
                raise TpReject.DEADLOCK.at(
                    step,
                    f"{where} to chip {dst}, but chip {dst}'s program never receives "
                    f'"{name}": {misfit}',
                )
            if name not in available:
                raise TpReject.DEADLOCK.at(
                    step,
                    f"{where} from chip {src} before chip {src} has sent it (at its link "
                    f"{sent.link.halt}; it stands at halt {halts[src][pos[src]].index}): "
                    f"{misfit}",
                )
            inbox[dst].add(name)
        else:
            chip, halt = s.chip, s.halt
            where = f"'tp.run_to' round {s.round} runs chip {chip}"
            if chip not in halts:
                raise TpReject.DEADLOCK.at(step, f"{where}, which has no program: {misfit}")
            hs, p = halts[chip], pos[chip]
            if p + 1 >= len(hs) or hs[p + 1].index != halt:
                nxt = "has finished" if p + 1 >= len(hs) else f"halts next at {hs[p + 1].index}"
                raise TpReject.DEADLOCK.at(
                    step,
                    f"{where} to halt {halt}, but it {nxt} ({_describe(index.programs[chip])}): "
                    f"{misfit}",
                )
            if missing := sorted(hs[p].receives - inbox[chip]):
                raise TpReject.DEADLOCK.at(
                    step,
                    f'{where} to halt {halt} before "{missing[0]}", which it receives at '
                    f"halt {hs[p].index}, was copied to it: {misfit}",
                )
            pos[chip] = p + 1
            available |= hs[p + 1].sends
    for chip, hs in halts.items():
        if pos[chip] < len(hs) - 1:
            raise TpReject.DEADLOCK.at(
                relay,
                f"the relay leaves chip {chip} at halt {hs[pos[chip]].index}, short of its "
                f"end (halt {hs[-1].index}): {misfit}",
            )


def check_programs(func: FuncOp) -> ProgramIndex:
    """``func``'s chip programs fit together and every ``tp.relay`` in it fits them: one
    program per chip, each buffer name sent once, received only by other chips and as the
    type it was sent as, never received unsent, and every relay step possible; otherwise a
    located TpDiagnostic naming the chips, the buffer and the types, ending with its TpReject
    reason (duplicate-program, duplicate-send, self-copy, link-type, deadlock). ``func`` must
    have passed its ops' own verifiers (a link's names and values pair up). Returns the
    programs' index (`index_programs`), so a caller need not build it again."""
    index = index_programs(func)
    schedule(func)  # some order runs every chip to its end: no deadlock
    for op in func.body.block.ops:
        if isinstance(op, RelayOp):
            check_relay(op, index)
    return index


def placed_sections(func: FuncOp) -> Iterator[tuple[SectionOp, tuple[int, ...]]]:
    """Every section of ``func`` with the chips that run it: a top-level section on its
    chips (an all-reduce the seed folds on chip 0 only, a fold maxloc too; a host store on
    none), a section of chip c's program on chip c."""
    for op in func.body.block.ops:
        if isinstance(op, SectionOp):
            coll = collective(op)
            if isinstance(coll, UnshardOp):
                yield op, ()
            elif isinstance(coll, Collective) and not coll.lands_on_every_chip:
                yield op, (0,)
            else:
                yield op, op.chip_list
        elif isinstance(op, ChipProgramOp):
            for inner in op.body.block.ops:
                if isinstance(inner, SectionOp):
                    yield inner, (op.chip_index,)
