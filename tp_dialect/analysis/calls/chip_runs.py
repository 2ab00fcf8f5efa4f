"""A chip's program as it runs: through the per-chip functions it calls, and the relay unrolled.

A per-chip program may call per-chip functions (``func.call @layer.chip1(...) {tp.tag =
"l3_"}``, callee marked `CHIP_FUNCTION`, written by tp-link-points for an outlined program).
What the program does is what it would do with each call's body in its place, so every
analysis of halts and buffers reads the program through `program_links`:

- **Halts** count in the order the program meets them, through its calls: a top-level
  ``tp.link`` is the halt its index says; a call's links (its function's, numbered 1..K) are
  the K halts after the last one before the call. A top-level link after a call must come
  after the call's halts.
- **Buffer names** of a function's links are the function's, written once; each call expands
  them by its tag (`expanded_name`: ``l_c1_o`` → ``l3_c1_o``; a name not written per layer
  takes the tag in front), so every call's buffers are its own.

`relay_steps_of` unrolls a ``tp.relay`` whose ``tp.relay_repeat`` writes one layer's rounds
once. Both are linear in what they produce, which is bounded by the text: a repeat runs at
most as many times as it lists tags.

`check_chip_calls` refuses a per-chip function called anywhere but as a statement of its own
chip's program, or handed one storage for two parameters of which it writes one in place
(`calls.check_aliases`). `flat_copy` is the flat per-chip programs a module stands for (each call's
body in its place, `retag`-named; the relay unrolled), with each op's original: what
tp-verify checks, MPI ranks run and tp-inline returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from tp_dialect.analysis.calls.outlined import check_aliases
from tp_dialect.analysis.rounds import Copy, RelayStep, RunTo, shifted
from tp_dialect.analysis.values import callee
from tp_dialect.names import in_layer
from tp_dialect.ops import SectionOp
from tp_dialect.program_ops import (
    CHIP_FUNCTION,
    ChipProgramOp,
    CopyOp,
    LinkOp,
    RelayOp,
    RelayRepeatOp,
    RunToOp,
)
from tp_dialect.reject import TpReject

TAG = "tp.tag"
"""The attribute of a per-chip call naming the tag its buffers and labels expand by."""


def expanded_name(name: str, tag: str) -> str:
    """``name``, written once in a per-chip function, as the call tagged ``tag`` spells it:
    a per-layer name takes the layer (``l_q``, ``l3_`` -> ``l3_q``), any other the tag in
    front; unchanged outside calls (no tag)."""
    if not tag:
        return name
    return in_layer(name, tag) if name.startswith("l_") else tag + name


def expanded_label(label: str, call: Operation | None) -> str:
    """A section label of a per-chip function as ``call`` runs it (a per-layer label takes
    the call's layer: ``l_q`` in layer 3's call is ``l3_q``, as tp-inline names it)."""
    tag = tag_of(call) if call is not None else ""
    return in_layer(label, tag) if tag else label


def chip_function(op: Operation) -> FuncOp | None:
    """The per-chip function ``op`` calls, if it is such a call."""
    if isinstance(op, CallOp) and (f := callee(op)) is not None and CHIP_FUNCTION in f.attributes:
        return f
    return None


def tag_of(call: Operation) -> str:
    """A per-chip call's tag (``""`` when it has none)."""
    attr = call.attributes.get(TAG)
    return attr.data if isinstance(attr, StringAttr) else ""


@dataclass(frozen=True)
class ProgramLink:
    """One halt of a program as it runs: the link op (in the program, or in the function a
    call runs), its number in the program, and its buffer names as that call spells them."""

    op: LinkOp
    halt: int
    sends: tuple[str, ...]
    receives: tuple[str, ...]
    call: CallOp | None = None


def program_ops(program: ChipProgramOp) -> Iterator[tuple[Operation, CallOp | None]]:
    """The program's ops in the order it runs them, each with the per-chip call it runs in
    (None: the program's own), a call's function body in place of the call (its return
    left out)."""
    for op in program.body.block.ops:
        f = chip_function(op)
        if f is None:
            yield op, None
            continue
        assert isinstance(op, CallOp)
        for inner in f.body.block.ops:
            if not isinstance(inner, ReturnOp):
                yield inner, op


