"""tp-export's cut of one chip's program into segments, through the per-chip functions it
calls (`tp_dialect.passes.export`).

A chip runs *units*: stretches of its program's top-level ops (cut at its links and at its
calls) and, for each call of a per-chip function, the function's *parts* (its body cut at
its links). A unit ending at a halt closes what the relay's ``run`` of that halt runs; a
unit cut at a call (or at a function's return) is followed, in the same run, by the next.
A function's part is written once as a segment function (its *code*) whatever the number of
calls; each call of it is a manifest entry of its own, naming the code and the ports that
call binds: that call's weights (``shard``/``input``), its buffers (names expanded by the
call's tag, `expanded_name`) and its carried values (keys of their own per call).

A value is named globally as ``(call, value)``: a value of a function's body as one call runs
it (``call`` None: the program's own). A function's argument is the value its call passes
(`ChipCut.resolve`), a call's result the value the function returns, so a value lives where it
is computed, once. Linear in the program's ops plus, per call, the ports it binds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.calls.chip_runs import chip_function, expanded_name, program_links, tag_of
from tp_dialect.analysis.touch import is_constant
from tp_dialect.ops import ShardOp
from tp_dialect.passes.export_ops import PortFlags, PortInfo, refuse
from tp_dialect.passes.export_parts import (
    Bind,
    Part,
    Scope,
    function_parts,
    part_homes,
    reads_of,
    symbol,
    write,
)
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp

Global = tuple[CallOp | None, SSAValue]
"""A value as a chip computes it: ``(call, value)``, a function body's value in that call."""


@dataclass
class _Code:
    """One part of a per-chip function as a segment function, with what each of its
    arguments and results stands for, to be bound per call: ``("receive"|"send", name)``,
    ``("arg", i)`` (the function's i-th argument), ``("shard", i, axis, ranges)``,
    ``("carry", value)``."""

    func: FuncOp
    args: list[tuple[Any, ...]]
    results: list[tuple[Any, ...]]
    flags: PortFlags
    written: bool = False
    """Whether an entry has brought the function into the export already."""

    def empty(self) -> bool:
        """Whether the part does nothing: no ports, no op but its return."""
        block = self.func.body.block
        return not self.args and not self.results and block.first_op is block.last_op


@dataclass
class _Function:
    """A per-chip function cut into parts: each value's part, each part's needs and what it
    hands on, and its parts' code (written once)."""

    func: FuncOp
    scope: Scope
    parts: list[Part]
    home: dict[SSAValue, int]
    needs: list[dict[SSAValue, None]]
    carried: list[dict[SSAValue, None]]
    code: list[_Code] = field(default_factory=list)


@dataclass
class _Unit:
    """What the chip runs between two cuts: a part of its program (``call`` None) or part
    ``index`` of the function ``call`` runs; ``halt``: the halt it ends at (None: the next
    unit follows in the same run)."""

    part: Part
    halt: int | None
    call: CallOp | None = None
    index: int = 0
    produce: list[Global] = field(default_factory=list)
    """Constants of the program a function's argument binds: this unit computes them."""


