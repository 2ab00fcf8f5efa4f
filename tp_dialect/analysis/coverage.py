"""Sums over slices that cover: an all-reduce of contractions over one weight's slices.

Megatron's row-parallel projection sums, over chips, a contraction of each chip's activation
with its slice of the weight cut along the contracted axis; the sum is the unsharded
contraction only when those slices are disjoint and cover that axis. `check_coverage` holds an
all-reduce (or a valid fold) to it:

- each partial is followed back through what hands data on unchanged — sections, chip
  programs, links (`values.origin`), ``tensor.cast``, ``linalg.copy``, an identity
  ``tensor.extract_slice``, calls (into the callee's return, and out through its arguments;
  an all-reduce in a callee is judged once per call chain reaching it) — to the contraction
  computing it (any linalg structured op with a reduction iterator);
- each operand of that contraction followed the same way to a ``tp.shard`` of a function
  argument (the checkpoint weight: arguments bound to one checkpoint name are one weight)
  gives the ranges of the weight's cut axis the chip covers, when the contraction sums that
  axis (read by the loop dimension itself); a slice cut along an axis the contraction does not
  sum covers the whole contracted axis on every chip.

Overlapping ranges are refused (``slices-overlap``), uncovered ones too (``slices-gap``). So
is whatever the rule cannot prove (``slices-gap``): a shard reaching the contraction only
through something that moves or changes data (a reshape, a transpose, a windowing slice, an
elementwise op, control flow), a partial that is such a function of a contraction over a
shard, an accumulator (``outs``) that starts from such data, a slice cut from anything but an
argument, an index expression other than the loop dimension. Partials that are not
contractions over shards at all (an elementwise chip value, say) make no claim.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.traits import IsTerminator, SymbolTable

from tp_dialect.analysis.provenance import Solver
from tp_dialect.analysis.values import origin
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.names import value_name
from tp_dialect.ops import AllReduceOp, ShardOp, UnshardOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import BindError, entry_function, ports

Calls = tuple[tuple[func.CallOp, func.FuncOp], ...]  # outermost first
_MAX_CONTEXTS = 64  # call chains into one all-reduce's function; beyond: not provable


class Unproven(Exception):
    """The covered part of a weight cannot be told; ``how`` says why."""

    def __init__(self, chip: int, how: str) -> None:
        super().__init__(how)
        self.chip = chip
        self.how = how


@dataclass(frozen=True)
class ContractedSlice:
    """A ``tp.shard`` of ``weight`` that a partial's contraction reads: the ranges of the
    weight's ``axis`` (of ``size``) that the partial covers."""

    shard: ShardOp
    weight: SSAValue
    axis: int
    size: int
    ranges: list[tuple[int, int]]


class _Tracer:
    """Follows values back through what hands data on unchanged, within call chains."""

    def __init__(self, solver: Solver, at: Operation) -> None:
        self.sends = solver.sends_in(at)

    def exact(self, value: SSAValue, calls: Calls) -> tuple[SSAValue, Calls]:
        """The value ``value`` hands on unchanged, and the call chain it is in."""
        seen: set[tuple[SSAValue, Calls]] = set()
        while (value, calls) not in seen:
            seen.add((value, calls))
            value = origin(value, self.sends)
            owner = value.owner
            if isinstance(owner, tensor.CastOp):
                value = owner.source
            elif isinstance(owner, linalg.CopyOp) and len(owner.inputs) == 1:
                value = owner.inputs[0]
            elif isinstance(owner, tensor.ExtractSliceOp) and _identity(owner):
                value = owner.source
            elif isinstance(owner, func.CallOp) and (ret := _returned(owner)) is not None:
                calls = (*calls, (owner, ret[0]))
                value = ret[1].operands[value.index]  # type: ignore[attr-defined]
            elif (
                isinstance(value, BlockArgument)
                and calls
                and isinstance(owner, Block)
                and owner.parent_op() is calls[-1][1]
            ):
                value = calls[-1][0].arguments[value.index]
                calls = calls[:-1]
            else:
                return value, calls
        return value, calls

    def reaches(
        self, value: SSAValue, calls: Calls, wanted: Callable[[Operation], bool]
    ) -> str | None:
        """The first op through which ``value`` derives, by moving or changing data (not by
        a contraction, an all-reduce or a host input), from an op ``wanted`` holds for: its
        name, or None."""
        todo = deque([(value, calls, "")])
        seen: set[SSAValue] = set()
        while todo:
            v, cs, via = todo.popleft()
            v, cs = self.exact(v, cs)
            if v in seen:
                continue
            seen.add(v)
            owner = v.owner
            if isinstance(owner, Block):
                region_op = owner.parent_op()
                if region_op is not None and not isinstance(region_op, func.FuncOp):
                    for u in _region_inputs(region_op):
                        todo.append((u, cs, via or f"'{region_op.name}'"))
                continue
            if via and wanted(owner):
                return via
            if _moves(owner):
                for u in _data_operands(owner):
                    todo.append((u, cs, via or f"'{owner.name}'"))
        return None


