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
calls per-chip functions (an outlined program) is cut through its calls
(`tp_dialect.passes.export_cut`): each function's parts are written once, and each call is
an entry of its own whose ``code`` names the shared function (an entry without ``code``
calls its ``function``); a run of one halt may then run several entries, in order. Linear
in the programs' ops plus, per call, the ports it binds (each op is cloned once, each
constant once per segment reading it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from tp_dialect.analysis.rounds import Copy
from tp_dialect.analysis.schedule.programs import check_programs, programs, relay_steps
from tp_dialect.analysis.touch import is_constant
from tp_dialect.certificate import CERTIFICATE_ATTR
from tp_dialect.ops import UnshardOp
from tp_dialect.passes.export_cut import ChipCut
from tp_dialect.passes.export_ops import (
    DropChips,
    Generalize,
    PortInfo,
    SegmentBuilder,
    ports_json,
)
from tp_dialect.passes.preconditions import entry_of
from tp_dialect.program_ops import CHIP_FUNCTION, ChipProgramOp, RelayOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import ports

MANIFEST = "tp.export"
"""The module attribute holding the export's manifest (JSON): segments, ports, relay."""


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


def _relay_json(func: FuncOp, runs: dict[int, dict[int, list[str]]]) -> list[dict[str, Any]]:
    """The relay's steps, a run of chip c to halt h as one step per entry it runs."""
    steps = []
    for s in relay_steps(func):
        if isinstance(s, Copy):
            steps.append({"round": s.round, "copy": s.tensor, "from": s.src, "to": s.dst})
        else:
            steps += [{"round": s.round, "run": name} for name in runs[s.chip][s.halt]]
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
    check_programs(func)
    ins, _ = ports(func)
    input_name = {a: port.name for a, port in zip(func.body.block.args, ins, strict=True)}
    taken = {op.sym_name.data for op in module.ops if isinstance(op, FuncOp)}
    functions: dict[FuncOp, Any] = {}
    chips = [ChipCut(p, input_name, functions, taken) for p in progs]
    segments = [s for chip in chips for s in chip.segments()]
    host, host_entry = _host(func, progs, input_name)
    manifest = {
        "chips": len(progs),
        "segments": [entry for _, entry in segments],
        "relay": _relay_json(func, {chip.chip: chip.runs for chip in chips}),
        "host": host_entry,
    }
    for f, _ in segments:
        if f is not None:
            module.body.block.insert_op_before(f, func)
    module.body.block.insert_op_before(host, func)
    func.detach()
    func.erase(safe_erase=False)
    for f in [op for op in module.ops if isinstance(op, FuncOp) and CHIP_FUNCTION in op.attributes]:
        f.detach()  # per-chip functions: their parts are segments now (uncalled: nothing)
        f.erase(safe_erase=False)
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
