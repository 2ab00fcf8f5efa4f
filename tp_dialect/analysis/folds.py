"""The seed's spelling of an all-reduce: a left fold of adds over chip-local partials.

``s1 = p0 + p1; s2 = s1 + p2; ...`` — each add's left operand the previous sum (used only
there), its right operand the next partial. `find_folds` returns every maximal such chain
with at least two chip-owned partials and spine sums; `Fold.is_allreduce` says whether it is a valid
all-reduce (one chip-owned partial per chip, in chip order), and the verifier says why not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from tp_dialect.attrs import chip_of


@dataclass(frozen=True)
class Fold:
    """One left fold: its add ops in order, and the partials it sums in order."""

    ops: tuple[Operation, ...]
    partials: tuple[SSAValue, ...]

    @property
    def result(self) -> SSAValue:
        return self.ops[-1].results[0]

    @property
    def chips(self) -> tuple[int | None, ...]:
        return tuple(chip_of(p.type) for p in self.partials)

    def is_allreduce(self, n_chips: int) -> bool:
        """One partial per chip of the grid, each on its chip, in chip order."""
        return self.chips == tuple(range(n_chips))


def _add_operands(op: Operation) -> tuple[SSAValue, SSAValue] | None:
    if isinstance(op, linalg.AddOp) and len(op.inputs) == 2:
        return op.inputs[0], op.inputs[1]
    if isinstance(op, arith.AddfOp):
        return op.lhs, op.rhs
    return None


def _continues(op: Operation) -> Operation | None:
    """The add that takes ``op``'s sum as its left operand, if that is its only use."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].operation
    operands = _add_operands(user)
    if operands is None or operands[0] is not op.results[0]:
        return None
    return user


def find_folds(root: Operation) -> Iterator[Fold]:
    """Every maximal left fold of adds under ``root`` that sums chip partials to the spine."""
    for op in root.walk():
        operands = _add_operands(op)
        if operands is None:
            continue
        lhs, _ = operands
        # Start only at the head: its left operand is not itself a continued sum.
        if lhs.owner is not None and isinstance(lhs.owner, Operation):
            if _add_operands(lhs.owner) is not None and _continues(lhs.owner) is op:
                continue
        chain = [op]
        while (nxt := _continues(chain[-1])) is not None:
            chain.append(nxt)
        first = _add_operands(chain[0])
        assert first is not None
        partials = [first[0]] + [_add_operands(o)[1] for o in chain]  # type: ignore[index]
        # A fold sums chip partials into the spine: at least two chip-owned partials, and
        # every sum along the way a spine value.
        owned = sum(chip_of(p.type) is not None for p in partials)
        if owned >= 2 and all(chip_of(o.results[0].type) is None for o in chain):
            yield Fold(tuple(chain), tuple(partials))