def _identity(op: tensor.ExtractSliceOp) -> bool:
    """Whether a slice takes its whole source: offsets 0, strides 1, sizes the source's."""
    shape = tuple(getattr(op.source.type, "get_shape", lambda: ())())
    return (
        not op.offsets
        and not op.sizes
        and not op.strides
        and all(o == 0 for o in op.static_offsets.get_values())
        and all(s == 1 for s in op.static_strides.get_values())
        and tuple(op.static_sizes.get_values()) == shape
    )


def _returned(call: func.CallOp) -> tuple[func.FuncOp, func.ReturnOp] | None:
    callee = SymbolTable.lookup_symbol(call, call.callee)
    if not isinstance(callee, func.FuncOp) or len(callee.body.blocks) != 1:
        return None
    ret = callee.body.block.last_op
    return (callee, ret) if isinstance(ret, func.ReturnOp) else None


def _contraction(op: Operation) -> bool:
    return isinstance(op, linalg.LinalgStructuredOperation) and any(
        it.data == IteratorType.REDUCTION for it in op.get_iterator_types().data
    )


def _moves(op: Operation) -> bool:
    """Ops through which data flows moved or changed but not summed over chips: reshapes,
    slices, inserts, concatenation, transposes and broadcasts, elementwise arithmetic,
    structured ops without a reduction, control flow."""
    if isinstance(op, ShardOp | AllReduceOp | UnshardOp) or _contraction(op):
        return False
    return op.dialect_name() in ("tensor", "arith", "math", "scf", "bufferization") or (
        isinstance(op, linalg.LinalgStructuredOperation)
    )


def _data_operands(op: Operation) -> Iterator[SSAValue]:
    yield from op.operands
    for inner in op.walk():
        if inner is not op and inner.has_trait(IsTerminator):
            yield from inner.operands  # what a region op's regions hand out


def _region_inputs(op: Operation) -> Iterator[SSAValue]:
    """What a region op's block arguments hold: its operands and what its regions yield."""
    yield from _data_operands(op)


def _zero_or_fresh(value: SSAValue, tracer: _Tracer, calls: Calls) -> bool:
    """Whether an accumulator starts from nothing: an empty tensor, a constant, a fill."""
    v, _ = tracer.exact(value, calls)
    owner = v.owner
    if isinstance(owner, linalg.FillOp):
        return all(_zero_or_fresh(o, tracer, calls) for o in owner.outputs) and all(
            isinstance(i.owner, arith.ConstantOp) for i in owner.inputs
        )
    return isinstance(owner, tensor.EmptyOp | arith.ConstantOp)


