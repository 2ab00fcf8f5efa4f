"""tp-link-points: one program per chip, halting at its link points.

Invariant: the sectioned function becomes one ``tp.chip_program`` per chip — that chip's
sections in program order (spine sections replicated into every chip's program, the seed's
all-reduce in chip 0's), each program standing alone (host inputs as block arguments,
constants cloned in) — plus the host's own statements (stores of chip outputs) and return.
Every tensor that crosses chips leaves its sender at a ``tp.link`` right after the section
that stores it and enters its receiver at a ``tp.link`` right before the first section that
loads it, by buffer name; receives needed before a chip's first section are link 0, placed by
the host before the chip starts. Halts at one boundary are one link point, in program order.

An outlined program (``@decode`` calling ``@layer``, `tp_dialect.analysis.calls.outlined`) is split
without copying the callee per call: ``@layer`` becomes one per-chip function per chip
(`tp_dialect.passes.link_calls`: ``@layer.chip1``, chip 1's sections of it with its own link
points), and each chip's program calls its function where ``@decode`` called ``@layer``,
tagged (``tp.tag = "l3_"``) so that each call's buffers are its own; what crosses chips for
a call crosses in the program, before it; the callee's host stores (a cache's ``tp.unshard``)
run on the host once per call. A callee's own lowered calls are inlined into it first
(`tp_dialect.passes.inline.inline_calls`): per-chip functions are one level deep. The flat
programs the calls stand for are `tp_dialect.analysis.calls.chip_runs.flat_copy` (tp-inline). A
call to a function holding no chip work stays inside its section (its callee in the module).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, i64
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tp_dialect.analysis.calls.chip_runs import TAG
from tp_dialect.analysis.calls.summary import CallSummary, Summaries
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.schedule.halts import ChipPlan, link_points, runs_on
from tp_dialect.analysis.touch import captured, collective, is_constant, statements
from tp_dialect.analysis.values import callee
from tp_dialect.certificate import kept
from tp_dialect.names import LAYER_ATTR, call_tag, in_layer, value_name
from tp_dialect.ops import BarrierOp, SectionOp
from tp_dialect.passes.inline import inline_calls
from tp_dialect.passes.link_calls import ChipFunctions, chip_functions
from tp_dialect.passes.preconditions import chips_to_lower, lowered_of
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp
from tp_dialect.reject import TpReject

Key = SSAValue | tuple[CallOp, SSAValue]
"""A value a chip hands the host: the caller's own, or (a call, a callee value) for a shard
a per-chip function hands the callee's host store, once per call."""


def _host_outputs(
    func: FuncOp,
    sections: list[SectionOp | CallOp],
    prov: Provenance,
    split: dict[FuncOp, ChipFunctions],
) -> dict[Key, int]:
    """Values the host needs from the chips (returned, or stored by the host), each with the
    chip that hands it over: the chip it lives on (chip provenance), or for a replicated spine
    value the lowest chip holding it; a call's result, the lowest chip whose per-chip function
    returns it; and for every call, the shards its callee's host stores take."""
    needed: list[SSAValue] = []
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    out: dict[Key, int] = {}
    for s in sections:
        if isinstance(s, CallOp):
            cf = split[_callee_of(s)]
            returned = set(cf.returned)
            for c, gives in cf.gives.items():
                for v in gives:
                    if v not in returned:  # a shard for the callee's host store
                        out.setdefault((s, v), c)
        elif not runs_on(s):
            coll = collective(s)
            assert coll is not None
            needed += list(coll.operands)
    needed += list(ret.operands)
    for v in map(lambda v: _handed_back(v, split), needed):
        owner = v.owner
        if isinstance(owner, SectionOp) and (chips := runs_on(owner)):
            out.setdefault(v, min(prov.home(v) & set(chips) or chips))
        elif isinstance(owner, CallOp) and callee(owner) in split:
            cf = split[_callee_of(owner)]
            inner = cf.returned[v.index]  # type: ignore[attr-defined]
            chips = [c for c, gives in cf.gives.items() if inner in gives]
            if chips:
                out.setdefault(v, min(chips))
    return out


def _callee_of(call: CallOp) -> FuncOp:
    f = callee(call)
    assert f is not None
    return f


def _handed_back(value: SSAValue, split: dict[FuncOp, ChipFunctions]) -> SSAValue:
    """``value``, or for a lowered call's result that is one of its callee's own arguments
    handed straight back, the caller's operand for that argument (followed through calls):
    no chip computes it, so the host takes it where the caller had it."""
    while isinstance(call := value.owner, CallOp) and callee(call) in split:
        inner = split[_callee_of(call)].returned[value.index]  # type: ignore[attr-defined]
        if not (isinstance(inner, BlockArgument) and inner.owner is _callee_of(call).body.block):
            break
        value = call.arguments[inner.index]
    return value


LowerCall = Callable[[CallOp, int, dict[Any, SSAValue], Block], int]
"""Writes a lowered call into a chip's block; returns the halts the call runs through (its
per-chip function's links), which the chip's links after it count on from."""


