"""The collective algorithms: one registry entry per way of forming a collective.

Every rule that depends on how a ``tp.allreduce`` or a ``tp.maxloc`` is formed asks its entry
here, never its name: where the result lands (`lands_on_every_chip`), which exchanges move the
data (`AllReduceEntry.exchanges`, the link form the cost model times and tp-transfers spells
out), whether the exchange happens inside the collective (`AllReduceEntry.inside_time`),
whether tp-transfers cuts it into N slices (`AllReduceEntry.split`), its adds' share, and the
maxloc algorithm an ``allreduce=`` choice stands for. Adding an algorithm is adding an entry:
the ops' enum attributes (`AllReduceAlgorithmAttr`, `MaxLocAlgorithmAttr`), their verifiers,
tp-choose-collectives' options and the cost model are all read from the registry.

A split all-reduce is a reduce-scatter then an all-gather: `REDUCE_SCATTER` and `ALL_GATHER`
hold the ways each moves its slices, and ``twoshot`` and ``ring`` are composed of them
(`composed`). Each is a collective of its own too: ``tp.reduce_scatter`` (chip c ends with
its slice of the sum) and ``tp.all_gather`` (every chip ends with every chip's slice), whose
``algorithm`` names an entry here (`ReduceScatterAlgorithmAttr`, `AllGatherAlgorithmAttr`).

An algorithm is stored on its op as an xDSL enum attribute (as xDSL's ``shard`` dialect stores
a reduction kind), printed as it always was: ``tp.allreduce %a, %b algorithm "ring" : …``; a
name the registry does not hold is refused where it is parsed, naming the ones it holds.

The entries are data and pure formulas (no machine, no analysis: this is the IR level); the
cost model (`tp_dialect.analysis.timing.cost`) times their exchanges on a machine's links.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Literal, Self

from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

Move = tuple[int, int, int]
"""One message of an exchange: (from chip, to chip, k), carrying 1/k of the tensor."""
Exchanges = tuple[tuple[int, tuple[Move, ...]], ...]
"""The exchanges of one collective, one after another: (how many times in a row, its moves)."""


def _pairs(n: int) -> list[tuple[int, int]]:
    """Every ordered pair of different chips, sender-major."""
    return [(a, b) for a in range(n) for b in range(n) if a != b]


def _fold_exchanges(n: int) -> Exchanges:
    """The N-1 partials into chip 0, then the sum from chip 0 to the N-1 others."""
    return (
        (1, tuple((c, 0, 1) for c in range(1, n))),
        (1, tuple((0, c, 1) for c in range(1, n))),
    )


def _oneshot_exchanges(n: int) -> Exchanges:
    """Every chip's partial to every other chip."""
    return ((1, tuple((a, b, 1) for a, b in _pairs(n))),)


@dataclass(frozen=True)
class ExchangeEntry:
    """One way to move a reduce-scatter's or an all-gather's data: its messages over N chips,
    each 1/N of the tensor. An all-reduce that splits its tensor is one of each in a row."""

    name: str
    exchanges: Callable[[int], Exchanges]


def _direct(n: int) -> Exchanges:
    """Every chip's k-th 1/N slice straight to chip k, all at once (every ordered pair)."""
    return ((1, tuple((a, b, n) for a, b in _pairs(n))),)


def _ring_steps(n: int) -> Exchanges:
    """N-1 steps, every chip sending the sum so far of one 1/N slice to the next chip."""
    return ((n - 1, tuple((c, (c + 1) % n, n) for c in range(n))),)


REDUCE_SCATTER: dict[str, ExchangeEntry] = {
    e.name: e for e in (ExchangeEntry("direct", _direct), ExchangeEntry("ring", _ring_steps))
}
"""Reduce-scatters: each chip ends with the sum of one 1/N slice over every chip (direct: chip
k of the k-th slice), every slice summed on one chip."""

ALL_GATHER: dict[str, ExchangeEntry] = {e.name: e for e in (ExchangeEntry("direct", _direct),)}
"""All-gathers: every chip ends with every chip's 1/N slice (each sent straight to the others)."""


def composed(*parts: ExchangeEntry) -> Callable[[int], Exchanges]:
    """The exchanges of ``parts`` one after another."""
    return lambda n: tuple(x for part in parts for x in part.exchanges(n))