def contracted_slices(
    partial: SSAValue, solver: Solver, at: Operation, chip: int, calls: Calls = ()
) -> Iterator[ContractedSlice]:
    """The slices of weights the contraction computing ``partial`` (chip ``chip``'s) covers
    on the axes it sums (see the module docstring); raises Unproven when that cannot be
    told."""
    tracer = _Tracer(solver, at)
    value, calls = tracer.exact(partial, calls)
    value, calls, _ = _through_views(value, calls, tracer)
    op = value.owner
    if not isinstance(op, Operation) or not _contraction(op):
        if (via := tracer.reaches(value, calls, _contraction)) is not None:
            raise Unproven(chip, f"a contraction, through {via}")
        return
    assert isinstance(op, linalg.LinalgStructuredOperation)
    iterators = op.get_iterator_types().data
    reduced = {i for i, it in enumerate(iterators) if it.data == IteratorType.REDUCTION}
    maps = op.get_indexing_maps().data
    for init in op.outputs:
        start = tracer.exact(init, calls)[0].owner
        if not _zero_or_fresh(init, tracer, calls) and (
            isinstance(start, Operation)
            and _weighty(start)
            or tracer.reaches(init, calls, _weighty)
        ):
            raise Unproven(chip, f"an accumulator starting from %{value_name(init)}")
    held: dict[int, tuple[tuple[int, int], ...]] = {}  # loop -> ranges a weight's shard holds
    indirect: list[tuple[SSAValue, Calls, Sequence[object], str]] = []
    for operand, amap in zip(op.inputs, maps, strict=False):
        v, vcalls = tracer.exact(operand, calls)
        shard = v.owner
        if not isinstance(shard, ShardOp):
            if (via := tracer.reaches(v, vcalls, _is_shard)) is not None:
                indirect.append((v, vcalls, amap.data.results, via))
            continue
        weight, wcalls = tracer.exact(shard.source, vcalls)
        if not (isinstance(weight, BlockArgument) and isinstance(_op_of(weight), func.FuncOp)):
            raise Unproven(chip, f"a slice cut from %{value_name(weight)}, not from an argument")
        for found in _covered(shard, weight, amap.data.results, reduced, chip):
            expr = amap.data.results[found.axis]
            if isinstance(expr, AffineDimExpr):
                held[expr.position] = tuple(found.ranges)
            yield found
    for v, vcalls, exprs, via in indirect:
        _aligned(v, vcalls, exprs, reduced, held, tracer, chip, via)


def _aligned(
    value: SSAValue,
    calls: Calls,
    exprs: Sequence[object],
    reduced: set[int],
    held: dict[int, tuple[tuple[int, int], ...]],
    tracer: _Tracer,
    chip: int,
    via: str,
) -> None:
    """A contraction operand that derives from shards through elementwise work (a column-split
    projection's bias, added before its activation): proven only when, along the summed axis,
    every such shard holds exactly the runs the weight's own shard holds (the chip multiplies
    matching parts), and no shard reaches it cut along another axis."""
    sums = [
        (axis, e.position)
        for axis, e in enumerate(exprs)
        if isinstance(e, AffineDimExpr) and e.position in reduced
    ]
    if len(sums) != 1 or sums[0][1] not in held:
        raise Unproven(chip, f"its slice through {via}")
    axis, loop = sums[0]
    for runs in _cuts_along(value, axis, calls, tracer, chip, via):
        if runs != held[loop]:
            raise Unproven(
                chip,
                f"a slice through {via} holding {list(runs)} of the summed axis where the "
                f"weight's holds {list(held[loop])}",
            )


