"""tp-link-points: one program per chip, halting at its link points.

Invariant: the sectioned function becomes one ``tp.chip_program`` per chip — that chip's
sections in program order (spine sections replicated into every chip's program, the seed's
all-reduce in chip 0's), each program standing alone (host inputs as block arguments,
constants cloned in) — plus the host's own statements (stores of chip outputs) and return.
Every tensor that crosses chips leaves its sender at a ``tp.link`` right after the section
that stores it and enters its receiver at a ``tp.link`` right before the first section that
loads it, by buffer name; receives needed before a chip's first section are link 0, placed by
the host before the chip starts. Halts at one boundary are one link point, in program order.

Per-chip programs are flat for now: in an outlined program (``@decode`` calling ``@layer``,
`tp_dialect.analysis.calls`) the calls to functions holding chip work are inlined first
(`tp_dialect.passes.inline.inline_calls`: each copy's names and labels take its layer's tag,
the phases are renumbered in program order, the callee, once private and unused, erased), so
each chip's program holds every layer's sections in turn, as the flat pipeline's do. A call
to a function holding no chip work stays inside its section (and its callee in the module).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tp_dialect.analysis.link_points import ChipPlan, link_points, runs_on
from tp_dialect.analysis.provenance import Provenance
from tp_dialect.analysis.touch import captured, collective, is_constant, statements
from tp_dialect.certificate import kept
from tp_dialect.ops import BarrierOp, SectionOp
from tp_dialect.passes.inline import inline_calls
from tp_dialect.passes.preconditions import chips_to_lower, lowered_of
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp


def _host_outputs(func: FuncOp, sections: list[SectionOp], prov: Provenance) -> dict[SSAValue, int]:
    """Values the host needs from the chips (returned, or stored by the host), each with the
    chip that hands it over: the chip it lives on (chip provenance), or for a replicated spine
    value the lowest chip holding it."""
    needed: list[SSAValue] = []
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    for s in sections:
        if not runs_on(s):
            coll = collective(s)
            assert coll is not None
            needed += list(coll.operands)
    needed += list(ret.operands)
    out: dict[SSAValue, int] = {}
    for v in needed:
        owner = v.owner
        if isinstance(owner, SectionOp) and (chips := runs_on(owner)):
            out.setdefault(v, min(prov.home(v) & set(chips) or chips))
    return out


def _chip_program(func: FuncOp, plan: ChipPlan, outputs: list[SSAValue]) -> ChipProgramOp:
    """Chip ``plan.chip``'s program: its sections, cloned, with link points between them."""
    c = plan.chip
    inputs: dict[BlockArgument, None] = {}
    constants: dict[Operation, None] = {}
    for s in plan.sections:
        for v in captured(s):
            if isinstance(v, BlockArgument) and v.owner is func.body.block:
                inputs[v] = None
            elif is_constant(v.owner):  # type: ignore[arg-type]
                constants[v.owner] = None  # type: ignore[index]
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args, strict=True))
    for new, old in zip(block.args, inputs, strict=True):
        new.name_hint = old.name_hint
    for const in constants:
        block.add_op(const.clone(value_mapper=mapping))
    links = {lp.before: lp for lp in plan.links}
    for k in range(len(plan.sections) + 1):
        if (lp := links.get(k)) is not None:
            link = LinkOp(
                lp.halt,
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
            clone = section.clone(value_mapper=mapping)
            clone.chips = DenseArrayBase.from_list(i64, [c])  # runs on this chip alone
            clone.attributes.pop("tp.phase", None)
            block.add_op(clone)
            for new, old in zip(clone.outs, section.outs, strict=True):
                mapping[old] = new
    block.add_op(FinishOp(*[mapping[v] for v in outputs]))
    return ChipProgramOp(c, list(inputs), Region(block), [v.type for v in outputs])


def split_programs(func: FuncOp, n_chips: int, prov: Provenance) -> None:
    """Rewrite ``func`` into per-chip programs and the host's statements."""
    plans = link_points(func, n_chips)
    stmts = statements(func)
    sections = [s for s in stmts if isinstance(s, SectionOp)]
    owners = _host_outputs(func, sections, prov)
    block = func.body.block
    first = stmts[0] if stmts else block.last_op
    assert first is not None
    host: dict[SSAValue, SSAValue] = {}
    for c, plan in plans.items():
        outputs = [v for v, owner in owners.items() if owner == c]
        program = _chip_program(func, plan, outputs)
        block.insert_op_before(program, first)
        for v, r in zip(outputs, program.outputs, strict=True):
            host[v] = r
            r.name_hint = v.name_hint
    for s in sections:
        if not runs_on(s):  # the host's own statement: a store of chip outputs
            coll = collective(s)
            assert coll is not None
            store = coll.clone(value_mapper=dict(host))
            store.results[0].name_hint = s.outs[0].name_hint
            block.insert_op_before(store, first)
            host[s.outs[0]] = store.results[0]
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    ret.operands = [host.get(v, v) for v in ret.operands]
    placed = set(stmts)
    for op in reversed([op for op in block.ops if op in placed or isinstance(op, BarrierOp)]):
        op.detach()
        op.erase(safe_erase=False)
    for op in [op for op in block.ops if is_constant(op) and not op.results[0].uses]:
        op.detach()
        op.erase()


@dataclass(frozen=True)
class TpLinkPoints(ModulePass):
    """Split the sectioned program into one program per chip, halting at link points (an
    outlined program's calls holding chip work inlined first: per-chip programs are flat
    for now)."""

    name = "tp-link-points"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs, work = lowered_of(op, self.name)
        func = funcs[-1]  # the entry: callers come after their callees
        n = chips_to_lower(op, self.name)  # a program for every chip
        with kept(op):  # every section runs where it ran; the programs only make it explicit
            # Per-chip programs are flat for now: the calls holding chip work inlined.
            inline_calls(op, lambda call: work.lowered(call) is not None)
            split_programs(func, n, Provenance(op))