def chip_block(
    func: FuncOp, plan: ChipPlan, chip: int, lower_call: LowerCall, in_order: bool = False
) -> tuple[Block, list[BlockArgument], dict[Any, SSAValue]]:
    """Chip ``chip``'s part of ``func``: its sections, cloned, with link points between them
    (a lowered call written by ``lower_call``), the arguments it reads as block arguments,
    constants cloned in; no terminator yet. Also the arguments it takes and what each value
    of ``func`` is on the chip."""
    inputs: dict[BlockArgument, None] = {}
    constants: dict[Operation, None] = {}
    for s in plan.sections:
        for v in captured(s) if isinstance(s, SectionOp) else s.arguments:
            if isinstance(v, BlockArgument) and v.owner is func.body.block:
                inputs[v] = None
            elif is_constant(v.owner):  # type: ignore[arg-type]
                constants[v.owner] = None  # type: ignore[index]
    if in_order:  # a per-chip function takes its arguments in the callee's order
        inputs = dict.fromkeys(sorted(inputs, key=lambda a: a.index))
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[Any, SSAValue] = dict(zip(inputs, block.args, strict=True))
    for new, old in zip(block.args, inputs, strict=True):
        new.name_hint = old.name_hint
    for const in constants:
        block.add_op(const.clone(value_mapper=mapping))
    links = {lp.before: lp for lp in plan.links}
    passed = 0  # halts of the calls before: a call's links count on from the halt before it
    for k in range(len(plan.sections) + 1):
        if (lp := links.get(k)) is not None:
            link = LinkOp(
                lp.halt + passed if lp.halt else 0,
                [mapping[v] for v, _ in lp.sends],
                [name for _, name in lp.sends],
                [name for _, name in lp.receives],
                [v.type for v, _ in lp.receives],
            )
            block.add_op(link)
            for (v, _), r in zip(lp.receives, link.received, strict=True):
                mapping[v] = r
                r.name_hint = v.name_hint
        if k < len(plan.sections):
            section = plan.sections[k]
            if isinstance(section, CallOp):
                passed += lower_call(section, chip, mapping, block)
                continue
            clone = section.clone(value_mapper=mapping)
            clone.chips = DenseArrayBase.from_list(i64, [chip])  # runs on this chip alone
            clone.attributes.pop("tp.phase", None)
            block.add_op(clone)
            for new, old in zip(clone.outs, section.outs, strict=True):
                mapping[old] = new
    return block, list(inputs), mapping


def split_programs(
    func: FuncOp,
    n_chips: int,
    prov: Provenance,
    split: dict[FuncOp, ChipFunctions] | None = None,
    calls: dict[FuncOp, CallSummary] | None = None,
) -> None:
    """Rewrite ``func`` into per-chip programs and the host's statements (its lowered calls
    to the functions ``split`` per chip becoming calls to each chip's own)."""
    split = split or {}
    plans = link_points(func, n_chips, calls)
    stmts = statements(func)
    sections = [s for s in stmts if isinstance(s, SectionOp | CallOp)]
    owners = _host_outputs(func, sections, prov, split)
    tags = _tags(sections)
    block = func.body.block
    first = stmts[0] if stmts else block.last_op
    assert first is not None

    def lower_call(call: CallOp, c: int, mapping: dict[Any, SSAValue], into: Block) -> int:
        cf = split[_callee_of(call)]
        target = cf.funcs[c]
        for i in cf.takes[c]:
            if call.arguments[i] not in mapping:  # a host output: no chip holds it
                raise TpReject.NOT_LINKABLE.at(
                    call,
                    f"the call hands @{target.sym_name.data} %{value_name(call.arguments[i])}, "
                    f"which chip {c} does not hold (a host output, stored whole by "
                    "tp.unshard): a chip's call reads what its chip holds",
                )
        new = CallOp(
            target.sym_name.data,
            [mapping[call.arguments[i]] for i in cf.takes[c]],
            [r for r in target.function_type.outputs],
        )
        new.attributes[TAG] = StringAttr(tags[call])
        if (layer := call.attributes.get(LAYER_ATTR)) is not None:
            new.attributes[LAYER_ATTR] = layer  # the layer it runs, as the call stated it
        into.add_op(new)
        returned = cf.returned
        for inner, r in zip(cf.gives[c], new.results, strict=True):
            r.name_hint = in_layer(inner.name_hint or "", tags[call]) or None
            mapping[(call, inner)] = r
            for j, v in enumerate(returned):
                if v is inner:
                    mapping[call.results[j]] = r
        for j, v in enumerate(returned):
            if call.results[j] in mapping:
                continue
            if isinstance(v, BlockArgument):  # an argument handed straight back
                if (arg := call.arguments[v.index]) in mapping:
                    mapping[call.results[j]] = mapping[arg]
            elif is_constant(v.owner):  # type: ignore[arg-type]  # every chip holds its own
                into.add_op(const := v.owner.clone())  # type: ignore[union-attr]
                mapping[call.results[j]] = const.results[0]
                returned_constants.append(const)
        return sum(isinstance(op, LinkOp) for op in target.body.block.ops)

    host: dict[Any, SSAValue] = {}
    returned_constants: list[Operation] = []  # a callee's constant results, cloned per chip
    for c, plan in plans.items():
        outputs = [v for v, owner in owners.items() if owner == c]
        body, inputs, mapping = chip_block(func, plan, c, lower_call)
        body.add_op(FinishOp(*[mapping[v] for v in outputs]))
        for const in returned_constants:
            if not const.results[0].uses:  # nothing on this chip reads it
                const.detach()
                const.erase()
        returned_constants.clear()
        program = ChipProgramOp(c, inputs, Region(body), [mapping[v].type for v in outputs])
        block.insert_op_before(program, first)
        for v, r in zip(outputs, program.outputs, strict=True):
            host[v] = r
            r.name_hint = mapping[v].name_hint
    for s in sections:
        if isinstance(s, CallOp):
            _host_stores(s, split[_callee_of(s)], tags[s], host, block, first)
            for j, v in enumerate(split[_callee_of(s)].returned):
                if s.results[j] not in host and is_constant(v.owner):  # type: ignore[arg-type]
                    block.insert_op_before(const := v.owner.clone(), first)  # type: ignore[union-attr]
                    host[s.results[j]] = const.results[0]
        elif not runs_on(s):  # the host's own statement: a store of chip outputs
            coll = collective(s)
            assert coll is not None
            mapper = {v: host.get(u, u) for v in coll.operands if (u := _handed_back(v, split))}
            store = coll.clone(value_mapper=mapper)
            store.results[0].name_hint = s.outs[0].name_hint
            block.insert_op_before(store, first)
            host[s.outs[0]] = store.results[0]
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    ret.operands = [host.get(u, u) for u in (_handed_back(v, split) for v in ret.operands)]
    placed = set(stmts)
    for op in reversed([op for op in block.ops if op in placed or isinstance(op, BarrierOp)]):
        op.detach()
        op.erase(safe_erase=False)
    for op in [op for op in block.ops if is_constant(op) and not op.results[0].uses]:
        op.detach()
        op.erase()