def _cuts_along(
    value: SSAValue, axis: int, calls: Calls, tracer: _Tracer, chip: int, via: str
) -> Iterator[tuple[tuple[int, int], ...]]:
    """The runs of ``value``'s ``axis`` each shard it derives from holds, followed back
    through elementwise generics (by their indexing maps) and elementwise ``arith``;
    Unproven through anything else that reaches a shard."""
    value, calls = tracer.exact(value, calls)
    owner = value.owner
    if isinstance(owner, ShardOp):
        if owner.slice.axis_index != axis:
            raise Unproven(chip, f"its slice through {via}, cut along another axis")
        yield tuple(owner.slice.ranges)
        return
    if not isinstance(owner, Operation) or not _moves(owner):
        return  # a contraction, an all-reduce, a host input: no shard of its own
    steps = _elementwise_sources(owner, value, axis)
    if steps is None:
        if tracer.reaches(value, calls, _is_shard) is not None:
            raise Unproven(chip, f"its slice through {via}")
        return
    for source, source_axis, window in steps:
        if source_axis is None:  # broadcast along the axis: must hold no shard
            if tracer.reaches(source, calls, _is_shard) is not None or isinstance(
                tracer.exact(source, calls)[0].owner, ShardOp
            ):
                raise Unproven(chip, f"its slice through {via}")
            continue
        if window is not None:
            # A window of a chip's own tensor: where it sits in the whole tensor is not in the
            # program (a packed projection's parts), so the runs it holds cannot be told.
            if tracer.reaches(source, calls, _is_shard) is not None or isinstance(
                tracer.exact(source, calls)[0].owner, ShardOp
            ):
                raise Unproven(chip, f"its slice through {via}, then a window of it")
            continue
        yield from _cuts_along(source, source_axis, calls, tracer, chip, via)


def _elementwise_sources(
    op: Operation, value: SSAValue, axis: int
) -> list[tuple[SSAValue, int | None, tuple[int, int] | None]] | None:
    """Where ``axis`` of ``value`` (a result of ``op``) comes from: each data operand, the
    axis of it that feeds it (None: broadcast) and a static window on it; None when ``op`` is
    not elementwise along that axis."""
    if isinstance(op, linalg.GenericOp):
        if any(str(it.data) != "parallel" for it in op.iterator_types.data):
            return None
        maps = [m.data for m in op.indexing_maps]
        out = maps[len(op.inputs) + op.results.index(value)]  # type: ignore[arg-type]
        expr = out.results[axis]
        if not isinstance(expr, AffineDimExpr):
            return None
        found: list[tuple[SSAValue, int | None, tuple[int, int] | None]] = []
        for operand, m in zip(op.operands, maps, strict=True):
            at = [i for i, e in enumerate(m.results) if expr.position in e.used_dims()]
            if len(at) > 1 or (at and not isinstance(m.results[at[0]], AffineDimExpr)):
                return None
            found.append((operand, at[0] if at else None, None))
        return found
    if isinstance(op, tensor.ExtractSliceOp):
        offsets = op.static_offsets.get_values()
        sizes = op.static_sizes.get_values()
        strides = op.static_strides.get_values()
        rank = len(getattr(value.type, "get_shape", lambda: ())())
        if op.offsets or op.sizes or op.strides or rank != len(sizes) or strides[axis] != 1:
            return None
        return [(op.source, axis, (offsets[axis], sizes[axis]))]
    shapes = {
        tuple(getattr(v.type, "get_shape", lambda: ())()) for v in (*op.operands, *op.results)
    }
    if op.dialect_name() == "arith" and len(shapes) == 1 and op.regions == ():
        return [(v, axis, None) for v in op.operands]
    return None


View = tuple[tuple[int, ...], ...]  # static (offsets, sizes, strides) of slices, outermost last


def _through_views(value: SSAValue, calls: Calls, tracer: _Tracer) -> tuple[SSAValue, Calls, View]:
    """``value`` seen through static ``tensor.extract_slice``s of it (a two-shot all-reduce's
    reduce-scatter sums one slice of every partial): what they slice, and the slices taken.
    Slicing a contraction's result keeps which part of its contracted axis it summed, as long
    as every chip takes the same slice (`check_coverage` holds them to it)."""
    view: list[tuple[int, ...]] = []
    while isinstance(op := value.owner, tensor.ExtractSliceOp) and not (
        op.offsets or op.sizes or op.strides
    ):
        view += [
            tuple(op.static_offsets.get_values()),
            tuple(op.static_sizes.get_values()),
            tuple(op.static_strides.get_values()),
        ]
        value, calls = tracer.exact(op.source, calls)
    return value, calls, tuple(view)


