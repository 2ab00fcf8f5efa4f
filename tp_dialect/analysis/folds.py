"""The seed's spelling of an all-reduce: a left fold of adds over chip-local partials.

``s1 = p0 + p1; s2 = s1 + p2; ...`` — every sum a spine value used only by the next add (as
its left operand), every later right operand a chip-owned partial. `find_folds` returns each
maximal such chain with at least two chip-owned partials; `Fold.is_allreduce` says whether it
is a valid all-reduce (one partial per chip, in chip order), the verifier says why not. A sum
used on the left of an add of spine data (a residual) ends the fold: that add is ordinary
spine work. Chains are followed through sections, so a fold relocated into one section per
add is still seen as one fold.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from tp_dialect.attrs import chip_of
from tp_dialect.ops import SectionOp, YieldOp


@dataclass(frozen=True)
class Fold:
    """One left fold: its add ops in order, and the partials it sums in order."""

    ops: tuple[Operation, ...]
    partials: tuple[SSAValue, ...]

    @property
    def result(self) -> SSAValue:
        """The fold's sum as the rest of the program sees it."""
        return visible(self.ops[-1])

    @property
    def chips(self) -> tuple[int | None, ...]:
        return tuple(chip_of(p.type) for p in self.partials)

    def is_allreduce(self, n_chips: int) -> bool:
        """One partial per chip of the grid, each on its chip, in chip order."""
        return self.chips == tuple(range(n_chips))


def add_operands(op: Operation) -> tuple[SSAValue, SSAValue] | None:
    """The two summands of an elementwise add, or None for any other op."""
    if isinstance(op, linalg.AddOp) and len(op.inputs) == 2:
        return op.inputs[0], op.inputs[1]
    if isinstance(op, arith.AddfOp):
        return op.lhs, op.rhs
    return None


def visible(op: Operation) -> SSAValue:
    """``op``'s result as other statements see it: through its section, if it has one."""
    result = op.results[0]
    section = op.parent_op()
    if isinstance(section, SectionOp):
        for use in result.uses:
            if isinstance(use.operation, YieldOp):
                return section.outs[use.index]
    return result


def _spine_sum(op: Operation) -> bool:
    return add_operands(op) is not None and chip_of(op.results[0].type) is None


def _continues(op: Operation) -> Operation | None:
    """The add that takes ``op``'s sum as its left operand and a chip partial as its right,
    if that is the sum's only use and it also sums to the spine."""
    uses = list(visible(op).uses)
    if len(uses) != 1:
        return None
    user = uses[0].operation
    operands = add_operands(user)
    if operands is None or operands[0] is not visible(op) or not _spine_sum(user):
        return None
    if chip_of(operands[1].type) is None:
        return None  # adding spine data to the sum: a residual, not the fold
    return user


def find_folds(root: Operation) -> Iterator[Fold]:
    """Every maximal left fold of adds under ``root`` that sums chip partials to the spine."""
    for op in root.walk():
        if not _spine_sum(op):
            continue
        lhs, _ = add_operands(op)  # type: ignore[misc]
        producer = _inner(lhs)
        if producer is not None and _spine_sum(producer) and _continues(producer) is op:
            continue  # not the head: the chain is found from its first add
        chain = [op]
        while (nxt := _continues(chain[-1])) is not None:
            chain.append(nxt)
        first = add_operands(chain[0])
        assert first is not None
        partials = [first[0]] + [add_operands(o)[1] for o in chain]  # type: ignore[index]
        if sum(chip_of(p.type) is not None for p in partials) >= 2:
            yield Fold(tuple(chain), tuple(partials))


def _inner(value: SSAValue) -> Operation | None:
    """The op computing ``value``: inside its section, if a section yields it."""
    owner = value.owner
    if isinstance(owner, SectionOp):
        return owner.yield_op.values[value.index].owner  # type: ignore[return-value]
    return owner if isinstance(owner, Operation) else None
