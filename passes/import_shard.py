"""tp-import-shard: an unsharded program annotated with MLIR's Shard dialect becomes the tp
program tp-split makes from the same plan.

Invariant: the output is exactly what tp-split writes for the plan the annotations state — a
``shard.shard`` of an entry argument to a ``shard.sharding`` that splits one tensor axis over
the 1-D ``shard.grid`` of N devices cuts that weight along that axis in N equal runs (no split:
the whole tensor on every chip) — over N chips; propagation through the ops, the partial sums
and their all-reduces are tp-split's. An annotation of any other value is a claim about
propagation: it must agree with tp-split's (the value cut along that axis, or whole — a
partial sum is whole once summed, as MLIR's sharding says). Every ``shard`` op is consumed.
Anything tp cannot honour is refused by name at its op (``shard-unsupported``): a grid of
rank other than 1, a split over two grid axes or of two tensor axes, halo sizes or explicit
shard offsets, a ``shard`` collective or a reduction other than ``sum`` (an unsharded program
has none), an annotation contradicting propagation or a value annotated two ways, any
annotation of a value other than an argument in an outlined program; N not dividing the axis
is tp-split's ``plan-mismatch``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, shard
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, BlockArgument, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tp_dialect.analysis.split.plan import Cut, Entry, TpPlan, even_cut
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import MAX_LOWERED_CHIPS
from tp_dialect.names import value_name
from tp_dialect.passes.split import split_by_plan
from tp_dialect.passes.split_walk import Splitter
from tp_dialect.reject import TpReject
from tp_dialect.signature import NAME_ATTR, entry_function, ports

REFUSE = TpReject.SHARD_UNSUPPORTED


@dataclass(frozen=True)
class ArgumentEntry(Entry):
    """A plan entry for one argument by its exact name (``tp.name``): a Shard annotation's
    cut, along ``axis`` (None: replicated)."""

    axis: int | None = None

    def matches(self, name: str) -> bool:
        return name == self.pattern

    def cut(self, name: str, shape: tuple[int, ...], chips: int) -> Cut | str | None:
        return None if self.axis is None else even_cut(self.axis, shape[self.axis], chips, name)


@dataclass(frozen=True)
class Annotation:
    """One ``shard.shard``: what it annotates and the tensor axis it splits (None: none)."""

    op: shard.ShardOp
    axis: int | None


def grid_size(module: ModuleOp) -> tuple[str, int]:
    """The module's one ``shard.grid``: its name and its N devices (refused otherwise)."""
    grids = [op for op in module.walk() if isinstance(op, shard.GridOp)]
    if len(grids) != 1:
        where = grids[1] if grids else None
        raise REFUSE.at(
            where, f"tp-import-shard: the module holds {len(grids)} shard.grid ops: tp splits "
            "over one grid of chips"
        )  # fmt: skip
    shape = grids[0].shape.get_values()
    if len(shape) != 1 or not 1 <= shape[0] <= MAX_LOWERED_CHIPS:
        raise REFUSE.at(
            grids[0],
            f"tp-import-shard: grid @{grids[0].sym_name.data} has shape "
            f"{'x'.join(map(str, shape))}: tp splits over a 1-D grid of 1 to "
            f"{MAX_LOWERED_CHIPS} chips",
        )
    return grids[0].sym_name.data, int(shape[0])


def annotation(op: shard.ShardOp, grid: str) -> Annotation:
    """The tensor axis ``op``'s sharding splits over ``grid`` (refused when tp cannot cut
    that way)."""
    sharding = op.sharding.owner
    if not isinstance(sharding, shard.ShardingOp):
        raise REFUSE.at(op, "tp-import-shard: the sharding is not a shard.sharding op's result")
    if sharding.grid.root_reference.data != grid:
        raise REFUSE.at(sharding, f"tp-import-shard: a sharding over another grid than @{grid}")
    if sharding.static_halo_sizes.get_values() or sharding.dynamic_halo_sizes:
        raise REFUSE.at(sharding, "tp-import-shard: halo sizes: tp cuts disjoint runs")
    if sharding.static_sharded_dims_offsets.get_values() or sharding.dynamic_sharded_dims_offsets:
        raise REFUSE.at(
            sharding, "tp-import-shard: explicit shard offsets: tp cuts an axis in equal runs"
        )
    split = [
        (axis, list(grid_axes.get_values()))
        for axis, grid_axes in enumerate(sharding.split_axes.axes)
        if grid_axes.get_values()
    ]
    if len(split) > 1:
        raise REFUSE.at(
            sharding, "tp-import-shard: two tensor axes split: tp cuts one axis of a tensor"
        )
    if split and split[0][1] != [0]:
        raise REFUSE.at(
            sharding,
            f"tp-import-shard: axis {split[0][0]} split over grid axes {split[0][1]}: the grid "
            "has one axis, 0",
        )
    t = op.src.type
    if split and (not isinstance(t, TensorType) or split[0][0] >= len(t.get_shape())):
        raise REFUSE.at(op, f"tp-import-shard: axis {split[0][0]} is not an axis of the tensor")
    return Annotation(op, split[0][0] if split else None)


def _refuse_collectives(module: ModuleOp) -> None:
    """An unsharded program has no collective: tp-split places the all-reduces."""
    for op in module.walk():
        if isinstance(op, shard.CollectiveCommunicationOp):
            kind = getattr(op, "reduction", None)
            extra = ""
            if kind is not None and str(getattr(kind, "data", kind)) != "sum":
                extra = f" (and its reduction {getattr(kind, 'data', kind)}: tp sums)"
            raise REFUSE.at(
                op, f"tp-import-shard: '{op.name}' in an unsharded program: tp-split places "
                f"the collectives from the cuts{extra}"
            )  # fmt: skip