def partial_view(partial: SSAValue, solver: Solver, at: Operation, calls: Calls = ()) -> View:
    """The static slices ``partial`` takes of what computes it (empty: none)."""
    tracer = _Tracer(solver, at)
    value, calls = tracer.exact(partial, calls)
    return _through_views(value, calls, tracer)[2]


def _is_shard(op: Operation) -> bool:
    return isinstance(op, ShardOp)


def _weighty(op: Operation) -> bool:
    """A slice of a weight, or a contraction (which may hold one)."""
    return isinstance(op, ShardOp) or _contraction(op)


def _op_of(value: BlockArgument) -> Operation | None:
    return value.owner.parent_op()


def _covered(
    shard: ShardOp,
    weight: SSAValue,
    exprs: Sequence[object],
    reduced: set[int],
    chip: int,
) -> Iterator[ContractedSlice]:
    sl = shard.slice
    cut = exprs[sl.axis_index]
    if isinstance(cut, AffineDimExpr) and cut.position in reduced:
        yield ContractedSlice(shard, weight, sl.axis_index, sl.full_shape[sl.axis_index], sl.ranges)
        return
    if not isinstance(cut, AffineDimExpr):
        raise Unproven(chip, f"its slice through the index {cut}")
    # Cut along an axis the contraction does not sum: every chip sums the whole of each
    # contracted axis (and an index other than the loop dimension cannot be told).
    for axis, expr in enumerate(exprs):
        if isinstance(expr, AffineDimExpr):
            if expr.position in reduced:
                size = sl.full_shape[axis]
                yield ContractedSlice(shard, weight, axis, size, [(0, size)])
                return
        elif expr.used_dims() & reduced:  # type: ignore[attr-defined]
            raise Unproven(chip, f"its slice through the index {expr}")


class ModuleIndex:
    """What coverage asks of the whole module, gathered once per check (one walk, not one per
    all-reduce): who calls each function, and the checkpoint names of the entry's arguments."""

    def __init__(self, root: Operation) -> None:
        self.callers: dict[func.FuncOp, list[func.CallOp]] = {}
        for op in root.walk():
            if isinstance(op, func.CallOp):
                callee = SymbolTable.lookup_symbol(op, op.callee)
                if isinstance(callee, func.FuncOp):
                    self.callers.setdefault(callee, []).append(op)
        self.entry: func.FuncOp | None = None
        self._names: list[str] | None = None
        try:
            self.entry = entry_function(root)  # type: ignore[arg-type]
        except BindError:  # no single entry function: arguments are their own weights
            pass

    def name(self, index: int) -> str:
        """The checkpoint name of the entry's argument ``index`` (read once, when first
        asked: by then the obligation has refused what the ports cannot be read from)."""
        assert self.entry is not None
        if self._names is None:
            try:
                self._names = [port.name for port in ports(self.entry)[0]]
            except BindError as err:  # which argument is which weight cannot be told
                raise TpDiagnostic(self.entry, str(err)) from None
        return self._names[index]


def check_coverage(
    partials: Sequence[SSAValue], at: Operation, solver: Solver, index: ModuleIndex | None = None
) -> None:
    """Raise SLICES_OVERLAP / SLICES_GAP when the contractions summed by the all-reduce at
    ``at`` read slices of one weight that overlap on, leave out, or cannot be shown to cover
    the contracted axis (see the module docstring). ``index``: the module's `ModuleIndex`,
    when several all-reduces are checked."""
    index = index or ModuleIndex(at.get_toplevel_object())
    contexts = _call_chains(at, index)
    if contexts is None:
        raise TpReject.SLICES_GAP.at(
            at,
            f"the all-reduce is reached by more than {_MAX_CONTEXTS} call chains: which "
            "slices its partials sum cannot be proven",
        )
    for calls in contexts:
        _check(partials, at, solver, calls, index)


