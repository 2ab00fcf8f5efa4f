"""TpManifest: how a tensor-parallel program is spread over chips, read from its IR.

N; the chip of every chip-local value; the slice of the full checkpoint tensor each chip
tensor is (the host's loading map: every ``tp.shard`` of a named function argument); the
host's storing map (``tp.unshard`` into named results); and each collective's partials in
chip order, its result and its fold ops. Checkpoint loading and the tests' filling of chip
slices both go through `Manifest.loads`, this one slice map.

The same program reads the same manifest at every stage of lowering (source, sectioned,
phased, per-chip programs with or without the relay): values are followed through sections
and chip programs (`tp_dialect.analysis.values`), so a ``tp.shard`` inside a section of a
chip program still loads from the function argument the program was handed, and a returned
section result still stores through the ``tp.unshard`` inside it.

An outlined program (``@decode`` calling ``@layer`` once a layer) reads the flat program's
loads and stores: a ``tp.shard`` inside the callee loads, once per call, from the entry
argument that call hands it, and a call's result stores through the callee's
``tp.unshard`` (`tp_dialect.analysis.values.walk_calls`). Chip values and collectives are
IR values and ops, listed once each however many calls run them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.certify.folds import find_folds
from tp_dialect.analysis.values import origin, origin_through, sent_values, visible, walk_calls
from tp_dialect.attrs import SliceAttr, chip_of
from tp_dialect.grid import stated_chips
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, ShardOp, UnshardOp
from tp_dialect.signature import entry_function, ports


@dataclass(frozen=True)
class ChipLoad:
    """Chip ``chip`` holds ``slice`` of host tensor ``tensor`` (e.g. a checkpoint weight),
    cut by ``op`` (one load per ``tp.shard`` op: per-chip programs each hold their own)."""

    tensor: str
    chip: int
    slice: SliceAttr
    op: ShardOp

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "chip": self.chip,
            "value": value_name(visible(self.op.result)),
            "axis": self.slice.axis_index,
            "ranges": [list(r) for r in self.slice.ranges],
            "full_shape": list(self.slice.full_shape),
        }


@dataclass(frozen=True)
class HostStore:
    """Host output ``output`` assembled from chip values (e.g. each chip's KV cache)."""

    output: str
    parts: tuple[tuple[int, str, SliceAttr], ...]  # (chip, value name, slice)

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "parts": [
                {
                    "chip": c,
                    "value": v,
                    "axis": s.axis_index,
                    "ranges": [list(r) for r in s.ranges],
                    "full_shape": list(s.full_shape),
                }
                for c, v, s in self.parts
            ],
        }


@dataclass(frozen=True)
class Collective:
    """TpCollective: ``out = Σ partials``; ``partials[c]`` lives on chip c.

    ``copies`` holds every computation of this one sum: the ``tp.allreduce`` op, or the
    fold's add statements — once, or once per chip program that computes it (a fold is spine
    work, so per-chip programs each fold the partials they received). ``result`` and
    ``partials`` are the first copy's, as the statements after it see them.
    """

    result: SSAValue
    partials: tuple[SSAValue, ...]
    copies: tuple[tuple[Operation, ...], ...]

    @property
    def ops(self) -> tuple[Operation, ...]:
        """Every op computing the sum, in every copy (the first copy's first)."""
        return tuple(op for copy in self.copies for op in copy)

    @property
    def kind(self) -> str:
        return "allreduce" if isinstance(self.copies[0][0], AllReduceOp) else "fold"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "result": value_name(self.result),
            "partials": [value_name(p) for p in self.partials],
            "chips": [chip_of(p.type) for p in self.partials],
            "fold_ops": [value_name(visible(op.results[0])) for op in self.copies[0]],
        }