def _function_links(f: FuncOp) -> list[LinkOp]:
    """A per-chip function's links, numbered 1..K in order; its calls refused (functions
    are one level deep)."""
    links: list[LinkOp] = []
    for op in f.body.block.ops:
        if chip_function(op) is not None:
            raise TpReject.NOT_LINKABLE.at(
                op,
                f"@{f.sym_name.data} is a per-chip function calling another: per-chip "
                "functions are called from a chip's program only",
            )
        if isinstance(op, LinkOp):
            if op.halt != len(links) + 1:
                raise TpReject.NOT_LINKABLE.at(
                    op,
                    f"'tp.link' {op.halt} is link {len(links) + 1} of per-chip function "
                    f"@{f.sym_name.data}: a function's links are numbered 1, 2, … in order",
                )
            links.append(op)
    return links


def program_links(program: ChipProgramOp) -> list[ProgramLink]:
    """The program's halts as it runs (module docstring), in order; a located refusal
    (``not-linkable``) for a function's links out of order or a top-level link numbered
    within the halts of a call before it."""
    out: list[ProgramLink] = []
    last = 0
    seen: dict[FuncOp, list[LinkOp]] = {}
    for op in program.body.block.ops:
        if isinstance(op, LinkOp):
            if out and op.halt <= last:
                raise TpReject.NOT_LINKABLE.at(
                    op,
                    f"'tp.link' {op.halt} on chip {program.chip_index} comes after halt {last} "
                    "(a call's links count on from the halt before the call): number it "
                    f"{last + 1} or later",
                )
            out.append(ProgramLink(op, op.halt, tuple(op.sends), tuple(op.receives)))
            last = op.halt
        elif (f := chip_function(op)) is not None:
            assert isinstance(op, CallOp)
            links = seen.get(f)
            if links is None:
                links = seen[f] = _function_links(f)
            tag = tag_of(op)
            for link in links:
                out.append(
                    ProgramLink(
                        link,
                        last + link.halt,
                        tuple(expanded_name(n, tag) for n in link.sends),
                        tuple(expanded_name(n, tag) for n in link.receives),
                        op,
                    )
                )
            last += len(links)
    return out


def step_of(op: RunToOp | CopyOp) -> RelayStep:
    """The relay step an op writes."""
    if isinstance(op, RunToOp):
        return RunTo(op.round.value.data, op.chip.value.data, op.halt.value.data)
    return Copy(op.round.value.data, op.tensor.data, op.source.value.data, op.dest.value.data)


def relay_steps_of(relay: RelayOp) -> Iterator[tuple[RelayStep, Operation]]:
    """The relay's steps as the host runs them, each with the op that writes it: a
    ``tp.relay_repeat`` unrolled (its body ``count`` times, rounds, halts and call tags
    moved on each time)."""
    for op in relay.body.block.ops:
        if isinstance(op, RunToOp | CopyOp):
            yield step_of(op), op
        elif isinstance(op, RelayRepeatOp):
            tags, strides = op.tag_list, op.stride_list
            rounds = op.rounds.value.data
            for i in range(min(op.count.value.data, len(tags))):
                for inner in op.body.block.ops:
                    assert isinstance(inner, RunToOp | CopyOp)
                    yield shifted(step_of(inner), i, rounds, strides, tags), inner


def retag(ops: Iterable[Operation], tag: str) -> None:
    """Names and section labels written for every layer (``l_…``) in ``ops``, as layer
    ``tag``'s (the names tp-inline gives an inlined copy)."""
    for top in ops:
        for op in top.walk():
            for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
                if value.name_hint:
                    value.name_hint = in_layer(value.name_hint, tag)
            if isinstance(op, SectionOp) and op.label is not None:
                op.label = StringAttr(in_layer(op.label.data, tag))