def _tags(sections: list[SectionOp | CallOp]) -> dict[CallOp, str]:
    """Each lowered call's tag: its layer's (`call_tag`: ``tp.layer = 3`` -> ``l3_``), else
    ``call<k>_`` by its place among the calls (also for a second call stating a layer
    already tagged); unique either way."""
    tags: dict[CallOp, str] = {}
    used: set[str] = set()
    for k, s in enumerate(x for x in sections if isinstance(x, CallOp)):
        tag = call_tag(s) or f"call{k}_"
        if tag in used:
            tag = f"call{k}_"
        used.add(tag)
        tags[s] = tag
    return tags


def _host_stores(
    call: CallOp,
    cf: ChipFunctions,
    tag: str,
    host: dict[Any, SSAValue],
    block: Block,
    before: Operation,
) -> None:
    """The callee's host stores, for ``call``: each on the shards the chips handed over for
    it, its result standing for the call's result it is."""
    made: dict[SSAValue, SSAValue] = {}
    for s in cf.host:
        coll = collective(s)
        assert coll is not None
        mapper = {v: host[(call, v)] for v in coll.operands}
        store = coll.clone(value_mapper=mapper)
        store.results[0].name_hint = in_layer(s.outs[0].name_hint or "", tag) or None
        block.insert_op_before(store, before)
        made[s.outs[0]] = store.results[0]
    for j, v in enumerate(cf.returned):
        if v in made:
            host[call.results[j]] = made[v]


@dataclass(frozen=True)
class TpLinkPoints(ModulePass):
    """Split the sectioned program into one program per chip, halting at link points (an
    outlined program's callee split once into per-chip functions the programs call)."""

    name = "tp-link-points"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs, work = lowered_of(op, self.name)
        func = funcs[-1]  # the entry: callers come after their callees
        n = chips_to_lower(op, self.name)  # a program for every chip
        with kept(op):  # every section runs where it ran; the programs only make it explicit
            # A callee's own lowered calls are inlined into it: per-chip functions are one
            # level deep (the entry's programs call them; they call nothing).
            inline_calls(
                op,
                lambda call: work.lowered(call) is not None and call.parent_op() is not func,
            )
            prov = Provenance(op)
            summaries = Summaries(n, work)
            calls: dict[FuncOp, CallSummary] = {}
            for stmt in statements(func):
                if (f := work.lowered(stmt)) is not None and f not in calls:
                    summary = summaries.of(f)
                    assert summary is not None  # recursion was refused by lowered_of
                    calls[f] = summary
            split = {f: chip_functions(f, n, prov, calls, chip_block) for f in calls}
            split_programs(func, n, prov, split, calls)
            for f in split:  # private, and no call names it any more
                if f.sym_visibility is not None and f.sym_visibility.data == "private":
                    f.detach()
                    f.erase()
