"""The seed's spelling of an all-reduce: a left fold of adds over chip-local partials.

``s1 = p0 + p1; s2 = s1 + p2; ...`` — every sum a spine value read only by the next add (as
its left operand), every later right operand a chip-owned partial. `find_folds` returns each
maximal such chain with at least two chip-owned partials; `Fold.is_allreduce` says whether it
is a valid all-reduce (one partial per chip, in chip order or in a cyclic rotation of it — a
*ring fold*, ``p2 + p3 + p0 + p1``, as a ring's reduce-scatter adds a slice —, no partial
sum read elsewhere), `Fold.in_chip_order` whether it is the seed's order exactly (bitwise
the seed's sum: the only folds tp-raise-allreduce may raise), and `Fold.refusal` says why a
fold is not an all-reduce. A sum used on the left of an add of spine data (a residual) ends
the fold: that add is ordinary spine work. Chains are followed through sections, so a fold
relocated into one section per add is still seen as one fold, and through copies of a
partial sum onto another chip — a ``tp.transfer`` (the same value, now held there too) or a
``tp.link`` sending it to the programs that receive it under that name —, so a ring fold whose
adds run one per chip is one fold; a partial sum read by anything but the next add — inside
its section or outside, on any chip it was copied to — ends the chain and is named as
escaping.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from tp_dialect.analysis.values import visible as visible_value
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.names import value_name
from tp_dialect.ops import SectionOp, TransferOp, YieldOp
from tp_dialect.program_ops import LinkOp, chip_group
from tp_dialect.reject import TpReject


@dataclass(frozen=True)
class Fold:
    """One left fold: its add ops in order, the partials it sums in order, and a reader of
    its last sum other than a continuing add (which cut the chain short), if any."""

    ops: tuple[Operation, ...]
    partials: tuple[SSAValue, ...]
    escape: Operation | None = None

    @property
    def result(self) -> SSAValue:
        """The fold's sum as the rest of the program sees it."""
        return visible(self.ops[-1])

    @property
    def chips(self) -> tuple[int | None, ...]:
        return tuple(chip_of(p.type) for p in self.partials)

    def in_chip_order(self, n_chips: int) -> bool:
        """One partial per chip of the grid, each on its chip, in chip order 0..N-1: the
        seed's sum, bitwise (the only fold a ``tp.allreduce`` may stand for). Compares
        the fold's own partials only: N is a number the input states, never a list to build."""
        chips = self.chips
        return len(chips) == n_chips and all(c == k for k, c in enumerate(chips))

    def is_allreduce(self, n_chips: int) -> bool:
        """One partial per chip of the grid, each on its chip, in chip order or a cyclic
        rotation of it (a partial sum read by anything but the next add ends the chain short
        of that): the sum over every chip, rounded in the order a ring adds it."""
        return len(self.chips) == n_chips and _rotated_prefix(self.chips, n_chips)

    def refusal(self, n_chips: int) -> TpDiagnostic:
        """Why this fold is not an all-reduce over ``n_chips`` chips, located at its last add."""
        name = f"%{value_name(self.result)}"
        chips = self.chips
        spine = [p for p in self.partials if chip_of(p.type) is None]
        if spine:
            return TpReject.FOLD_MIXES_SPINE.at(
                self.ops[-1],
                f"fold of adds into {name} adds spine value %{value_name(spine[0])} to chip "
                "partials: an all-reduce sums one partial per chip and nothing else",
            )
        missing = _missing(chips, n_chips)
        if self.escape is not None and _rotated_prefix(chips, n_chips) and missing:
            lacks = f"chip {missing}" if missing.isdigit() else f"chips {missing}"
            return TpReject.FOLD_NOT_ALLREDUCE.at(
                self.ops[-1],
                f"fold of adds: the partial sum {name} of chips {list(chips)} is also read by "
                f"'{self.escape.name}', which sees a sum missing {lacks}: only the next add "
                "of a fold may read its partial sums",
            )
        repeated = sorted({c for c in chips if chips.count(c) > 1})
        faults = [f"repeats chip {', '.join(map(str, repeated))}"] if repeated else []
        faults += [f"misses chip {missing}"] if missing else []
        why = " and ".join(faults) or f"is out of chip order {list(chips)}"
        return TpReject.FOLD_NOT_ALLREDUCE.at(
            self.ops[-1],
            f"fold of adds into {name} over partials on chips {list(chips)} {why}: "
            f"an all-reduce needs one partial per chip 0..{n_chips - 1}, in chip order or a "
            "cyclic rotation of it",
        )


