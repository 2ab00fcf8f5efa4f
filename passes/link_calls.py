"""Per-chip functions: a function holding chip work, split once into one function per chip.

tp-link-points lowers an outlined program (``@decode`` calling ``@layer``,
`tp_dialect.analysis.calls.outlined`) without copying the callee per call: ``@layer`` becomes
``@layer.chip0`` … ``@layer.chipN-1`` (marked `CHIP_FUNCTION`), chip c's sections of the
callee in program order with its own link points (numbered from 1: a function has no start),
and each chip's program calls its function once per call. A per-chip function takes the
callee's arguments chip c reads (`ChipFunctions.takes`) and returns what chip c holds of the
callee's results, then the shards chip c hands to the callee's host stores (a ``tp.unshard``
of a cache): the host runs those stores once per call, on the programs' outputs.

The buffer names a per-chip function's links send and receive are the callee's, written once;
each call expands them by its call tag (``tp.tag = "l3_"``: ``l_c1_o`` → ``l3_c1_o``,
`tp_dialect.analysis.calls.chip_runs.expanded_name`), so every call's buffers are its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from tp_dialect.analysis.calls.summary import CallSummary
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.schedule.halts import link_points, runs_on
from tp_dialect.analysis.touch import collective, statements
from tp_dialect.ops import SectionOp, UnshardOp
from tp_dialect.program_ops import CHIP_FUNCTION
from tp_dialect.reject import TpReject


@dataclass
class ChipFunctions:
    """The per-chip functions of ``callee``: ``funcs[c]`` takes the callee's arguments
    ``takes[c]`` (indices) and returns the callee values ``gives[c]``, in order; ``host``
    are the callee's host stores, run by the host once per call."""

    callee: FuncOp
    funcs: dict[int, FuncOp] = field(default_factory=dict[int, FuncOp])
    takes: dict[int, list[int]] = field(default_factory=dict[int, list[int]])
    gives: dict[int, list[SSAValue]] = field(default_factory=dict[int, list[SSAValue]])
    host: list[SectionOp] = field(default_factory=list[SectionOp])

    @property
    def returned(self) -> list[SSAValue]:
        """What the callee returns, in order: the values a call's results stand for."""
        ret = self.callee.body.block.last_op
        assert isinstance(ret, ReturnOp)
        return list(ret.operands)


ChipBlock = Callable[..., tuple[Block, list[BlockArgument], dict[Any, SSAValue]]]
"""tp-link-points' builder of a chip's part of a function (`link_points.chip_block`): the
same for programs and for per-chip functions."""


def chip_functions(
    callee: FuncOp,
    n_chips: int,
    prov: Provenance,
    calls: dict[FuncOp, CallSummary],
    chip_block: ChipBlock,
) -> ChipFunctions:
    """``callee`` split into one function per chip, inserted after it (module docstring),
    each chip's part built by ``chip_block``; the callee itself is left for the caller to
    erase once no call names it."""
    plans = link_points(callee, n_chips, calls, start=False)
    for op in statements(callee):
        if isinstance(op, CallOp):  # a lowered call: a statement of its own
            raise TpReject.NOT_LINKABLE.at(
                op,
                "a call inside a function that is split per chip: per-chip functions do not "
                "call each other (tp-link-points inlines such calls first)",
            )
    sections = [s for s in statements(callee) if isinstance(s, SectionOp)]
    result = ChipFunctions(callee, host=[s for s in sections if not runs_on(s)])
    ret = callee.body.block.last_op
    assert isinstance(ret, ReturnOp)
    host_made = {s.outs[0] for s in result.host}
    stored: dict[SSAValue, int] = {}  # a host store's operand: the chip that hands it over
    for s in result.host:
        coll = collective(s)
        assert isinstance(coll, UnshardOp)
        for v in coll.operands:
            owner = v.owner
            if isinstance(owner, SectionOp) and (chips := runs_on(owner)):
                stored.setdefault(v, min(prov.home(v) & set(chips) or chips))
    after: Operation = callee
    for c, plan in plans.items():
        block, inputs, mapping = chip_block(callee, plan, c, lambda *_: 0, in_order=True)
        # What chip c holds of the callee's results (computed or received on c, or an
        # argument it reads), then the shards it hands to the host's stores.
        gives = [
            v
            for v in dict.fromkeys(ret.operands)
            if v not in host_made and v in mapping and not isinstance(v, BlockArgument)
        ]
        gives += [v for v, owner in stored.items() if owner == c]
        block.add_op(ReturnOp(*[mapping[v] for v in gives]))
        name = f"{callee.sym_name.data}.chip{c}"
        func = FuncOp(
            name,
            ([a.type for a in block.args], [mapping[v].type for v in gives]),
            Region(block),
            visibility="private",
        )
        func.attributes[CHIP_FUNCTION] = IntegerAttr(c, i64)
        callee.parent_block().insert_op_after(func, after)  # type: ignore[union-attr]
        after = func
        result.funcs[c] = func
        result.takes[c] = [a.index for a in inputs]
        result.gives[c] = gives
    return result