def _check(
    partials: Sequence[SSAValue], at: Operation, solver: Solver, calls: Calls, index: ModuleIndex
) -> None:
    held: dict[object, list[tuple[int, int, int]]] = {}  # (start, end, chip)
    sizes: dict[object, int] = {}
    names: dict[object, str] = {}
    views = {partial_view(p, solver, at, calls) for p in partials}
    for position, partial in enumerate(partials):
        # A ring fold adds its partials in a rotated order: name each by its own chip.
        owner = chip_of(partial.type)
        chip = position if owner is None else owner
        try:
            cuts = list(contracted_slices(partial, solver, at, chip, calls))
            if cuts and len(views) > 1:
                raise Unproven(chip, "a slice of a contraction that other chips slice otherwise")
        except Unproven as why:
            raise TpReject.SLICES_GAP.at(
                at,
                f"the all-reduce sums chip {why.chip}'s partial, which reads {why.how}: "
                "which part of the contracted axis it sums cannot be proven",
            ) from None
        for cut in cuts:
            key = (_weight_key(cut.weight, index), cut.axis)
            sizes[key] = cut.size
            names[key] = f"axis {cut.axis} of %{value_name(cut.weight)}"
            held.setdefault(key, []).extend((s, s + n, chip) for s, n in cut.ranges)
    for key, spans in held.items():
        what = names[key]
        spans.sort()
        reach, reacher = 0, -1
        for start, end, chip in spans:
            if start < reach:
                raise TpReject.SLICES_OVERLAP.at(
                    at,
                    f"the all-reduce sums contractions over {what}, and chips {reacher} and "
                    f"{chip} both hold [{start}, {min(end, reach)}): each chip's partial must "
                    "sum its own part of the contracted axis, or the sum counts it twice",
                )
            if start > reach:
                raise _gap(at, what, reach, start)
            reach, reacher = end, chip
        if reach < sizes[key]:
            raise _gap(at, what, reach, sizes[key])


def _gap(at: Operation, what: str, start: int, end: int) -> Exception:
    return TpReject.SLICES_GAP.at(
        at,
        f"the all-reduce sums contractions over {what}, but no chip holds [{start}, {end}): "
        "the partials' slices must cover the contracted axis, or the sum misses it",
    )


def _weight_key(weight: SSAValue, index: ModuleIndex) -> object:
    """Entry arguments bound to one checkpoint name (as tp-run binds them) are one weight."""
    if isinstance(weight, BlockArgument) and index.entry is not None:
        if _op_of(weight) is index.entry:
            return ("checkpoint", index.name(weight.index))
    return weight


def _call_chains(at: Operation, index: ModuleIndex) -> list[Calls] | None:
    """Every chain of calls from an uncalled function into the function holding ``at``
    (one empty chain when nothing calls it); None beyond _MAX_CONTEXTS."""
    f = at.parent_op()
    while f is not None and not isinstance(f, func.FuncOp):
        f = f.parent_op()
    if f is None:
        return [()]
    callers = index.callers
    chains: list[Calls] = []

    def up(fn: func.FuncOp, suffix: Calls, active: frozenset[func.FuncOp]) -> bool:
        if len(chains) > _MAX_CONTEXTS:
            return False
        if not callers.get(fn):
            chains.append(suffix)
            return True
        for call in callers[fn]:
            caller = call.parent_op()
            while caller is not None and not isinstance(caller, func.FuncOp):
                caller = caller.parent_op()
            if caller is None or caller in active:
                continue  # recursion is refused elsewhere (opaque-call)
            if not up(caller, ((call, fn), *suffix), active | {caller}):
                return False
        return True

    return chains if up(f, (), frozenset({f})) and len(chains) <= _MAX_CONTEXTS else None