def _rotated_prefix(chips: tuple[int | None, ...], n_chips: int) -> bool:
    """Whether ``chips`` run on from their first chip one chip at a time, wrapping at
    ``n_chips``, with no chip twice: chip order, or a rotation of it, so far."""
    first = chips[0] if chips else None
    if first is None or not 0 <= first < n_chips or len(chips) > n_chips:
        return False
    return all(c == (first + k) % n_chips for k, c in enumerate(chips))


def _missing(chips: tuple[int | None, ...], n_chips: int) -> str:
    """The chips 0..n_chips-1 not in ``chips``, as ``1, 3`` or ``2..999`` runs (never a list
    as long as the grid: N is a number the input states)."""
    present = sorted({c for c in chips if c is not None and 0 <= c < n_chips})
    runs, start = [], 0
    for c in [*present, n_chips]:
        if c > start:
            runs.append(f"{start}" if c - start == 1 else f"{start}..{c - 1}")
        start = c + 1
    return ", ".join(runs)


def add_operands(op: Operation) -> tuple[SSAValue, SSAValue] | None:
    """The two summands of an elementwise add, or None for any other op (a ``linalg.add``
    written with a body of its own that does anything but add its two elements included)."""
    if isinstance(op, linalg.AddOp) and len(op.inputs) == 2 and _adds(op):
        return op.inputs[0], op.inputs[1]
    if isinstance(op, arith.AddfOp):
        return op.lhs, op.rhs
    return None


def _adds(op: linalg.AddOp) -> bool:
    """Whether ``op``'s body is exactly ``yield a + b`` of its two input elements."""
    block = op.body.block
    body = list(block.ops)
    return (
        len(body) == 2
        and isinstance(add := body[0], arith.AddfOp)
        and {add.lhs, add.rhs} == set(block.args[:2])
        and add.lhs is not add.rhs
        and isinstance(body[1], linalg.YieldOp)
        and tuple(body[1].operands) == (add.result,)
    )


def visible(op: Operation) -> SSAValue:
    """``op``'s result as other statements see it: through its section, if it has one."""
    return visible_value(op.results[0])


def _spine_sum(op: Operation) -> bool:
    return add_operands(op) is not None and chip_of(op.results[0].type) is None


@dataclass(frozen=True)
class _Links:
    """The buffers a function's chip programs pass by name: the values sent under each name
    and the values received under it (names are a function's own)."""

    sent: dict[tuple[object, str], list[SSAValue]]
    received: dict[tuple[object, str], list[SSAValue]]

    @staticmethod
    def under(root: Operation) -> _Links:
        sent: dict[tuple[object, str], list[SSAValue]] = {}
        received: dict[tuple[object, str], list[SSAValue]] = {}
        for op in root.walk():
            if isinstance(op, LinkOp):
                scope = _function_of(op)
                for name, value in zip(op.sends, op.sent, strict=True):
                    sent.setdefault((scope, name), []).append(value)
                for name, value in zip(op.receives, op.received, strict=True):
                    received.setdefault((scope, name), []).append(value)
        return _Links(sent, received)


