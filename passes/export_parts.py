"""tp-export's parts: a chip's ops between two cuts (`Part`), the block they read from
(`Scope`: which of its arguments the host places), and a part written as a segment function
(`write`), for the program's own stretches and per-chip functions' parts alike
(`tp_dialect.passes.export_cut`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from tp_dialect.analysis.touch import is_constant
from tp_dialect.analysis.values import defined_within
from tp_dialect.ops import SectionOp, ShardOp, YieldOp
from tp_dialect.passes.export_ops import PortInfo, SegmentBuilder
from tp_dialect.program_ops import LinkOp


@dataclass(frozen=True)
class Scope:
    """The block a unit's ops read from (a program's or a per-chip function's), and which of
    its arguments a ``tp.shard`` in it cuts as a slice the host places (`sources`)."""

    block: Block
    sources: frozenset[int]

    def is_source(self, value: SSAValue) -> bool:
        """Whether ``value`` is an argument of the block the host places (or slices)."""
        return (
            isinstance(value, BlockArgument)
            and value.owner is self.block
            and value.index in self.sources
        )

    def placed(self, value: SSAValue) -> ShardOp | None:
        """The ``tp.shard`` of a placed argument that ``value`` is (directly or as a
        section's result yielding it): the slice the host loads onto the chip."""
        owner = value.owner
        if isinstance(owner, SectionOp):
            last = owner.body.block.last_op
            assert isinstance(last, YieldOp)
            value = last.operands[value.index]  # type: ignore[attr-defined]
            owner = value.owner
        if isinstance(owner, ShardOp) and self.is_source(owner.source):
            return owner
        return None

    def loads(self, op: Operation) -> bool:
        """Whether ``op`` only loads placed slices (a section of ``tp.shard`` ops): the host
        places them, so no segment runs it; the segments reading them take them as
        arguments."""
        if isinstance(op, ShardOp):
            return self.is_source(op.source)
        return isinstance(op, SectionOp) and all(self.placed(r) for r in op.results)

    def free(self, op: Operation) -> Iterable[SSAValue]:
        """The values ``op`` (with everything nested in it) reads from outside itself; a
        ``tp.shard`` of a placed argument stands for its slice (the whole is not read)."""
        for inner in op.walk():
            if isinstance(inner, ShardOp) and self.is_source(inner.source):
                yield inner.result
                continue
            for v in inner.operands:
                if not defined_within(v, op):
                    yield v


@dataclass
class Part:
    """Ops a chip runs between two cuts, and the cuts' links (names as written)."""

    receives: list[tuple[SSAValue, str]] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)
    sends: list[tuple[SSAValue, str]] = field(default_factory=list)
    outputs: list[SSAValue] = field(default_factory=list)
    link: LinkOp | None = None
    """The link the part ends at (None: a function's last part, ending at its return)."""


def function_parts(f: FuncOp) -> list[Part]:
    """A per-chip function's body cut at its links (numbered 1..K by `program_links`)."""
    parts: list[Part] = []
    current = Part()
    for op in f.body.block.ops:
        if is_constant(op) or isinstance(op, ReturnOp):
            continue
        if isinstance(op, LinkOp):
            current.sends = list(zip(op.sent, op.sends, strict=True))
            current.link = op
            parts.append(current)
            current = Part(list(zip(op.received, op.receives, strict=True)))
        else:
            current.ops.append(op)
    parts.append(current)
    return parts


def reads_of(part: Part, scope: Scope) -> dict[SSAValue, None]:
    """What ``part`` reads from outside its ops (a placed slice as its shard's result), what
    it sends and outputs, in order of first read."""
    need: dict[SSAValue, None] = {}
    for op in part.ops:
        if not scope.loads(op):
            need.update((v, None) for v in scope.free(op))
    need.update((v, None) for v, _ in part.sends)
    need.update((v, None) for v in part.outputs)
    return need


def part_homes(parts: list[Part]) -> dict[SSAValue, int]:
    """The part computing (or receiving) each value of ``parts``."""
    home: dict[SSAValue, int] = {}  # the part computing (or receiving) each value
    for k, part in enumerate(parts):
        home.update((v, k) for v, _ in part.receives)
        for op in part.ops:
            home.update((r, k) for r in op.results)
    return home


def symbol(text: str) -> str:
    """``text`` as a function name every consumer accepts (IREE's names take no dots)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


Bind = tuple[Hashable, Any, ShardOp | None]
"""How a segment takes a value it reads: one argument per key, standing for the port (or
what a call binds it to); with the ``tp.shard`` whose slice it is."""


def write(
    name: str,
    part: Part,
    scope: Scope,
    bind: Callable[[SSAValue], Bind | None],
    results: list[tuple[SSAValue, Any]],
    constant: Callable[[SSAValue], SSAValue] = lambda v: v,
    produce: Iterable[SSAValue] = (),
) -> tuple[FuncOp, list[Any]]:
    """``part`` as the segment function ``name``: arguments what it receives (its port a
    receive, by name), then what it reads from elsewhere (`bind`: None for a value it
    computes itself, or a constant), then constants cloned where read (``constant``: the
    value a read one is), its ops, ``produce``'s constants, and ``results`` returned.
    Returns the function and what each argument stands for."""
    b = SegmentBuilder()
    for v, port_name in part.receives:
        b.add_arg(v, PortInfo("receive", port_name))
    need = reads_of(part, scope)
    bound: dict[Hashable, SSAValue] = {}
    for v in need:
        if v in b.mapping or (how := bind(v)) is None:
            continue
        key, port, shard = how
        if key not in bound:  # one argument per key (per slice, however many shards cut it)
            b.add_arg(v, port)
            bound[key] = b.mapping[v]
        b.mapping[v] = bound[key]
        if shard is not None:
            b.mapping[shard.result] = bound[key]
    for v in need:  # constants last among the setup: cloned where the segment reads them
        c = constant(v)
        if v not in b.mapping and is_constant(c.owner):  # type: ignore[arg-type]
            if c not in b.mapping:
                b.clone_in(c.owner)  # type: ignore[arg-type]
            b.mapping[v] = b.mapping[c]
    for op in part.ops:
        if not scope.loads(op):
            b.clone_in(op)
    for c in produce:
        if c not in b.mapping:
            b.clone_in(c.owner)  # type: ignore[arg-type]
    values = [b.result(v) for v, _ in results]
    b.emit(ReturnOp(*values))
    func = FuncOp(
        name,
        FunctionType.from_lists([a.type for a in b.block.args], [v.type for v in values]),
        Region(b.block),
    )
    return func, b.args
