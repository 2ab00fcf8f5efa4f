"""TpManifest: how a tensor-parallel program is spread over chips, read from its IR.

N; the chip of every chip-local value; the slice of the full checkpoint tensor each chip
tensor is (the host's loading map: every ``tp.shard`` of a named function argument); the
host's storing map (``tp.unshard`` into named results); and each collective's partials in
chip order, its result and its fold ops. Checkpoint loading and the tests' filling of chip
slices both go through `Manifest.loads`, this one slice map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.folds import find_folds
from tp_dialect.attrs import SliceAttr, chip_of
from tp_dialect.grid import stated_chips
from tp_dialect.ops import AllReduceOp, ShardOp, UnshardOp
from tp_dialect.signature import entry_function, ports


def value_name(value: SSAValue) -> str:
    """A stable, readable name for a value: its name hint, else its defining op and index."""
    if value.name_hint:
        return value.name_hint
    if isinstance(value, BlockArgument):
        return f"arg{value.index}"
    owner = value.owner
    assert isinstance(owner, Operation)
    return f"{owner.name}#{value.index}"


@dataclass(frozen=True)
class ChipLoad:
    """Chip ``chip`` holds ``slice`` of host tensor ``tensor`` (e.g. a checkpoint weight)."""

    tensor: str
    chip: int
    slice: SliceAttr
    op: ShardOp

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "chip": self.chip,
            "value": value_name(self.op.result),
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
    """TpCollective: ``out = Σ partials``; ``partials[c]`` lives on chip c."""

    result: SSAValue
    partials: tuple[SSAValue, ...]
    ops: tuple[Operation, ...]  # the tp.allreduce, or the fold's add statements

    @property
    def kind(self) -> str:
        return "allreduce" if isinstance(self.ops[0], AllReduceOp) else "fold"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "result": value_name(self.result),
            "partials": [value_name(p) for p in self.partials],
            "chips": [chip_of(p.type) for p in self.partials],
            "fold_ops": [value_name(op.results[0]) for op in self.ops],
        }


@dataclass
class Manifest:
    """The manifest of one program (see the module docstring)."""

    chips: int
    loads: list[ChipLoad] = field(default_factory=list[ChipLoad])
    stores: list[HostStore] = field(default_factory=list[HostStore])
    collectives: list[Collective] = field(default_factory=list[Collective])
    chip_values: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])

    def loads_of(self, tensor: str) -> list[ChipLoad]:
        return [ld for ld in self.loads if ld.tensor == tensor]

    def to_json(self) -> dict[str, Any]:
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
    """The manifest of ``module``'s entry function, read from its IR."""
    func = entry_function(module)
    ins, outs = ports(func)
    manifest = Manifest(chips=stated_chips(module) or 1)
    for op in func.walk():
        for res in op.results:
            if (c := chip_of(res.type)) is not None:
                manifest.chip_values[res] = c
        if isinstance(op, ShardOp) and isinstance(op.source, BlockArgument):
            if op.source.owner is func.body.block:
                manifest.loads.append(ChipLoad(ins[op.source.index].name, op.chip, op.slice, op))
        elif isinstance(op, AllReduceOp):
            manifest.collectives.append(Collective(op.result, tuple(op.partials), (op,)))
    for arg in func.body.block.args:
        if (c := chip_of(arg.type)) is not None:
            manifest.chip_values[arg] = c
    for fold in find_folds(func):
        if fold.is_allreduce(manifest.chips):
            manifest.collectives.append(Collective(fold.result, fold.partials, fold.ops))
    ret = func.body.block.last_op
    if isinstance(ret, ReturnOp):
        for port, value in zip(outs, ret.operands, strict=True):
            if isinstance(value.owner, UnshardOp):
                store = value.owner
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