def _function_of(op: Operation) -> object:
    """The scope ``op``'s buffer names belong to: its function, or for a per-chip function
    its group (`chip_group`: chip 1's ``@layer.chip1`` receives what ``@layer.chip0`` sends)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, FuncOp):
        parent = parent.parent_op()
    if isinstance(parent, FuncOp) and (group := chip_group(parent)) is not None:
        return group
    return parent


def _far_readers(value: SSAValue, links: _Links) -> list[tuple[Operation, SSAValue]]:
    """Every op reading ``value`` or a copy of it, with the value it reads. A
    ``tp.transfer`` reads nothing here: it puts the same value on another chip, whose readers
    are the value's own. A ``tp.link`` sending it stands for what reads it where it is
    received (under that name, in the same function)."""
    out: list[tuple[Operation, SSAValue]] = []
    pending, seen = [value], set[SSAValue]()
    while pending:
        v = pending.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            user = use.operation
            if isinstance(user, TransferOp):
                continue
            if isinstance(user, LinkOp):  # its operands are what it sends
                pending += links.received.get((_function_of(user), user.sends[use.index]), [])
                continue
            out.append((user, v))
    return out


def _readers(op: Operation, links: _Links) -> list[tuple[Operation, SSAValue]]:
    """Every op reading ``op``'s sum, inside its section or outside it, on any chip it is
    copied to, with the value it reads (the section's yield is not a reader: it only hands
    the sum out)."""
    inner = op.results[0]
    out = [(u, v) for u, v in _far_readers(inner, links) if not isinstance(u, YieldOp)]
    outer = visible(op)
    if outer is not inner:
        out += _far_readers(outer, links)
    return out


def _continues(op: Operation, links: _Links) -> tuple[Operation | None, Operation | None]:
    """(the add continuing ``op``'s fold, another reader that cut it short), where a
    continuing add takes the sum on its left, a chip partial on its right and sums to the
    spine; it continues the fold only when it is the sum's only reader."""
    readers = _readers(op, links)
    nexts = [
        user
        for user, value in readers
        if (operands := add_operands(user)) is not None
        and operands[0] is value
        and _spine_sum(user)
        and chip_of(operands[1].type) is not None
    ]
    if not nexts:
        return None, None
    others = [user for user, _ in readers if user is not nexts[0]]
    if not others:
        if len(readers) > 1:
            return None, nexts[0]  # the next add also reads the sum as something else
        return nexts[0], None
    return None, others[0]


def find_folds(root: Operation) -> Iterator[Fold]:
    """Every maximal left fold of adds under ``root`` that sums chip partials to the spine."""
    links = _Links.under(root)
    for op in root.walk():
        if not _spine_sum(op):
            continue
        lhs, _ = add_operands(op)  # type: ignore[misc]
        producer = _inner(lhs, links)
        if producer is not None and _spine_sum(producer) and _continues(producer, links)[0] is op:
            continue  # not the head: the chain is found from its first add
        chain = [op]
        while (nxt := _continues(chain[-1], links))[0] is not None:
            chain.append(nxt[0])  # type: ignore[arg-type]
        escape = _continues(chain[-1], links)[1]
        first = add_operands(chain[0])
        assert first is not None
        partials = [first[0]] + [add_operands(o)[1] for o in chain]  # type: ignore[index]
        if sum(chip_of(p.type) is not None for p in partials) >= 2:
            yield Fold(tuple(chain), tuple(partials), escape)


def _inner(value: SSAValue, links: _Links) -> Operation | None:
    """The op computing ``value``: inside its section, if a section yields it; the sender's,
    if a link received it (a name sent once)."""
    seen: set[SSAValue] = set()
    while isinstance(owner := value.owner, LinkOp) and value not in seen:
        seen.add(value)
        sent = links.sent.get((_function_of(owner), owner.receives[value.index]), [])
        if len(sent) != 1:
            return None
        value = sent[0]
    if isinstance(owner, SectionOp):
        return owner.yield_op.values[value.index].owner  # type: ignore[return-value]
    return owner if isinstance(owner, Operation) else None
