"""tp-export: per-chip programs cut at their link points into plain-MLIR segments.

Invariant: after tp-link-points (and tp-relay), the entry function's ``tp.chip_program`` ops
become one ``func.func @chip<c>_halt<h>`` per stretch a chip runs between two halts — the
code chip c runs when the relay runs it to halt h — plus ``func.func @host``, the host's own
statements (a ``tp.unshard`` as ``tensor.insert_slice`` into an empty tensor). No ``tp`` op
and no ``#tp.chip`` encoding is left: the module is upstream MLIR (func, arith, math, tensor,
linalg, scf ...) that IREE compiles. Every port is a tensor (a scalar as a 0-d tensor, an
``index`` as ``i64``). A segment takes, in order: what its halt receives (by buffer name),
the host inputs it reads (a weight or cache cut by ``tp.shard`` as its chip's slice, else
whole), and the values it reads that an earlier segment of its chip computed (*carried*);
it returns what its closing halt sends, the values later segments read, and (the last
segment) the chip's outputs. Constants are cloned into every segment that reads them; an
all-reduce on its summing chip becomes the left fold of its partials in chip order (the
reference's order, so the sum is bitwise the interpreter's), a maxloc the pairwise pick.

The module's ``tp.export`` attribute (a JSON string, `MANIFEST`) says which segment runs
when (the relay's steps, in rounds) and what each argument and result is. A program that
calls per-chip functions (an outlined program) is refused (``not-exportable``): ``tp-inline``
first gives its flat form. Linear in the programs' ops (each op is cloned once, each
constant once per segment reading it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from tp_dialect.analysis.programs import check_programs, programs, relay_steps
from tp_dialect.analysis.relay import Copy
from tp_dialect.analysis.touch import is_constant
from tp_dialect.analysis.values import defined_within
from tp_dialect.certificate import CERTIFICATE_ATTR
from tp_dialect.ops import SectionOp, ShardOp, UnshardOp, YieldOp
from tp_dialect.passes.export_ops import (
    DropChips,
    Generalize,
    PortInfo,
    SegmentBuilder,
    ports_json,
    refuse,
)
from tp_dialect.passes.preconditions import entry_of
from tp_dialect.program_ops import CHIP_FUNCTION, ChipProgramOp, FinishOp, LinkOp, RelayOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import ports

MANIFEST = "tp.export"
"""The module attribute holding the export's manifest (JSON): segments, ports, relay."""


@dataclass
class _Part:
    """The top-level ops a chip runs between two halts, and the halts' links."""

    receives: list[tuple[SSAValue, str]] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)
    sends: list[tuple[SSAValue, str]] = field(default_factory=list)
    outputs: list[SSAValue] = field(default_factory=list)
    halt: int = 0


def _parts(program: ChipProgramOp) -> list[_Part]:
    """``program`` cut at its links: one part per halt it arrives at (its end included)."""
    parts: list[_Part] = []
    current = _Part()
    for op in program.body.block.ops:
        if is_constant(op):
            continue  # cloned into every segment reading it
        if isinstance(op, LinkOp):
            if op.halt == 0:  # the start: what the host places before the chip runs
                current.receives = list(zip(op.received, op.receives, strict=True))
                continue
            current.sends = list(zip(op.sent, op.sends, strict=True))
            current.halt = op.halt
            parts.append(current)
            current = _Part(list(zip(op.received, op.receives, strict=True)))
        elif isinstance(op, FinishOp):
            current.outputs = list(op.values)
            current.halt = (parts[-1].halt if parts else 0) + 1
            parts.append(current)
        elif isinstance(op, CallOp):
            raise refuse(
                op,
                f"chip {program.chip_index}'s program calls @{op.callee.string_value()} (an "
                "outlined program): run tp-inline first for its flat form",
            )
        else:
            current.ops.append(op)
    return parts


def _placed(value: SSAValue, program: ChipProgramOp) -> ShardOp | None:
    """The ``tp.shard`` of a host input that ``value`` is (directly or as a section's
    result yielding it): the slice the host loads onto the chip."""
    owner = value.owner
    if isinstance(owner, SectionOp):
        last = owner.body.block.last_op
        assert isinstance(last, YieldOp)
        value = last.operands[value.index]  # type: ignore[attr-defined]
        owner = value.owner
    if isinstance(owner, ShardOp) and _is_input(owner.source, program):
        return owner
    return None


def _loads(op: Operation, program: ChipProgramOp) -> bool:
    """Whether ``op`` only loads slices of host inputs (a section of ``tp.shard`` ops): the
    host places them, so no segment runs it; the segments reading them take them as
    arguments."""
    if isinstance(op, ShardOp):
        return _is_input(op.source, program)
    return isinstance(op, SectionOp) and all(_placed(r, program) for r in op.results)


