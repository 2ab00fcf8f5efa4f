"""check_programs: per-chip programs (and their relay) that do not fit together are refused.

A. Hand-written pairs: each refusal (two programs for one chip, a name sent twice, a receive
   of another type than the send, a chip receiving its own name, a name nobody sends, relay
   steps that do not fit the programs) at the op it names, with its reason; and the sound
   program of the same shape accepted.
B. Fault injection: the per-chip programs and relay of a generated tiny Qwen3 (N = 2 and 4,
   lowered by the passes) are accepted as generated; each fault kind injected at a random
   place (Hypothesis) is refused with its reason, at the op that carries the fault, naming
   the chip and the buffer. A program fault makes tp-relay refuse too, leaving the function
   as it was; a relay fault makes tp-relay rebuild the relay, which then fits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pytest
from helpers import program, tiny
from hypothesis import event, given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, parse
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType, f16, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from tp_dialect.analysis.schedule.programs import check_programs
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.program_ops import ChipProgramOp, CopyOp, LinkOp, RelayOp, RunToOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import entry_function

T = TypeVar("T")


def refusal(func: FuncOp) -> TpDiagnostic:
    """The diagnostic check_programs raises on ``func`` (fails the test if it accepts)."""
    with pytest.raises(TpDiagnostic) as info:
        check_programs(func)
    return info.value


def reason_of(diag: TpDiagnostic) -> TpReject:
    reasons = [r for r in TpReject if diag.message.endswith(f" [{r.value}]")]
    assert len(reasons) == 1, diag.message
    return reasons[0]


# -- A. hand-written programs ----------------------------------------------------------------

# Chip 0 sends "a" (at link 1) to chip 1, which sends "b" back (at its link 1) and a "spare"
# nobody receives; chip 2 (in a 3-chip module) has no program. {recv_a}, {send_b}, ... are the
# places a case rewrites.
PAIR = """
builtin.module attributes {{tp.chips = 3 : i64}} {{
  func.func @pair(%x: tensor<4xf32>) -> tensor<4xf32> {{
    %r = tp.chip_program on {chip0} (%x) {{
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      %b = tp.link 2 sends() as [] receives [{recv_b}] : () -> tensor<4xf32>
      %c = arith.mulf %b, %b : tensor<4xf32>
      tp.finish %c : tensor<4xf32>
    }} : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {{
    ^bb0(%x1: tensor<4xf32>):
      %a = tp.link 0 sends() as [] receives ["a"] : () -> {recv_a}
      %d = arith.subf %a, %a : {recv_a}
      %b = arith.addf %x1, %x1 : tensor<4xf32>
      tp.link 1 sends(%b, %b) as [{send_b}, "spare"] receives []
        : (tensor<4xf32>, tensor<4xf32>) -> ()
      tp.finish
    }} : (tensor<4xf32>) -> ()
    tp.relay {{
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 1 chip 0 halt 2
      tp.copy round 1 "a" from {copy_a_from} to {copy_a_to}
      tp.run_to round 1 chip 1 halt {run_1_to}
      tp.copy round 2 {copy_b} from 1 to 0
      tp.run_to round 2 chip {run_chip} halt 3
      tp.run_to round 2 chip 1 halt 2
    }}
    func.return %r : tensor<4xf32>
  }}
}}
"""
SOUND = {
    "chip0": "0",
    "recv_b": '"b"',
    "recv_a": "tensor<4xf32>",
    "send_b": '"b"',
    "copy_a_from": "0",
    "copy_a_to": "1",
    "run_1_to": "1",
    "copy_b": '"b"',
    "run_chip": "0",
}


def pair(**changes: str) -> tuple[ModuleOp, FuncOp]:
    module = parse(PAIR.format(**{**SOUND, **changes}))
    return module, entry_function(module)


def ops_of(func: FuncOp, kind: type[Operation]) -> list[Operation]:
    return [op for op in func.walk() if isinstance(op, kind)]


def test_the_sound_pair_is_accepted_and_its_relay_is_what_tp_relay_builds() -> None:
    """The control for the cases below: the sound pair passes, and tp-relay (which rebuilds
    the relay from the programs) writes the same steps back."""
    module, func = pair()
    check_programs(func)
    before = [str(op) for op in ops_of(func, RunToOp | CopyOp)]  # type: ignore[arg-type]
    apply(module, "tp-relay")
    assert [str(op) for op in ops_of(func, RunToOp | CopyOp)] == before  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "reason", "at", "words"),
    [
        # Chip 1's program claims chip 0: refused at the second program for chip 0.
        (
            {"chip0": "1"},
            TpReject.DUPLICATE_PROGRAM,
            (ChipProgramOp, 1),
            ["'tp.chip_program' on chip 1 is a second program for chip 1"],
        ),
        (
            {"recv_a": "tensor<8xf32>"},
            TpReject.LINK_TYPE,
            (LinkOp, 2),
            ["'tp.link' 0 on chip 1 receives \"a\" as tensor<8xf32>", "chip 0 sends it as "],
        ),
        (
            {"send_b": '"a"'},
            TpReject.DUPLICATE_SEND,
            (LinkOp, 3),
            ["'tp.link' 1 on chip 1 sends \"a\"", "chip 0 already sends it at link 1"],
        ),
        (
            {"recv_b": '"a"', "send_b": '"b"'},
            TpReject.SELF_COPY,
            (LinkOp, 1),
            ["'tp.link' 2 on chip 0 receives \"a\" (tensor<4xf32>), which chip 0 sends itself"],
        ),
        (
            {"recv_b": '"ghost"'},
            TpReject.DEADLOCK,
            (LinkOp, 1),
            ["'tp.link' 2 on chip 0 receives \"ghost\"", "no chip sends it"],
        ),
        (
            {"copy_a_from": "2"},
            TpReject.DEADLOCK,
            (CopyOp, 0),
            ["'tp.copy' round 1 of \"a\" from chip 2, but chip 2 never sends", "chip 0 does"],
        ),
        (
            {"copy_a_to": "2"},
            TpReject.DEADLOCK,
            (CopyOp, 0),
            ["'tp.copy' round 1 of \"a\" to chip 2, but chip 2 has no program"],
        ),
        (
            {"copy_b": '"spare"'},
            TpReject.DEADLOCK,
            (CopyOp, 1),
            ["'tp.copy' round 2 of \"spare\" to chip 0, but chip 0's program never receives"],
        ),
        (
            {"run_chip": "2"},
            TpReject.DEADLOCK,
            (RunToOp, 3),
            ["'tp.run_to' round 2 runs chip 2, which has no program"],
        ),
        (
            {"run_1_to": "5"},
            TpReject.DEADLOCK,
            (RunToOp, 2),
            ["runs chip 1 to halt 5", "its links are 0..1, its end is halt 2"],
        ),
    ],
)
def test_a_fault_in_the_pair_is_refused_at_its_op(
    changes: dict[str, str],
    reason: TpReject,
    at: tuple[type[Operation], int],
    words: list[str],
) -> None:
    """Invariant: each fault is refused with its reason at the op carrying it (the n-th op of
    its kind in the function), the message naming the chips, the buffer and the types."""
    _, func = pair(**changes)
    diag = refusal(func)
    assert reason_of(diag) is reason, diag.message
    kind, n = at
    assert diag.op is ops_of(func, kind)[n], (diag.op, diag.message)
    for w in words:
        assert w in diag.message, (w, diag.message)


def test_a_copy_from_a_chip_to_itself_is_refused_even_unverified() -> None:
    """The verifier refuses ``tp.copy ... from 1 to 1``; check_programs does too, for IR that
    was built in Python and never verified."""
    _, func = pair()
    copy = ops_of(func, CopyOp)[0]
    copy.properties["source"] = IntegerAttr(1, i64)
    diag = refusal(func)
    assert reason_of(diag) is TpReject.SELF_COPY and diag.op is copy, diag.message


def test_a_copy_is_checked_for_its_source_before_its_destination() -> None:
    """A copy of "a" from chip 1 (which does not send it) to chip 0 (which does not receive
    it) is refused for its source, naming the chip that does send it."""
    _, func = pair(copy_a_from="1", copy_a_to="0")
    diag = refusal(func)
    assert reason_of(diag) is TpReject.DEADLOCK, diag.message
    assert 'from chip 1, but chip 1 never sends "a" (chip 0 does)' in diag.message


def test_tp_relay_refuses_a_program_fault_and_leaves_the_function_as_it_was() -> None:
    module, func = pair(recv_a="tensor<8xf32>")
    before = str(module)
    with pytest.raises(TpDiagnostic) as info:
        apply(module, "tp-relay")
    assert reason_of(info.value) is TpReject.LINK_TYPE
    unchanged = str(module) == before  # (a bool: pytest's diff of two modules is slow)
    assert unchanged, "tp-relay changed the function it refused"


def test_tp_relay_rebuilds_a_relay_that_does_not_fit_instead_of_refusing_it() -> None:
    module, func = pair(copy_a_from="2", run_1_to="5")
    refusal(func)
    apply(module, "tp-relay")
    check_programs(func)
    assert len(ops_of(func, RelayOp)) == 1
    rebuilt = str(module) == str(pair()[0])
    assert rebuilt, "the rebuilt relay is not the one tp-relay builds for the sound pair"


# -- B. fault injection into generated Qwen3 programs ----------------------------------------

LOWER = "tp-verify,tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay"


@functools.cache
def linked(chips: int) -> ModuleOp:
    """A tiny 2-layer Qwen3 decode step on ``chips`` chips as per-chip programs and a relay."""
    module = program(tiny(chips=chips, layers=2)).clone()
    apply(module, LOWER)
    return module


def programs_of(func: FuncOp) -> list[ChipProgramOp]:
    return [op for op in func.body.block.ops if isinstance(op, ChipProgramOp)]


def links_of(func: FuncOp) -> list[LinkOp]:
    return [lk for p in programs_of(func) for lk in p.body.block.ops if isinstance(lk, LinkOp)]


def receives_of(link: LinkOp) -> list[tuple[str, Attribute]]:
    return list(zip(link.receives, link.received.types, strict=True))


def rebuild(
    link: LinkOp,
    sends: list[tuple[SSAValue, str]] | None = None,
    receives: list[tuple[str, Attribute]] | None = None,
) -> LinkOp:
    """``link`` replaced by one with these sends and receives (its old receives first, so
    their uses move to the new op's results in order)."""
    sends = list(zip(link.sent, link.sends, strict=True)) if sends is None else sends
    if receives is None:
        receives = receives_of(link)
    new = LinkOp(
        link.halt,
        [v for v, _ in sends],
        [n for _, n in sends],
        [n for n, _ in receives],
        [t for _, t in receives],
    )
    block = link.parent_block()
    assert block is not None
    block.insert_op_before(new, link)
    for old, res in zip(link.received, new.received, strict=False):
        old.replace_all_uses_with(res)
    block.detach_op(link)
    link.erase()
    return new


def other_type(t: Attribute) -> Attribute:
    """A tensor type differing from ``t`` in shape, element type or encoding."""
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    return TensorType(t.element_type, [2 * shape[0], *shape[1:]], t.encoding)


def other_element(t: Attribute) -> Attribute:
    assert isinstance(t, TensorType)
    return TensorType(f16, t.get_shape(), t.encoding)


@dataclass
class Fault:
    """An injected fault: the reason it must be refused with, the op the refusal must name,
    and words the message must hold."""

    reason: TpReject
    at: Operation
    words: list[str]
    in_programs: bool  # a program fault (tp-relay refuses) or a relay fault (it rebuilds)


def pick(data: st.DataObject, options: Sequence[T], label: str = "") -> T:
    """One of ``options``, drawn by index: Hypothesis prints a draw, and an xDSL op's repr
    (a dataclass walking its parents) would take minutes to pretty-print."""
    return options[data.draw(st.integers(0, len(options) - 1), label=label or None)]


def position(func: FuncOp) -> Callable[[Operation], int]:
    order = {op: i for i, op in enumerate(func.walk())}
    return order.__getitem__


def inject_duplicate_program(func: FuncOp, data: st.DataObject) -> Fault:
    progs = programs_of(func)
    p = pick(data, progs, "program")
    if data.draw(st.booleans(), label="clone it (else retarget it)"):
        clone = p.clone()
        anchor = pick(data, progs, "placed before")
        func.body.block.insert_op_before(clone, anchor)
        chip = p.chip_index
    else:
        chip = pick(data, [q.chip_index for q in progs if q is not p])
        p.chip = IntegerAttr(chip, i64)
    second = [q for q in programs_of(func) if q.chip_index == chip][1]
    return Fault(TpReject.DUPLICATE_PROGRAM, second, [f"second program for chip {chip}"], True)


def inject_link_type(func: FuncOp, data: st.DataObject) -> Fault:
    receiving = [lk for lk in links_of(func) if lk.receives]
    link = pick(data, receiving, "receiving link")
    i = data.draw(st.integers(0, len(link.receives) - 1), label="receive")
    name, old = link.receives[i], link.received.types[i]
    new_type = pick(data, [other_type(old), other_element(old)], "type")
    receives = receives_of(link)
    receives[i] = (name, new_type)
    new = rebuild(link, receives=receives)
    words = [f'"{name}" as {new_type}', f"sends it as {old}"]
    return Fault(TpReject.LINK_TYPE, new, words, True)


def inject_duplicate_send(func: FuncOp, data: st.DataObject) -> Fault:
    links = links_of(func)
    first = pick(data, [lk for lk in links if lk.sends], "sending link")
    name = pick(data, first.sends, "name")
    second = pick(data, [lk for lk in links if lk.halt > 0], "again at")
    block = second.parent_block()
    assert block is not None
    # Any value the second link's program holds there will do: the name is what repeats.
    held: list[SSAValue] = list(block.args)
    for op in block.ops:
        if op is second:
            break
        held += op.results
    value = pick(data, held, "value")
    later = max(first, second, key=position(func))
    new = rebuild(second, sends=[*zip(second.sent, second.sends, strict=True), (value, name)])
    at = new if later is second else first
    return Fault(TpReject.DUPLICATE_SEND, at, [f'sends "{name}"', "already sends it"], True)


def inject_self_copy(func: FuncOp, data: st.DataObject) -> Fault:
    sender = pick(data, [lk for lk in links_of(func) if lk.sends], "link")
    i = data.draw(st.integers(0, len(sender.sends) - 1), label="send")
    name, type_ = sender.sends[i], sender.sent.types[i]
    program = sender.parent_op()
    assert isinstance(program, ChipProgramOp)
    own = [lk for lk in program.body.block.ops if isinstance(lk, LinkOp)]
    link = pick(data, own, "receives it at")
    new = rebuild(link, receives=[*receives_of(link), (name, type_)])
    words = [f'on chip {program.chip_index} receives "{name}"', "sends itself"]
    return Fault(TpReject.SELF_COPY, new, words, True)


def inject_unsent(func: FuncOp, data: st.DataObject) -> Fault:
    link = pick(data, links_of(func), "link")
    type_ = pick(data, [*link.received.types, *link.sent.types, TensorType(f16, [4])], "type")
    if link.receives and data.draw(st.booleans(), label="rename a receive"):
        i = data.draw(st.integers(0, len(link.receives) - 1))
        receives = receives_of(link)
        receives[i] = ("nobody.sends.this", receives[i][1])
    else:
        receives = receives_of(link)
        receives.append(("nobody.sends.this", type_))
    new = rebuild(link, receives=receives)
    return Fault(TpReject.DEADLOCK, new, ['"nobody.sends.this"', "no chip sends it"], True)


def relay_steps(func: FuncOp, kind: type[Operation]) -> list[Operation]:
    (relay,) = [op for op in func.body.block.ops if isinstance(op, RelayOp)]
    return [s for s in relay.body.block.ops if isinstance(s, kind)]


def inject_copy_source(func: FuncOp, data: st.DataObject) -> Fault:
    copy = pick(data, relay_steps(func, CopyOp), "copy")
    assert isinstance(copy, CopyOp)
    n = len(programs_of(func))
    src = pick(data, [c for c in range(n + 1) if c != copy.source.value.data])
    copy.properties["source"] = IntegerAttr(src, i64)
    if src == copy.dest.value.data:
        return Fault(TpReject.SELF_COPY, copy, [f"from chip {src} to itself"], False)
    return Fault(TpReject.DEADLOCK, copy, [f"chip {src} never sends"], False)


def inject_copy_dest(func: FuncOp, data: st.DataObject) -> Fault:
    copy = pick(data, relay_steps(func, CopyOp), "copy")
    assert isinstance(copy, CopyOp)
    name = copy.tensor.data
    receivers = {
        p.chip_index
        for p in programs_of(func)
        for lk in p.body.block.ops
        if isinstance(lk, LinkOp) and name in lk.receives
    }
    n = len(programs_of(func))
    src = copy.source.value.data
    dst = pick(data, [c for c in range(n + 1) if c not in receivers | {src}])
    copy.properties["dest"] = IntegerAttr(dst, i64)
    return Fault(TpReject.DEADLOCK, copy, [f'"{name}" to chip {dst}'], False)


def inject_copy_name(func: FuncOp, data: st.DataObject) -> Fault:
    copy = pick(data, relay_steps(func, CopyOp), "copy")
    copy.properties["tensor"] = StringAttr("nobody.sends.this")
    return Fault(TpReject.DEADLOCK, copy, ['"nobody.sends.this"', "no chip does"], False)


def inject_run_to_chip(func: FuncOp, data: st.DataObject) -> Fault:
    run = pick(data, relay_steps(func, RunToOp), "run_to")
    n = len(programs_of(func))
    chip = data.draw(st.integers(n, n + 5), label="chip")
    run.properties["chip"] = IntegerAttr(chip, i64)
    return Fault(TpReject.DEADLOCK, run, [f"chip {chip}, which has no program"], False)


def inject_run_to_halt(func: FuncOp, data: st.DataObject) -> Fault:
    run = pick(data, relay_steps(func, RunToOp), "run_to")
    assert isinstance(run, RunToOp)
    chip = run.chip.value.data
    (prog,) = [p for p in programs_of(func) if p.chip_index == chip]
    ends = [lk.halt for lk in prog.body.block.ops if isinstance(lk, LinkOp)]
    end = max(ends, default=0) + 1
    halt = pick(data, [0, end + 1, end + 7, -1], "halt")
    run.properties["halt"] = IntegerAttr(halt, i64)
    return Fault(TpReject.DEADLOCK, run, [f"chip {chip} to halt {halt}", "halts next at"], False)


INJECT: dict[str, Callable[[FuncOp, st.DataObject], Fault]] = {
    "duplicate-program": inject_duplicate_program,
    "link-type": inject_link_type,
    "duplicate-send": inject_duplicate_send,
    "self-copy": inject_self_copy,
    "unsent": inject_unsent,
    "copy-source": inject_copy_source,
    "copy-dest": inject_copy_dest,
    "copy-name": inject_copy_name,
    "run-to-chip": inject_run_to_chip,
    "run-to-halt": inject_run_to_halt,
}


@pytest.mark.parametrize("chips", [2, 4])
def test_generated_programs_and_their_relay_are_accepted(chips: int) -> None:
    """The control: what the passes generate fits together (so a refusal below is the
    injected fault's)."""
    func = entry_function(linked(chips))
    assert len(programs_of(func)) == chips and links_of(func)
    check_programs(func)


@pytest.mark.parametrize("chips", [2, 4])
@pytest.mark.parametrize("kind", sorted(INJECT))
@settings(max_examples=4, **SETTINGS)
@given(data=st.data())
def test_an_injected_fault_is_refused_with_its_reason_at_its_op(
    kind: str, chips: int, data: st.DataObject
) -> None:
    """Invariant: a fault injected anywhere in generated programs (or their relay) is refused
    by check_programs with its reason, at the op carrying it, naming what is wrong; tp-relay
    refuses a program fault the same way and leaves the function unchanged, and rebuilds a
    relay fault away (its new relay fits)."""
    module = linked(chips).clone()
    func = entry_function(module)
    fault = INJECT[kind](func, data)
    event(f"{kind}: {fault.reason.value}")
    diag = refusal(func)
    assert reason_of(diag) is fault.reason, (kind, diag.message)
    assert diag.op is fault.at, (kind, diag.op, fault.at, diag.message)
    for w in fault.words:
        assert w in diag.message, (kind, w, diag.message)
    before = str(module)
    if fault.in_programs:
        with pytest.raises(TpDiagnostic) as info:
            apply(module, "tp-relay")
        assert info.value.message == diag.message
        unchanged = str(module) == before  # (a bool: pytest's diff of two modules is slow)
        assert unchanged, f"tp-relay changed the function it refused ({kind})"
    else:
        apply(module, "tp-relay")
        check_programs(func)


def test_retargeting_every_program_to_one_chip_names_the_second() -> None:
    """With every program claiming chip 0, the refusal is at the second program in order."""
    func = entry_function(linked(4).clone())
    progs = programs_of(func)
    for p in progs:
        p.chip = IntegerAttr(0, i64)
    diag = refusal(func)
    assert diag.op is progs[1] and reason_of(diag) is TpReject.DUPLICATE_PROGRAM


def test_block_arguments_are_values_a_duplicate_send_may_reuse() -> None:
    """A program's block argument sent under an existing name is still a duplicate send."""
    func = entry_function(linked(2).clone())
    progs = programs_of(func)
    name = next(n for lk in links_of(func) for n in lk.sends)
    link = next(lk for lk in progs[0].body.block.ops if isinstance(lk, LinkOp) and lk.halt > 0)
    arg = progs[0].body.block.args[0]
    assert isinstance(arg, BlockArgument)
    rebuild(link, sends=[*zip(link.sent, link.sends, strict=True), (arg, name)])
    assert reason_of(refusal(func)) is TpReject.DUPLICATE_SEND


@pytest.mark.parametrize(
    "changes", [{"chip0": "1"}, {"recv_a": "tensor<8xf32>"}, {"send_b": '"a"'}]
)
def test_the_interpreter_and_tp_verify_refuse_programs_that_do_not_fit(
    changes: dict[str, str],
) -> None:
    """What tp-relay refuses, running or certifying refuses too: no wrong result with exit 0."""
    from tp_dialect.analysis.certify.obligation import check_obligation
    from tp_dialect.runtime.reference import run_program

    module, _ = pair(**changes)
    with pytest.raises(TpDiagnostic):
        run_program(module, {"arg0": np.ones(4, np.float32)})
    with pytest.raises(TpDiagnostic):
        check_obligation(module)
    sound, _ = pair()
    run_program(sound, {"arg0": np.ones(4, np.float32)})
    check_obligation(sound)