def check_chip_calls(root: Operation) -> None:
    """Every call to a per-chip function under ``root`` is a statement of the program of the
    chip the function is for (its ``tp.chip``, an integer); else a located refusal
    (``not-linkable``): anywhere else its links would halt nothing, or the wrong chip; and
    none hands one storage to two parameters of which the function writes one in place
    (``aliased-arguments``, `calls.check_aliases`)."""
    for op in root.walk():
        f = chip_function(op)
        if f is None:
            if isinstance(op, CallOp) and isinstance(
                g := SymbolTable.lookup_symbol(op, op.callee), FuncOp
            ):
                if CHIP_FUNCTION in g.attributes:  # marked, but not a body to run
                    raise TpReject.NOT_LINKABLE.at(
                        op,
                        f"'func.call' of @{g.sym_name.data}, a per-chip function with no body "
                        "of one block ending in func.return: a chip cannot run it",
                    )
            continue
        name = f.sym_name.data
        chip = f.attributes[CHIP_FUNCTION]
        if not isinstance(chip, IntegerAttr):
            raise TpReject.NOT_LINKABLE.at(
                f, f"@{name}'s {CHIP_FUNCTION} is {chip}, not the index of the chip it is for"
            )
        c = chip.value.data
        program = op.parent_op()
        if not isinstance(program, ChipProgramOp):
            raise TpReject.NOT_LINKABLE.at(
                op,
                f"'func.call' of @{name}, chip {c}'s per-chip function, outside a chip's "
                f"program: only chip {c}'s program calls it, as one of its statements",
            )
        if program.chip_index != c:
            raise TpReject.NOT_LINKABLE.at(
                op,
                f"chip {program.chip_index}'s program calls @{name}, chip {c}'s per-chip "
                "function: a chip runs its own part of a function",
            )
        check_aliases(op, f)  # its statements were ordered for distinct storages


def has_chip_calls(module: Operation) -> bool:
    """Whether ``module`` holds per-chip functions (programs that call them)."""
    return any(isinstance(op, FuncOp) and CHIP_FUNCTION in op.attributes for op in module.walk())


def flat_copy(module: ModuleOp) -> tuple[ModuleOp, dict[Operation, Operation]]:
    """A copy of ``module`` with every per-chip call replaced by its function's body — its
    links numbered and its buffers named as the call runs them (`program_links`) —, the
    per-chip functions erased and every relay unrolled: the flat per-chip programs it
    stands for, as every analysis of flat programs reads them. Also each op of the copy's
    original (a call's inlined op: the function's op it was cloned from), for diagnostics."""
    check_chip_calls(module)
    copy = module.clone()
    origin = dict(zip(copy.walk(), module.walk(), strict=True))
    for program in [op for op in copy.walk() if isinstance(op, ChipProgramOp)]:
        halts = iter(program_links(program))
        for op in list(program.body.block.ops):
            if isinstance(op, LinkOp):
                next(halts)
                continue
            f = chip_function(op)
            if f is None:
                continue
            assert isinstance(op, CallOp)
            body = f.body.clone()
            for new, old in zip(body.walk(), f.body.walk(), strict=True):
                origin[new] = origin.get(old, old)
            block = body.block
            ret = block.last_op
            assert isinstance(ret, ReturnOp)
            if tag := tag_of(op):
                retag(list(block.ops), tag)
            for inner in block.ops:
                if isinstance(inner, LinkOp):
                    link = next(halts)
                    inner.index = IntegerAttr(link.halt, i64)
                    inner.send_names = ArrayAttr(StringAttr(n) for n in link.sends)
                    inner.recv_names = ArrayAttr(StringAttr(n) for n in link.receives)
            Rewriter.inline_block(block, InsertPoint.before(op), op.operands)
            returned = list(ret.operands)
            Rewriter.replace_op(op, [], returned)
            ret.detach()
            ret.erase()
    for f in [
        op for op in copy.walk() if isinstance(op, FuncOp) and CHIP_FUNCTION in op.attributes
    ]:
        f.detach()
        f.erase()
    for relay in [op for op in copy.walk() if isinstance(op, RelayOp)]:
        steps = list(relay_steps_of(relay))
        flat = RelayOp([step_op(s) for s, _ in steps])
        for new, (_, old) in zip(flat.body.block.ops, steps, strict=True):
            origin[new] = origin.get(old, old)
        Rewriter.replace_op(relay, flat)
    return copy, origin


def step_op(s: RelayStep) -> RunToOp | CopyOp:
    """The op that writes relay step ``s``."""
    if isinstance(s, Copy):
        return CopyOp(s.round, s.tensor, s.src, s.dst)
    return RunToOp(s.round, s.chip, s.halt)