def _ring_inside(nbytes: float, n: int, latency: float, bandwidth: float) -> float:
    """A ring as one collective: 2(N-1) alpha-beta steps of 1/N of the tensor between ring
    neighbours (the seed's bound)."""
    return 2 * (n - 1) * (latency + nbytes / (n * bandwidth))


@dataclass(frozen=True)
class AllReduceEntry:
    """One all-reduce algorithm: everything a pass, an analysis or the cost model asks of it."""

    name: str
    lands_on_every_chip: bool
    """Whether the sum is formed on every chip (else on chip 0, then sent to its readers)."""
    exchanges: Callable[[int], Exchanges]
    """Its messages over N chips as per-chip programs run them (tp-transfers' spelling)."""
    maxloc: str
    """The maxloc algorithm an ``allreduce=`` choice of it stands for (`MAXLOC`)."""
    preference: int
    """Its place among equals: ``auto`` gives a tie to the lowest."""
    split: bool = False
    """Whether tp-transfers spells it over the tensor cut into N slices (its adds then each
    touch 1/N of it, and it needs an axis of N elements)."""
    steps: bool = False
    """Whether its reduce-scatter travels chip to chip in N-1 steps (else in one exchange)."""
    inside_time: Callable[[float, int, float, float], float] | None = None
    """Its link time as ONE collective (nbytes, N, latency, bandwidth) when its exchange may
    stay inside it (no transfers show it); None: its data always moves by transfers."""
    touched: Callable[[int], int] = lambda n: n + 1
    """How many tensor-sized reads and writes its adds make over N chips (per share)."""

    kind: ClassVar[str] = "all-reduce"


@dataclass(frozen=True)
class MaxLocEntry:
    """One maxloc algorithm: everything a pass, an analysis or the cost model asks of it."""

    name: str
    lands_on_every_chip: bool
    """Whether the result is formed on every chip; else on chip 0, then sent back to the
    chips that read it (from chip 0, both tensors, to each)."""
    gathers: Callable[[int], list[tuple[int, int]]]
    """Where the pairs go over N chips: (from chip, to chip), each move both tensors."""

    kind: ClassVar[str] = "maxloc"


ALLREDUCE: dict[str, AllReduceEntry] = {
    e.name: e
    for e in (
        AllReduceEntry("fold", False, _fold_exchanges, maxloc="fold", preference=0),
        AllReduceEntry(
            "ring",
            True,
            composed(REDUCE_SCATTER["ring"], ALL_GATHER["direct"]),
            maxloc="fold",
            preference=3,
            split=True,
            steps=True,
            inside_time=_ring_inside,
            touched=lambda n: 3 * (n - 1),
        ),
        AllReduceEntry("oneshot", True, _oneshot_exchanges, maxloc="oneshot", preference=1),
        AllReduceEntry(
            "twoshot",
            True,
            composed(REDUCE_SCATTER["direct"], ALL_GATHER["direct"]),
            maxloc="oneshot",
            preference=2,
            split=True,
        ),
    )
}
"""The all-reduce algorithms, in the order they are listed to a user."""

MAXLOC: dict[str, MaxLocEntry] = {
    e.name: e
    for e in (
        MaxLocEntry("fold", False, lambda n: [(c, 0) for c in range(1, n)]),
        MaxLocEntry("oneshot", True, _pairs),
    )
}
"""The maxloc algorithms, in the order they are listed (and ties are broken)."""

SEED = "fold"
"""The seed's algorithm (partials to chip 0, added there in chip order): what tp-fold-allreduce
spells as adds, and what a one-chip all-reduce (no exchange at all) is written as."""

DEFAULT = SEED
"""The algorithm of a collective that names none, in every kind."""

WIRE_ATTR = "tp.wire"
"""A module attribute naming the narrow format some of its all-reduces carry (``"bf16"``,
written by tp-narrow-wire): their sums differ from the f32 program's by its rounding."""

WIRES = ("bf16",)
"""The narrow formats an all-reduce may carry (tp-narrow-wire's ``wire`` values)."""

AUTO = "auto"
"""The option value asking for the algorithm with the least modelled time."""


def by_preference() -> list[AllReduceEntry]:
    """The all-reduce entries in the order ``auto`` breaks ties."""
    return sorted(ALLREDUCE.values(), key=lambda e: e.preference)