@dataclass
class Manifest:
    """The manifest of one program (see the module docstring): ``loads`` one per
    ``tp.shard`` op, in the order of the function's arguments then chip order; ``stores``
    in result order; ``collectives`` one per sum, in program order."""

    chips: int
    loads: list[ChipLoad] = field(default_factory=list[ChipLoad])
    stores: list[HostStore] = field(default_factory=list[HostStore])
    collectives: list[Collective] = field(default_factory=list[Collective])
    chip_values: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])

    def loads_of(self, tensor: str) -> list[ChipLoad]:
        """The loads of host tensor ``tensor``, in chip order."""
        return [ld for ld in self.loads if ld.tensor == tensor]

    def to_json(self) -> dict[str, Any]:
        """The manifest as plain JSON data (values by name), for a host."""
        per_chip: dict[int, int] = {}
        for chip in self.chip_values.values():
            per_chip[chip] = per_chip.get(chip, 0) + 1
        return {
            "chips": self.chips,
            "loads": [ld.to_json() for ld in self.loads],
            "stores": [st.to_json() for st in self.stores],
            "collectives": [c.to_json() for c in self.collectives],
            "chip_values": {value_name(v): c for v, c in self.chip_values.items()},
            "chip_value_counts": {str(c): n for c, n in sorted(per_chip.items())},
        }


def read_manifest(module: ModuleOp) -> Manifest:
    """The manifest of ``module``'s entry function, read from its IR; the same loads,
    stores and collectives at every stage of lowering (see the module docstring)."""
    func = entry_function(module)
    ins, outs = ports(func)
    manifest = Manifest(chips=stated_chips(module) or 1)
    found: list[Collective] = []
    seen: set[Operation] = set()  # a callee's ops, met once per call
    functions = [func]
    for op, calls in walk_calls(func):
        if isinstance(op, ShardOp):
            source = origin_through(op.source, calls)
            if isinstance(source, BlockArgument) and source.owner is func.body.block:
                manifest.loads.append(ChipLoad(ins[source.index].name, op.chip, op.slice, op))
        if op in seen:
            continue
        seen.add(op)
        if isinstance(op, FuncOp) and op is not func:
            functions.append(op)
        for res in op.results:
            if (c := chip_of(res.type)) is not None:
                manifest.chip_values[res] = c
        if isinstance(op, AllReduceOp):
            found.append(Collective(visible(op.result), tuple(op.partials), ((op,),)))
    for arg in (arg for f in functions for arg in f.body.block.args):
        if (c := chip_of(arg.type)) is not None:
            manifest.chip_values[arg] = c
    for fold in (fold for f in functions for fold in find_folds(f)):
        if fold.is_allreduce(manifest.chips):
            found.append(Collective(fold.result, fold.partials, (fold.ops,)))
    manifest.collectives = one_per_sum(found, sent_values(func))
    # Argument order, then chip order: the phase order and per-chip programs reorder the
    # shards, and the loading map should not depend on the stage it was read at.
    position = {p.name: i for i, p in enumerate(ins)}
    manifest.loads.sort(key=lambda ld: (position[ld.tensor], ld.chip))
    ret = func.body.block.last_op
    if isinstance(ret, ReturnOp):
        for port, value in zip(outs, ret.operands, strict=True):
            store = origin_through(value, ()).owner
            if isinstance(store, UnshardOp):
                manifest.stores.append(
                    HostStore(
                        port.name,
                        tuple(
                            (chip_of(p.type) or 0, value_name(p), s)
                            for p, s in zip(store.parts, store.slices.data, strict=True)
                        ),
                    )
                )
    return manifest


def one_per_sum(found: list[Collective], sends: dict[str, SSAValue]) -> list[Collective]:
    """``found`` with the copies of one sum merged into one collective, in order of first
    copy. Copies are the same sum when they add the same partials: per-chip programs each
    fold the partials they received, which their links trace back to the same sent values."""
    merged: dict[tuple[str, tuple[SSAValue, ...]], Collective] = {}
    for coll in found:
        key = (coll.kind, tuple(origin(p, sends) for p in coll.partials))
        first = merged.get(key)
        merged[key] = coll if first is None else replace(first, copies=first.copies + coll.copies)
    return list(merged.values())