def _is_input(value: SSAValue, program: ChipProgramOp) -> bool:
    return isinstance(value, BlockArgument) and value.owner is program.body.block


def _free(op: Operation, program: ChipProgramOp) -> Iterable[SSAValue]:
    """The values ``op`` (with everything nested in it) reads from outside itself; a
    ``tp.shard`` of a host input stands for its slice (the whole input is not read)."""
    for inner in op.walk():
        if isinstance(inner, ShardOp) and _is_input(inner.source, program):
            yield inner.result
            continue
        for v in inner.operands:
            if not defined_within(v, op):
                yield v


def _segments(
    program: ChipProgramOp, input_name: dict[SSAValue, str]
) -> list[tuple[FuncOp, dict[str, Any]]]:
    """``program``'s segments, each a function and its manifest entry."""
    chip = program.chip_index
    parts = _parts(program)
    home: dict[SSAValue, int] = {}  # the part computing (or receiving) each value
    for k, part in enumerate(parts):
        home.update((v, k) for v, _ in part.receives)
        for op in part.ops:
            home.update((r, k) for r in op.results)
    needs: list[dict[SSAValue, None]] = []
    for part in parts:
        need: dict[SSAValue, None] = {}
        for op in part.ops:
            if not _loads(op, program):
                need.update((v, None) for v in _free(op, program))
        need.update((v, None) for v, _ in part.sends)
        need.update((v, None) for v in part.outputs)
        needs.append(need)
    carried: list[dict[SSAValue, str]] = [{} for _ in parts]  # what each part hands on
    keys: dict[SSAValue, str] = {}
    for k, need in enumerate(needs):
        for v in need:
            j = home.get(v)
            if j is not None and j < k and _placed(v, program) is None:
                key = keys.setdefault(v, f"c{chip}_{v.name_hint or 'v'}_{len(keys)}")
                carried[j][v] = key
    out: list[tuple[FuncOp, dict[str, Any]]] = []
    for k, (part, need) in enumerate(zip(parts, needs, strict=True)):
        b = SegmentBuilder()
        shards: dict[PortInfo, SSAValue] = {}
        for v, name in part.receives:
            b.add_arg(v, PortInfo("receive", name))
        for v in need:
            if v in b.mapping or home.get(v) == k and _placed(v, program) is None:
                continue
            if (shard := _placed(v, program)) is not None:
                sl = shard.slice
                port = PortInfo(
                    "shard", input_name[program.inputs[shard.source.index]],  # type: ignore[attr-defined]
                    sl.axis_index, tuple((int(a), int(s)) for a, s in sl.ranges),
                )  # fmt: skip
                if port in shards:  # one argument per slice, however many shards cut it
                    b.mapping[v] = b.mapping[shard.result] = shards[port]
                    continue
                b.add_arg(v, port)
                b.mapping[shard.result] = shards[port] = b.mapping[v]
            elif _is_input(v, program):
                b.add_arg(v, PortInfo("input", input_name[program.inputs[v.index]]))  # type: ignore[attr-defined]
            elif home.get(v) is not None:
                b.add_arg(v, PortInfo("carry", keys[v]))
        for v in need:  # constants last among the setup: cloned where the segment reads them
            if v not in b.mapping and is_constant(v.owner):  # type: ignore[arg-type]
                b.clone_in(v.owner)  # type: ignore[arg-type]
        for op in part.ops:
            if not _loads(op, program):
                b.clone_in(op)
        results = [(v, PortInfo("send", name)) for v, name in part.sends]
        results += [(v, PortInfo("carry", key)) for v, key in carried[k].items()]
        results += [(v, PortInfo("output", index=i)) for i, v in enumerate(part.outputs)]
        values = [b.result(v) for v, _ in results]
        b.emit(ReturnOp(*values))
        name = f"chip{chip}_halt{part.halt}"
        func = FuncOp(
            name,
            FunctionType.from_lists([a.type for a in b.block.args], [v.type for v in values]),
            Region(b.block),
        )
        arg_json, res_json = ports_json(func, b.args, [p for _, p in results])
        entry = {
            "function": name,
            "chip": chip,
            "halt": part.halt,
            "arguments": arg_json,
            "results": res_json,
        }
        out.append((func, entry))
    return out