def _name_arguments(fn: func.FuncOp) -> None:
    """Give each argument without a ``tp.name`` the name the host binds it by (`ports`: its
    SSA name, or ``arg<i>`` where that is taken): a plan names arguments."""
    ins, _ = ports(fn)
    attrs = list(fn.arg_attrs.data) if fn.arg_attrs else [DictionaryAttr({})] * len(fn.args)
    named: list[DictionaryAttr] = []
    for port, a in zip(ins, attrs, strict=True):
        data: dict[str, Attribute] = dict(a.data)
        data.setdefault(NAME_ATTR, StringAttr(port.name))
        named.append(DictionaryAttr(data))
    fn.arg_attrs = ArrayAttr(named)


def _strip(module: ModuleOp, strict: bool = False) -> None:
    """Take ``module``'s Shard ops out, each annotated value itself again; ``strict``: refuse
    a sharding something other than ``shard.shard`` reads."""
    rewriter = Rewriter()
    for op in [o for o in module.walk() if isinstance(o, shard.ShardOp)]:
        op.result.replace_all_uses_with(op.src)
        rewriter.erase_op(op)
    for op in [o for o in module.walk() if isinstance(o, shard.ShardingOp | shard.GridOp)]:
        if strict and op.results and op.results[0].uses:
            raise REFUSE.at(op, "tp-import-shard: a sharding read by something not shard.shard")
        rewriter.erase_op(op, safe_erase=False)


def _unannotated(value: SSAValue) -> SSAValue:
    """The value an annotation (or a chain of them) is about."""
    while isinstance(value.owner, shard.ShardOp):
        value = value.owner.src
    return value


def without_annotations(module: ModuleOp) -> ModuleOp:
    """A copy of ``module`` with its Shard ops taken out, each annotated value itself again:
    the unsharded program the annotations are about (tp-run --check's reference)."""
    copy = module.clone()
    _strip(copy)
    return copy


def import_shard(module: ModuleOp) -> None:
    """tp-import-shard on ``module`` (module docstring)."""
    grid, n = grid_size(module)
    _refuse_collectives(module)
    fn = entry_function(module)
    _name_arguments(fn)
    found = [annotation(op, grid) for op in module.walk() if isinstance(op, shard.ShardOp)]
    entries: dict[str, ArgumentEntry] = {}
    claims: list[Annotation] = []
    for ann in found:
        src = ann.op.src
        if isinstance(src, BlockArgument) and src.owner is fn.body.block:
            name = fn.arg_attrs.data[src.index].data[NAME_ATTR].data  # type: ignore[union-attr]
            style = "replicated" if ann.axis is None else "colwise"
            entry = ArgumentEntry(name, style, axis=ann.axis)
            if entries.setdefault(name, entry).axis != ann.axis:
                raise REFUSE.at(
                    ann.op,
                    f"tp-import-shard: argument '{name}' annotated twice, with different "
                    "shardings: tp loads one cut of each argument",
                )
        else:
            claims.append(ann)
    plan = TpPlan(tuple(entries.values()), "shard annotations")
    if claims:
        _check_claims(module, claims, plan, n)
    _strip(module, strict=True)  # the annotations are consumed: each value is itself again
    split_by_plan(module, plan, n)


def _check_claims(module: ModuleOp, claims: list[Annotation], plan: TpPlan, n: int) -> None:
    """Each annotation of a value that is not an argument agrees with tp-split's propagation
    (module docstring), found on a copy split by ``plan``."""
    copy = module.clone()
    pairs = dict(zip(module.walk(), copy.walk(), strict=True))
    fn = entry_function(copy)
    if any(isinstance(op, func.CallOp) for op in fn.body.block.ops):
        raise REFUSE.at(
            claims[0].op,
            "tp-import-shard: an annotation inside an outlined program: annotate the entry's "
            "arguments",
        )
    claimed: dict[SSAValue, Annotation] = {}
    for ann in claims:
        twin = pairs[ann.op]
        assert isinstance(twin, shard.ShardOp)
        earlier = claimed.setdefault(_unannotated(twin.src), ann)
        if earlier.axis != ann.axis:
            raise REFUSE.at(
                ann.op,
                f"tp-import-shard: %{value_name(ann.op.src)} annotated twice, with different "
                "shardings (a reshard): tp holds each value one way",
            )
    _strip(copy)
    walk = Splitter(fn, plan, n)
    try:
        walk.run()
    except TpDiagnostic as err:  # said at the original's op (the copy's has no location)
        back = {copied: original for original, copied in pairs.items()}
        raise TpDiagnostic(back.get(err.op, err.op), err.message) from None
    for value, ann in claimed.items():
        cut = walk.cut.get(value)
        got = None if cut is None else cut.axis
        if got != ann.axis:
            said = "whole on every chip" if ann.axis is None else f"split along axis {ann.axis}"
            found = "whole on every chip" if got is None else f"cut along axis {got}"
            raise REFUSE.at(
                ann.op,
                f"tp-import-shard: the annotation says %{value_name(ann.op.src)} is {said}; "
                f"tp-split's propagation from the arguments' cuts has it {found}",
            )


@dataclass(frozen=True)
class TpImportShard(ModulePass):
    """Translate MLIR Shard annotations (``shard.grid``, ``shard.sharding``, ``shard.shard``)
    on an unsharded program into the tp program tp-split makes from the plan they state."""

    name = "tp-import-shard"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not any(isinstance(o, shard.GridOp) for o in op.walk()):
            raise TpDiagnostic(None, "tp-import-shard: the module holds no shard.grid")
        import_shard(op)