class ChipCut:
    """One chip's program cut into units, and the segments and entries they become."""

    def __init__(
        self,
        program: ChipProgramOp,
        input_name: dict[SSAValue, str],
        functions: dict[FuncOp, _Function],
        taken: set[str],
    ) -> None:
        self.program = program
        self.chip = program.chip_index
        self.input_name = input_name
        self.functions = functions
        self.taken = taken
        self.scope = Scope(program.body.block, frozenset(range(len(program.inputs))))
        self.keys: dict[Global, str] = {}
        self.callees: dict[Operation, FuncOp | None] = {}
        self.units = self._units()
        self.runs: dict[int, list[str]] = {}
        """The entries the relay's run of each halt runs, in order."""

    def callee(self, op: Operation) -> FuncOp | None:
        """The per-chip function ``op`` calls, if it is such a call (looked up once)."""
        if op not in self.callees:
            self.callees[op] = chip_function(op)
        return self.callees[op]

    def _function(self, f: FuncOp) -> _Function:
        """``f`` cut into parts (once for every program calling it)."""
        if (known := self.functions.get(f)) is not None:
            return known
        block = self.program.body.block
        calls = [op for op in block.ops if self.callee(op) is f]
        sources = frozenset(
            i
            for i in range(len(f.body.block.args))
            if all(self.scope.is_source(self.resolve(c, f.body.block.args[i])[1]) for c in calls)
        )  # a shard cuts a placed slice only where every call passes a host input
        scope = Scope(f.body.block, sources)
        parts = function_parts(f)
        home = part_homes(parts)
        needs = [reads_of(p, scope) for p in parts]
        carried: list[dict[SSAValue, None]] = [{} for _ in parts]
        ret = f.body.block.last_op
        assert isinstance(ret, ReturnOp)
        for k, need in enumerate([*needs, dict.fromkeys(ret.operands)]):
            for v in need:  # what later parts read, and what the function returns
                j = home.get(v)
                if j is not None and j < k and scope.placed(v) is None:
                    carried[j][v] = None
        fn = _Function(f, scope, parts, home, needs, carried)
        fn.code = [self._code(fn, k) for k in range(len(parts))]
        self.functions[f] = fn
        return fn

    def _units(self) -> list[_Unit]:
        """The program's units in the order the chip runs them."""
        halts = iter(program_links(self.program))
        units: list[_Unit] = []
        current = Part()
        last = 0
        produced: set[Global] = set()
        for op in self.program.body.block.ops:
            if is_constant(op):
                continue  # cloned into every segment reading it
            if isinstance(op, LinkOp):
                if op.halt == 0:  # the start: what the host places before the chip runs
                    current.receives = list(zip(op.received, op.receives, strict=True))
                    next(halts)
                    continue
                last = next(halts).halt
                current.sends = list(zip(op.sent, op.sends, strict=True))
                units.append(_Unit(current, last))
                current = Part(list(zip(op.received, op.receives, strict=True)))
            elif isinstance(op, FinishOp):
                current.outputs = list(op.values)
                units.append(_Unit(current, last + 1))
                current = Part()
            elif (f := self.callee(op)) is not None:
                assert isinstance(op, CallOp)
                before = _Unit(current, None)
                for v in op.operands:  # a constant the function takes: computed before
                    g = self.resolve(None, v)
                    if g not in produced and isinstance(g[1].owner, Operation):
                        if is_constant(g[1].owner):
                            produced.add(g)
                            before.produce.append(g)
                units.append(before)
                fn = self._function(f)
                for k, part in enumerate(fn.parts):
                    if part.link is not None:
                        last = next(halts).halt
                    units.append(_Unit(part, last if part.link else None, op, k))
                current = Part()
            elif isinstance(op, CallOp):
                raise refuse(
                    op,
                    f"chip {self.chip}'s program calls @{op.callee.string_value()}, which is "
                    "not a per-chip function: only a per-chip function's calls are cut into "
                    "segments",
                )
            else:
                current.ops.append(op)
        return units

    def resolve(self, call: CallOp | None, value: SSAValue) -> Global:
        """Where ``value`` (of ``call``'s function body, or the program's) is computed: a
        function's argument is what its call passes, a call's result what it returns."""
        while True:
            if call is not None:
                f = self.callee(call)
                assert f is not None
                if isinstance(value, BlockArgument) and value.owner is f.body.block:
                    call, value = None, call.operands[value.index]
                    continue
                return call, value
            owner = value.owner
            if isinstance(owner, CallOp) and (f := self.callee(owner)) is not None:
                ret = f.body.block.last_op
                assert isinstance(ret, ReturnOp)
                call, value = owner, ret.operands[value.index]  # type: ignore[attr-defined]
                continue
            return None, value

    def scope_of(self, call: CallOp | None) -> Scope:
        """The scope of the program (``call`` None) or of the function ``call`` runs."""
        if call is None:
            return self.scope
        f = self.callee(call)
        assert f is not None
        return self.functions[f].scope

    def placed(self, g: Global) -> ShardOp | None:
        """The ``tp.shard`` whose slice the host places as ``g``, if it is one."""
        return self.scope_of(g[0]).placed(g[1])

    def home(self, g: Global, homes: dict[Global, int], starts: dict[CallOp, int]) -> int | None:
        """The unit computing ``g``: a function's part as its call runs it, else the
        program's unit (`homes`)."""
        call, value = g
        if call is None or g in homes:
            return homes.get(g)
        f = self.callee(call)
        assert f is not None
        k = self.functions[f].home.get(value)
        return None if k is None else starts[call] + k

    def key(self, g: Global) -> str:
        """``g``'s carry key, unique on the chip (each call's values keyed apart)."""
        return self.keys.setdefault(g, f"c{self.chip}_{g[1].name_hint or 'v'}_{len(self.keys)}")

    def host_port(self, g: Global) -> PortInfo | None:
        """The port of a value the host places: a chip's slice of a host input, or a host
        input whole."""
        if (shard := self.placed(g)) is not None:
            sl = shard.slice
            source = self.resolve(g[0], shard.source)[1]
            name = self.input_name[self.program.inputs[source.index]]  # type: ignore[attr-defined]
            return PortInfo(
                "shard", name, sl.axis_index, tuple((int(a), int(s)) for a, s in sl.ranges)
            )
        if self.scope.is_source(g[1]) and g[0] is None:
            return PortInfo("input", self.input_name[self.program.inputs[g[1].index]])  # type: ignore[attr-defined]
        return None

    def _code(self, fn: _Function, k: int) -> _Code:
        """Part ``k`` of ``fn`` as a segment function, what each port stands for to be bound
        per call: ``("receive"|"send", name)``, ``("arg", i)``, ``("shard", i, axis,
        ranges)``, ``("carry", value)``."""
        part, scope = fn.parts[k], fn.scope

        def bind(v: SSAValue) -> Bind | None:
            if fn.home.get(v) == k and scope.placed(v) is None:
                return None
            if (shard := scope.placed(v)) is not None:
                sl = shard.slice
                ranges = tuple((int(a), int(s)) for a, s in sl.ranges)
                d: tuple[Any, ...] = ("shard", shard.source.index, sl.axis_index, ranges)  # type: ignore[attr-defined]
                return d, d, shard
            if isinstance(v, BlockArgument) and v.owner is fn.func.body.block:
                return ("arg", v.index), ("arg", v.index), None
            if fn.home.get(v) is not None:
                return ("carry", v), ("carry", v), None
            return None

        results: list[tuple[SSAValue, Any]] = [(v, ("send", n)) for v, n in part.sends]
        results += [(v, ("carry", v)) for v in fn.carried[k]]
        name = self._fresh(symbol(f"{fn.func.sym_name.data}_part{k}"))
        func, args = write(name, part, scope, bind, results)
        args = [("receive", p.name) if isinstance(p, PortInfo) else p for p in args]
        return _Code(func, args, [d for _, d in results], PortFlags.of(func))

    def _fresh(self, name: str) -> str:
        """``name``, numbered on when a function of the module already has it."""
        base, n = name, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def segments(self) -> Iterator[tuple[FuncOp | None, dict[str, Any]]]:
        """The chip's segments in the order it runs them: each a function (None: a call of
        a function's part written before) and its manifest entry."""
        units = self.units
        starts: dict[CallOp, int] = {}
        homes: dict[Global, int] = {}
        for u, unit in enumerate(units):
            if unit.call is None:
                homes.update(((None, v), u) for v, _ in unit.part.receives)
                for op in unit.part.ops:
                    homes.update(((None, r), u) for r in op.results)
                homes.update((g, u) for g in unit.produce)
            elif unit.index == 0:
                starts[unit.call] = u
        carried: list[dict[Global, str]] = [{} for _ in units]  # what each unit hands on
        for k, unit in enumerate(units):
            for g in self._reads(unit):
                j = self.home(g, homes, starts)
                if j is not None and j < k and self.placed(g) is None:
                    key = self.key(g)
                    if units[j].call is None:
                        carried[j][g] = key
        kept = [  # a cut (before a call, after a return) with nothing to do runs nowhere
            u
            for u, unit in enumerate(units)
            if unit.halt is not None
            or (unit.call is not None and not self._code_of(unit).empty())
            or carried[u]
            or any(not self.scope.loads(op) for op in unit.part.ops)
        ]
        names = self._names([units[u] for u in kept])
        halt = 0
        halts: list[int] = []  # the halt each unit's run arrives at
        for u in reversed(kept):
            halt = units[u].halt if units[u].halt is not None else halt  # type: ignore[assignment]
            halts.append(halt)
        halts.reverse()
        for u, name, h in zip(kept, names, halts, strict=True):
            unit = units[u]
            self.runs.setdefault(h, []).append(name)
            if unit.call is None:
                yield self._piece(unit, u, h, name, carried[u], homes, starts)
            else:
                yield self._instance(unit, h, name, homes, starts)

    def _reads(self, unit: _Unit) -> Iterator[Global]:
        """What ``unit`` reads from elsewhere, as globals (a part's through its call: its
        function's arguments it reads)."""
        if unit.call is None:
            for v in reads_of(unit.part, self.scope):
                yield self.resolve(None, v)
            return
        f = self.callee(unit.call)
        assert f is not None
        for d in self._code_of(unit).args:
            if d[0] == "arg":
                yield self.resolve(unit.call, f.body.block.args[d[1]])

    def _code_of(self, unit: _Unit) -> _Code:
        """The code of the function's part a call's unit runs."""
        assert unit.call is not None
        f = self.callee(unit.call)
        assert f is not None
        return self.functions[f].code[unit.index]

    def _names(self, units: list[_Unit]) -> list[str]:
        """Each unit's entry name: ``chip<c>_halt<h>``, with ``_<i>`` when the run of halt h
        runs several units."""
        out: list[str] = []
        group: list[int] = []
        for i, unit in enumerate(units):
            group.append(i)
            if unit.halt is None:
                continue
            base = f"chip{self.chip}_halt{unit.halt}"
            if len(group) == 1:
                out.append(self._fresh(base))
            else:
                out += [self._fresh(f"{base}_{n}") for n in range(len(group))]
            group = []
        assert not group, "a chip's units end at its end"
        return out

    def _piece(
        self,
        unit: _Unit,
        k: int,
        halt: int,
        name: str,
        carried: dict[Global, str],
        homes: dict[Global, int],
        starts: dict[CallOp, int],
    ) -> tuple[FuncOp, dict[str, Any]]:
        """A unit of the program's own ops as a segment function and its entry."""
        part = unit.part

        def bind(v: SSAValue) -> Bind | None:
            g = self.resolve(None, v)
            if self.home(g, homes, starts) == k and self.placed(g) is None:
                return None
            port = self.host_port(g)
            if port is not None and port.kind == "shard":
                return port, port, self.placed(g)
            if port is not None:
                return g, port, None
            if self.home(g, homes, starts) is not None:
                return g, PortInfo("carry", self.keys[g]), None
            return None

        results = [(v, PortInfo("send", n)) for v, n in part.sends]
        results += [(g[1], PortInfo("carry", key)) for g, key in carried.items()]
        results += [(v, PortInfo("output", index=i)) for i, v in enumerate(part.outputs)]
        func, args = write(
            name,
            part,
            self.scope,
            bind,
            results,
            lambda v: self.resolve(None, v)[1],
            [g[1] for g in unit.produce if g in carried],
        )
        arg_json, res_json = PortFlags.of(func).ports_json(args, [p for _, p in results])
        entry = {
            "function": name,
            "chip": self.chip,
            "halt": halt,
            "arguments": arg_json,
            "results": res_json,
        }
        return func, entry

    def _instance(
        self, unit: _Unit, halt: int, name: str, homes: dict[Global, int], starts: dict[CallOp, int]
    ) -> tuple[FuncOp | None, dict[str, Any]]:
        """Part ``unit.index`` of a function as ``unit.call`` runs it: its code (the function
        the first call's entry brings) and the ports this call binds."""
        call = unit.call
        assert call is not None
        code = self._code_of(unit)
        f = self.callee(call)
        assert f is not None
        tag = tag_of(call)
        args: list[PortInfo] = []
        for d in code.args:
            if d[0] == "receive":
                args.append(PortInfo("receive", expanded_name(d[1], tag)))
            elif d[0] == "carry":
                args.append(PortInfo("carry", self.key((call, d[1]))))
            elif d[0] == "shard":
                source = self.resolve(call, f.body.block.args[d[1]])[1]
                input_name = self.input_name[self.program.inputs[source.index]]  # type: ignore[attr-defined]
                args.append(PortInfo("shard", input_name, d[2], d[3]))
            else:
                g = self.resolve(call, f.body.block.args[d[1]])
                port = self.host_port(g)
                if port is None:  # else computed on the chip (a constant: before the call)
                    assert self.home(g, homes, starts) is not None, g
                    port = PortInfo("carry", self.key(g))
                args.append(port)
        results: list[PortInfo] = []
        for d in code.results:
            if d[0] == "send":
                results.append(PortInfo("send", expanded_name(d[1], tag)))
            else:
                results.append(PortInfo("carry", self.key((call, d[1]))))
        arg_json, res_json = code.flags.ports_json(args, results)
        first, code.written = not code.written, True
        entry = {
            "function": name,
            "code": code.func.sym_name.data,
            "chip": self.chip,
            "halt": halt,
            "arguments": arg_json,
            "results": res_json,
        }
        return (code.func if first else None), entry