def _host(
    func: FuncOp, progs: list[ChipProgramOp], input_name: dict[SSAValue, str]
) -> tuple[FuncOp, dict[str, Any]]:
    """The host's statements as ``@host``: from the chips' outputs and the host inputs it
    reads to the entry function's results."""
    chip_output = {r: (p.chip_index, r.index) for p in progs for r in p.outputs}
    ops = [
        op
        for op in func.body.block.ops
        if not isinstance(op, ChipProgramOp | RelayOp | ReturnOp) and not is_constant(op)
    ]
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    need: dict[SSAValue, None] = {}
    for op in [*ops, ret]:
        need.update((v, None) for inner in op.walk() for v in inner.operands)
    b = SegmentBuilder()
    for v in need:
        if v in chip_output:
            c, i = chip_output[v]
            b.add_arg(v, PortInfo("output", chip=c, index=i))
        elif v in input_name:
            b.add_arg(v, PortInfo("input", input_name[v]))
    for v in need:
        if v not in b.mapping and is_constant(v.owner):  # type: ignore[arg-type]
            b.clone_in(v.owner)  # type: ignore[arg-type]
    for op in ops:
        if not isinstance(op, UnshardOp):
            b.clone_in(op)  # plain ops as they are; any other tp op is refused there
            continue
        full = op.result.type
        assert isinstance(full, TensorType)
        total = b.emit(tensor.EmptyOp([], TensorType(full.element_type, full.get_shape())))
        for part, sl in zip(op.parts, op.slices.data, strict=True):
            start = 0  # where this run starts in the part
            for at, size in sl.ranges:
                piece = b.mapping[part]
                shape = list(full.get_shape())
                shape[sl.axis_index] = size
                if size != sl.shape[sl.axis_index]:
                    offsets = [0] * len(shape)
                    offsets[sl.axis_index] = start
                    piece = b.emit(
                        tensor.ExtractSliceOp.from_static_parameters(piece, offsets, shape)
                    )
                offsets = [0] * len(shape)
                offsets[sl.axis_index] = at
                total = b.emit(
                    tensor.InsertSliceOp.from_static_parameters(piece, total, offsets, shape)
                )
                start += size
        b.mapping[op.result] = total
    values = [b.result(v) for v in ret.operands]
    b.emit(ReturnOp(*values))
    host = FuncOp(
        "host",
        FunctionType.from_lists([a.type for a in b.block.args], [v.type for v in values]),
        Region(b.block),
    )
    _, outs = ports(func)
    arg_json, res_json = ports_json(host, b.args, [PortInfo("result", p.name) for p in outs])
    entry = {"function": "host", "arguments": arg_json, "results": res_json}
    return host, entry


def _relay_json(func: FuncOp) -> list[dict[str, Any]]:
    steps = []
    for s in relay_steps(func):
        if isinstance(s, Copy):
            steps.append({"round": s.round, "copy": s.tensor, "from": s.src, "to": s.dst})
        else:
            steps.append({"round": s.round, "run": f"chip{s.chip}_halt{s.halt}"})
    return steps


def export_module(module: ModuleOp) -> None:
    """Rewrite ``module`` (per-chip programs, after tp-link-points) into its segments,
    ``@host`` and the manifest (`MANIFEST`); a located refusal when it cannot."""
    func = entry_of(module, "tp-export")
    progs = programs(func)
    if not progs:
        raise TpReject.NOT_SECTIONED.at(
            func, f"@{func.sym_name.data} has no per-chip programs: run tp-link-points first"
        )
    for op in module.ops:
        if isinstance(op, FuncOp) and CHIP_FUNCTION in op.attributes:
            raise refuse(
                op,
                f"@{op.sym_name.data} is a per-chip function (an outlined program): run "
                "tp-inline first for its flat form",
            )
    check_programs(func)
    ins, _ = ports(func)
    input_name = {a: port.name for a, port in zip(func.body.block.args, ins, strict=True)}
    segments = [s for p in progs for s in _segments(p, input_name)]
    host, host_entry = _host(func, progs, input_name)
    manifest = {
        "chips": len(progs),
        "segments": [entry for _, entry in segments],
        "relay": _relay_json(func),
        "host": host_entry,
    }
    for f, _ in segments:
        module.body.block.insert_op_before(f, func)
    module.body.block.insert_op_before(host, func)
    func.detach()
    func.erase(safe_erase=False)
    PatternRewriteWalker(DropChips()).rewrite_module(module)
    PatternRewriteWalker(Generalize(), apply_recursively=False).rewrite_module(module)
    for f in module.ops:  # signatures as the converted blocks have them
        if isinstance(f, FuncOp) and (ret := f.body.block.last_op) is not None:
            f.function_type = FunctionType.from_lists(
                [a.type for a in f.body.block.args], [v.type for v in ret.operands]
            )
    module.attributes.pop(CERTIFICATE_ATTR, None)  # the certified program is gone
    module.attributes[MANIFEST] = StringAttr(json.dumps(manifest, separators=(",", ":")))


def manifest_of(module: ModuleOp) -> dict[str, Any]:
    """The manifest tp-export wrote into ``module``."""
    attr = module.attributes.get(MANIFEST)
    assert isinstance(attr, StringAttr)
    return json.loads(attr.data)


@dataclass(frozen=True)
class TpExport(ModulePass):
    """Cut the per-chip programs into plain-MLIR segments, with a manifest of when each runs
    and what each argument and result is."""

    name = "tp-export"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        export_module(op)
