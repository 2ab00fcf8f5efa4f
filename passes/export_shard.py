"""tp-export-shard: a tp program as tp-split writes it becomes the unsharded program with MLIR
Shard annotations stating the split tp chose — the form tp-import-shard reads.

Invariant: tp-import-shard on the output gives back the input, text for text (its
certificate aside); the pass checks that itself before it changes anything, and refuses
(``not-exportable``) a program whose re-import differs. The output holds one ``shard.grid``
of N devices, a ``shard.shard`` of every entry argument the chips load in N equal runs (the
plan) and, in a flat program, one of every value tp-split's propagation cuts or sums (claims
tp-import-shard checks): a cut value split along its axis, a summed partial sum replicated —
where MLIR's own partitioning would place the ``shard.all_reduce`` a ``tp.allreduce`` stands
for. No ``tp`` op is left.

The un-split is `tp_dialect.passes.unsplit_walk.Unsplitter`, run on the entry and on each
callee holding chips' ops (an outlined program's ``@layer``; a callee's loads name the entry
arguments its calls hand it). Refused by name: a program after tp-relocate (any other
``tp`` op), chips not running one program each, an argument cut in runs other than N equal
contiguous ones (``shard-unsupported``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, shard
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i16,
    i64,
)
from xdsl.ir import BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from tp_dialect.analysis.split.layouts import Split
from tp_dialect.analysis.split.plan import TpPlan
from tp_dialect.attrs import chip_of
from tp_dialect.certificate import CERTIFICATE_ATTR
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import CHIPS_ATTR, stated_chips
from tp_dialect.names import value_hint, value_name
from tp_dialect.passes.import_shard import ArgumentEntry, import_shard
from tp_dialect.passes.split_walk import (
    dense_i64,
    shape_of,
)
from tp_dialect.passes.unsplit_walk import Unsplitter
from tp_dialect.reject import TpReject
from tp_dialect.signature import NAME_ATTR, BindError, entry_function

GRID = "chips"


def _plan(fn: func.FuncOp, cuts: dict[BlockArgument, set[Split]], n: int) -> TpPlan:
    """The entry arguments the chips load cut (``cuts``): one cut each, N equal contiguous
    runs, named by ``tp.name`` — what a Shard annotation of an argument can state."""
    entries = []
    attrs = fn.arg_attrs.data if fn.arg_attrs else ()
    for arg in fn.body.block.args:
        found = set(cuts.get(arg, set()))
        if not found:
            continue
        cut = found.pop()
        stated = attrs[arg.index].data if arg.index < len(attrs) else {}
        name = getattr(stated.get(NAME_ATTR), "data", None)
        if not isinstance(name, str):
            raise TpReject.NOT_EXPORTABLE.at(
                fn,
                f"tp-export-shard: %{value_name(arg)} is cut but states no tp.name: a plan, "
                "and the annotation tp-import-shard reads back, names an argument",
            )
        even = cut.full // n
        if found or cut.full % n or cut.ranges != tuple(((c * even, even),) for c in range(n)):
            raise TpReject.SHARD_UNSUPPORTED.at(
                fn,
                f"tp-export-shard: %{value_name(arg)} is cut {cut.describe()}: MLIR's "
                "sharding splits an axis in equal contiguous runs, one a device",
            )
        entries.append(ArgumentEntry(name, "colwise", axis=cut.axis))
    return TpPlan(tuple(entries), "tp-export-shard")


def _entry_cuts(
    fn: func.FuncOp, walks: dict[func.FuncOp, Unsplitter]
) -> dict[BlockArgument, set[Split]]:
    """The entry's arguments' cuts: its own loads, and each callee's loads of the arguments
    its calls hand it (`split_calls`: a callee loads an entry argument's runs itself)."""
    cuts = {a: set(c) for a, c in walks[fn].arg_cuts.items()}
    for call in fn.body.block.ops:
        if not isinstance(call, func.CallOp):
            continue
        f = next((g for g in walks if g.sym_name.data == call.callee.string_value()), None)
        if f is None or f is fn:
            continue
        for arg, found in walks[f].arg_cuts.items():
            handed = call.arguments[arg.index]
            if not (isinstance(handed, BlockArgument) and handed.owner is fn.body.block):
                raise TpReject.NOT_EXPORTABLE.at(
                    call, "tp-export-shard: a call hands a cut argument something the entry "
                    "computes",
                )  # fmt: skip
            cuts.setdefault(handed, set()).update(found)
    return cuts


class _Differs(Exception):
    """The un-split written, but it does not import back to the input: ``diagnostic`` says
    so; ``ambiguous``: an expand's un-split had a choice (`Unsplitter.expand`)."""

    def __init__(self, diagnostic: TpDiagnostic, ambiguous: bool) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic, self.ambiguous = diagnostic, ambiguous


def export_shard(module: ModuleOp) -> None:
    """tp-export-shard on ``module`` (module docstring); ``module`` unchanged when refused.
    Where the chips' program leaves an expand's unsharded shape open (a cut landing on a
    dim of 1 a chip, or beside a leading dim of 1), the outermost dim is tried first, then
    the innermost: the first whose export imports back is written."""
    n = stated_chips(module)
    if n is None:
        raise TpReject.NOT_EXPORTABLE.at(
            module, "tp-export-shard: the module states no tp.chips: run tp-split first"
        )
    if n < 2:
        raise TpReject.NOT_EXPORTABLE.at(
            module,
            f"tp-export-shard: a program over {n} chip: no cut shows in it (export the "
            "unsharded program itself)",
        )
    try:
        entry_function(module)
    except BindError as err:
        raise TpReject.NOT_EXPORTABLE.at(module, f"tp-export-shard: {err}") from None
    want = _text(module)  # what importing the export must give back
    try:
        out = _exported(module, n, want, outermost=True)
    except _Differs as first:
        if not first.ambiguous:
            raise first.diagnostic from None
        try:
            out = _exported(module, n, want, outermost=False)
        except _Differs:
            raise first.diagnostic from None
    module.body.detach_block(module.body.block)
    module.body.add_block(out.body.detach_block(out.body.block))
    module.attributes.clear()
    module.attributes.update(out.attributes)


def _exported(module: ModuleOp, n: int, want: str, outermost: bool) -> ModuleOp:
    """``module``'s export (a copy): located refusals raised as they are, an un-split that
    does not import back as `_Differs`."""
    out = module.clone()
    fn = entry_function(out)
    # The entry, and each function it calls that holds chips' ops (an outlined program's
    # @layer, split once by tp-split: `split_calls`).
    fns = [fn] + [
        f
        for f in out.body.block.ops
        if isinstance(f, func.FuncOp)
        and f is not fn
        and any(chip_of(v.type) is not None for o in f.walk() for v in o.results)
    ]
    try:
        walks = {f: Unsplitter(f, n, outermost) for f in fns}
        for walk in walks.values():
            walk.run()
            walk.finish()
        plan = _plan(fn, _entry_cuts(fn, walks), n)
    except TpDiagnostic as err:  # said at the input's op (the copy's has no location)
        back = dict(zip(out.walk(), module.walk(), strict=True))
        raise TpDiagnostic(back.get(err.op, err.op), err.message) from None
    ambiguous = any(w.ambiguous for w in walks.values())
    for f, walk in walks.items():
        region = Region(walk.block)
        f.body.detach_block(f.body.block)  # type: ignore[arg-type]
        f.body.add_block(region.detach_block(walk.block))
    out.attributes[CHIPS_ATTR] = IntegerAttr(1, i64)  # as tp-gen --unsharded states it
    out.attributes.pop(CERTIFICATE_ATTR, None)
    why = ""
    try:
        # What the walk found cut or summed, claimed beside the plan (tp-import-shard checks
        # each against its own propagation); an outlined program's arguments only, the only
        # annotations tp-import-shard reads there.
        said = _loaded(fn, plan)
        if len(fns) == 1 and not _calls(fn):
            entry = walks[fn]
            said.update((v, cut.axis) for v, cut in entry.split.items())
            said.update((v, None) for v in entry.summed)
        _annotate(out, n, said)
        again = out.clone()
        import_shard(again)
        if _text(again) != want:
            why = "it is not tp-split's output for a plan MLIR's sharding states"
    except TpDiagnostic as err:  # the un-split's own split or import refused it
        why = f"splitting it again: {err.message}"
    if why:
        raise _Differs(
            TpReject.NOT_EXPORTABLE.at(
                module,
                "tp-export-shard: re-importing the un-split program does not give this one "
                f"back ({why})",
            ),
            ambiguous,
        )
    return out


def _text(module: ModuleOp) -> str:
    """``module`` as text, its certificate aside: tp-import-shard certifies what it writes
    (where the obligation holds) whether or not the program exported was certified."""
    shown = module.clone()
    shown.attributes.pop(CERTIFICATE_ATTR, None)
    buf = io.StringIO()
    Printer(stream=buf).print_op(shown)
    return buf.getvalue()


def _calls(fn: func.FuncOp) -> bool:
    return any(isinstance(op, func.CallOp) for op in fn.body.block.ops)


def _loaded(fn: func.FuncOp, plan: TpPlan) -> dict[SSAValue, int | None]:
    """The axis the plan cuts each entry argument along."""
    attrs = fn.arg_attrs.data if fn.arg_attrs else ()
    said: dict[SSAValue, int | None] = {}
    for arg, a in zip(fn.body.block.args, attrs, strict=False):
        name = getattr(a.data.get(NAME_ATTR), "data", None)
        entry = plan.entry_for(name) if isinstance(name, str) else None
        if isinstance(entry, ArgumentEntry):
            said[arg] = entry.axis
    return said


def _annotate(module: ModuleOp, n: int, said: dict[SSAValue, int | None]) -> None:
    """One grid, one sharding a (rank, axis), and a ``shard.shard`` of every value ``said``
    names: split along its axis, or (None) replicated."""
    fn = entry_function(module)
    grid = shard.GridOp.build(properties={"sym_name": StringAttr(GRID), "shape": dense_i64([n])})
    module.body.block.insert_op_before(grid, module.body.block.first_op)  # type: ignore[arg-type]
    shardings: dict[tuple[int, int | None], SSAValue] = {}
    first = fn.body.block.first_op

    def sharding(rank: int, axis: int | None) -> SSAValue:
        if (rank, axis) not in shardings:
            axes = [DenseArrayBase.from_list(i16, [0] if i == axis else []) for i in range(rank)]
            op = shard.ShardingOp.build(
                operands=[[], []],
                result_types=[shard.ShardingType()],
                properties={
                    "grid": FlatSymbolRefAttr(GRID),
                    "split_axes": shard.ShardAxesArrayAttr(ArrayAttr(axes)),
                },
            )
            fn.body.block.insert_op_before(op, first)  # type: ignore[arg-type]
            op.results[0].name_hint = "replicated" if axis is None else f"split{axis}_r{rank}"
            shardings[(rank, axis)] = op.results[0]
        return shardings[(rank, axis)]

    ordered = [*fn.body.block.args, *(r for op in fn.body.block.ops for r in op.results)]
    anchor = fn.body.block.first_op  # the arguments' annotations first, in their order
    for value in ordered:
        if value not in said:
            continue
        rank = len(shape_of(value))
        s = sharding(rank, said[value])
        ann = shard.ShardOp(value, s, None)
        ann.results[0].name_hint = value_hint(f"{value_name(value)}_sharded")
        if isinstance(value, BlockArgument):
            fn.body.block.insert_op_before(ann, anchor)  # type: ignore[arg-type]
        else:
            fn.body.block.insert_op_after(ann, value.owner)  # type: ignore[arg-type]
        value.replace_uses_with_if(ann.results[0], lambda use, a=ann: use.operation is not a)
    for op in shardings.values():
        owner = op.owner
        assert isinstance(owner, Operation)
        owner.detach()
        fn.body.block.insert_op_before(owner, fn.body.block.first_op)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TpExportShard(ModulePass):
    """Write a tp program (tp-split's output) back as its unsharded program annotated with
    MLIR Shard: the plan on the arguments, tp's propagation on every cut or summed value."""

    name = "tp-export-shard"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        export_shard(op)


__all__ = ["TpExportShard", "export_shard"]