def option_values(registry: dict[str, AllReduceEntry] | dict[str, MaxLocEntry]) -> object:
    """The ``Literal`` type of a pass option naming one of ``registry``'s algorithms or
    ``auto`` (xDSL's pipeline parser checks it and names the values in its error)."""
    return Literal[(*registry, AUTO)]  # type: ignore[valid-type]


def spelled_choices(names: list[str]) -> str:
    """``names`` and ``auto`` as a sentence lists option values: ``fold, oneshot or auto``."""
    return f"{', '.join(names)} or {AUTO}"


def stands_for(allreduce: str) -> str:
    """The maxloc algorithm an ``allreduce=`` option value asks for (``auto``: ``auto``)."""
    return AUTO if allreduce == AUTO else ALLREDUCE[allreduce].maxloc


# The enums are built from the registries, so an entry is all an algorithm needs.
AllReduceAlgorithm = StrEnum("AllReduceAlgorithm", [(n.upper(), n) for n in ALLREDUCE])
MaxLocAlgorithm = StrEnum("MaxLocAlgorithm", [(n.upper(), n) for n in MAXLOC])
ReduceScatterAlgorithm = StrEnum("ReduceScatterAlgorithm", [(n.upper(), n) for n in REDUCE_SCATTER])
AllGatherAlgorithm = StrEnum("AllGatherAlgorithm", [(n.upper(), n) for n in ALL_GATHER])


class _AlgorithmName:
    """What both algorithm attributes share: printed and parsed as a quoted name, one of
    ``names`` (the registry), refused by name as ``op_name``'s algorithm."""

    names: ClassVar[Mapping[str, object]]
    op_name: ClassVar[str]
    kind: ClassVar[str]
    enum_type: ClassVar[type[StrEnum]]
    data: StrEnum

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string_literal(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> StrEnum:
        start = parser.pos
        name = parser.parse_str_literal()
        if name not in cls.names:
            parser.raise_error(
                f"'{cls.op_name}' algorithm \"{name}\" is not one of {', '.join(cls.names)}",
                start,
                parser.pos,
            )
        return cls.enum_type(name)

    @classmethod
    def named(cls, name: str) -> Self:
        """The attribute for ``name`` (a KeyError naming the algorithms if none is)."""
        if name not in cls.names:
            raise KeyError(f"no {cls.kind} algorithm '{name}': one of {', '.join(cls.names)}")
        return cls(cls.enum_type(name))  # type: ignore[call-arg]


@irdl_attr_definition
class AllReduceAlgorithmAttr(
    _AlgorithmName,
    EnumAttribute[AllReduceAlgorithm],
    SpacedOpaqueSyntaxAttribute,  # type: ignore[valid-type]
):
    """How a ``tp.allreduce`` forms its sum: a name in `ALLREDUCE`, written quoted."""

    name = "tp.allreduce_algorithm"
    names = ALLREDUCE
    op_name = "tp.allreduce"
    kind = "all-reduce"


@irdl_attr_definition
class MaxLocAlgorithmAttr(
    _AlgorithmName,
    EnumAttribute[MaxLocAlgorithm],
    SpacedOpaqueSyntaxAttribute,  # type: ignore[valid-type]
):
    """How a ``tp.maxloc`` forms its result: a name in `MAXLOC`, written quoted."""

    name = "tp.maxloc_algorithm"
    names = MAXLOC
    op_name = "tp.maxloc"
    kind = "maxloc"


@irdl_attr_definition
class ReduceScatterAlgorithmAttr(
    _AlgorithmName,
    EnumAttribute[ReduceScatterAlgorithm],
    SpacedOpaqueSyntaxAttribute,  # type: ignore[valid-type]
):
    """How a ``tp.reduce_scatter`` moves its slices: a name in `REDUCE_SCATTER`, quoted."""

    name = "tp.reduce_scatter_algorithm"
    names = REDUCE_SCATTER
    op_name = "tp.reduce_scatter"
    kind = "reduce-scatter"


@irdl_attr_definition
class AllGatherAlgorithmAttr(
    _AlgorithmName,
    EnumAttribute[AllGatherAlgorithm],
    SpacedOpaqueSyntaxAttribute,  # type: ignore[valid-type]
):
    """How a ``tp.all_gather`` moves its slices: a name in `ALL_GATHER`, quoted."""

    name = "tp.all_gather_algorithm"
    names = ALL_GATHER
    op_name = "tp.all_gather"
    kind = "all-gather"
