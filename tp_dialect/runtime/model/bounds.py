"""Bounds on a modelled step: what no schedule of the program can beat.

Invariant: both bounds read only the program's data (shards, arguments, results, all-reduces)
and the machine, the same at every stage of lowering, so a mode's ratio to them compares
schedules, not stages. All-reduces are counted one per sum (`allreduces`): a copy per chip
program is one all-reduce, and a two-shot all-reduce spelled as N folds of 1/N slices of the
same partials is one all-reduce of the whole tensor.

- `lower_bound` (the seed's): every weight byte once over the N chips' HBM bandwidth, plus a
  ring all-reduce's alpha-beta time per all-reduce.
- `physical_bound`: the most HBM bytes any one chip must move — the host data it holds for
  the step (its weight and KV-cache slices, spine weights on every chip that reads them,
  sized by their types), the cache entries it writes in place and the outputs it stores —
  over the HBM bandwidth, plus, for every all-reduce, the least link time any all-reduce
  algorithm needs for its tensor on the machine's topology
  (`cost.least_allreduce_link_time`). In a decode step every all-reduce is on the dependency
  chain (each layer's output feeds the next layer), so all are counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, SSAValue

from tp_dialect.analysis.cost import (
    VIEWS,
    allreduce_link_time,
    least_allreduce_link_time,
    nbytes,
)
from tp_dialect.analysis.machine import Machine
from tp_dialect.analysis.manifest import read_manifest
from tp_dialect.analysis.values import origin, sent_values
from tp_dialect.attrs import chip_of
from tp_dialect.ops import UnshardOp
from tp_dialect.runtime.model.core import chips_of, placed_sections
from tp_dialect.runtime.model.memory import Held, HeldKey, held_key, holdings, weight_bytes
from tp_dialect.signature import entry_function

DEPENDENCY_NOTE = (
    "every all-reduce of a decode step is on its dependency chain (each layer's output "
    "feeds the next): all are counted"
)


def allreduces(func: FuncOp) -> list[int]:
    """The bytes of each all-reduce's tensor, one entry per sum in program order, at any
    stage (module docstring)."""
    sends = sent_values(func)
    module = func.parent_op()
    assert isinstance(module, ModuleOp)
    sizes: dict[tuple[SSAValue, ...], int] = {}
    for coll in read_manifest(module).collectives:
        roots = tuple(_whole(p, sends) for p in coll.partials)
        # One sum however its partials are ordered (a ring's folds are rotations of it).
        key = tuple(sorted(roots, key=lambda v: chip_of(v.type) or 0))
        sizes.setdefault(key, nbytes(roots[0].type) if roots else nbytes(coll.result.type))
    return list(sizes.values())


def _whole(partial: SSAValue, sends: dict[str, SSAValue]) -> SSAValue:
    """The partial a two-shot slice was cut from (the partial itself otherwise)."""
    root = origin(partial, sends)
    if isinstance(root.owner, tensor.ExtractSliceOp):
        return origin(root.owner.source, sends)
    return root


def lower_bound(module: ModuleOp, machine: Machine, sizes: list[int] | None = None) -> float:
    """Weight bytes / (N x HBM bandwidth) + a ring all-reduce's alpha-beta time for every
    all-reduce (the seed's bound; `physical_bound` is the tighter one). ``sizes``: the
    program's `allreduces`, if already known."""
    func = entry_function(module)
    n = chips_of(module)
    bound = weight_bytes(func) / (n * machine.hbm_bandwidth)
    sizes = allreduces(func) if sizes is None else sizes
    return bound + sum(allreduce_link_time("ring", b, n, machine) for b in sizes)


@dataclass
class PhysicalBound:
    """The physical bound and its parts (module docstring)."""

    seconds: float = 0.0
    hbm_bytes: list[float] = field(default_factory=list[float])  # per chip
    hbm_s: float = 0.0
    allreduce_count: int = 0
    link_s: float = 0.0

    def to_json(self) -> dict[str, object]:
        """The bound's parts as plain data, with the dependency-chain note."""
        return {
            "seconds": self.seconds,
            "hbm_bytes_per_chip": self.hbm_bytes,
            "hbm_s": self.hbm_s,
            "allreduces": self.allreduce_count,
            "allreduce_link_s": self.link_s,
            "note": DEPENDENCY_NOTE,
        }


def physical_bound(
    module: ModuleOp,
    machine: Machine,
    held: list[dict[HeldKey, Held]] | None = None,
    sizes: list[int] | None = None,
) -> PhysicalBound:
    """The physical bound of ``module``'s step on ``machine`` (module docstring). Host data a
    chip holds counts when an op on that chip reads it (a shard nobody reads moves nothing);
    an output counts when some op writes it (an argument handed straight back does not).
    ``held`` and ``sizes``: the program's `holdings` and `allreduces`, if already known."""
    func = entry_function(module)
    n = chips_of(module)
    held = holdings(func, n) if held is None else held
    read: list[set[HeldKey]] = [set() for _ in range(n)]
    written = [0.0] * n
    for section, chips in placed_sections(func):
        for inner in section.walk():
            if isinstance(inner, VIEWS):
                continue
            operands = list(inner.operands)
            if isinstance(inner, tensor.InsertSliceOp):
                operands.remove(inner.dest)  # an in-place write reads only the new entry
                if held_key(inner.dest, func) is not None:
                    for c in chips:  # the cache entry it writes (the cache read is counted)
                        written[c] += nbytes(inner.source.type)
            for operand in operands:
                key = held_key(operand, func)
                if key is not None:
                    for c in chips:
                        if key in held[c]:
                            read[c].add(key)
    ret = func.body.block.last_op
    if isinstance(ret, ReturnOp):
        for value in ret.operands:
            root = origin(value)
            parts = root.owner.parts if isinstance(root.owner, UnshardOp) else (root,)
            for part in parts:
                made = origin(part)
                if held_key(made, func) is not None or isinstance(made.owner, VIEWS):
                    continue  # stored in place (counted as its cache and entry), or a view
                if isinstance(made, BlockArgument) or not isinstance(made.type, TensorType):
                    continue  # an argument handed back, a scalar
                chip = chip_of(part.type)
                for c in range(n) if chip is None else (chip,):
                    written[c] += nbytes(part.type)  # a spine output: every chip stores one
    moved = [written[c] + sum(held[c][key].bytes for key in read[c]) for c in range(n)]
    sizes = allreduces(func) if sizes is None else sizes
    link = sum(least_allreduce_link_time(b, n, machine) for b in sizes)
    hbm = max(moved, default=0.0) / machine.hbm_bandwidth
    return PhysicalBound(hbm + link, moved, hbm, len(sizes), link)
