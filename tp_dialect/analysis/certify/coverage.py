"""Sums over slices that cover: an all-reduce of partial sums over parts of one axis.

Megatron's row-parallel projection sums, over chips, a contraction of each chip's activation
with its slice of the weight cut along the contracted axis. `check_coverage` holds every
all-reduce (and every valid fold) whose partials are reductions to this rule:

**Claim.** Let ``S = Σ_c p_c`` be the all-reduce, and let some ``p_c`` be computed (through
what hands data on unchanged, and a static window every chip takes alike) by a reduction
``R_c``. Certification requires, for every chip ``c``:

1. ``R_c`` is a *partial sum*: one output, a body ``yield acc + t`` with ``t`` independent of
   ``acc`` (`linalg_kinds.sums_each_point`; a contraction's ``t`` is a product), so
   ``R_c[o] = init_c[o] + Σ_{r ∈ D_c} t_c(o, r)`` over its reduced points ``D_c``;
2. ``init_c`` is zero by construction (`linalg_kinds.is_zeros`), or the all-reduce would add
   it once per chip;
3. every operand axis read by a reduced loop ``r`` reads it by the loop index alone (or
   through an expression of loops over an axis that is not cut: a convolution's window), and
   the positions those axes hold (`analysis.positions`) *correspond*: each is one sequence of
   positions ``P_c(r)``, shifted by a constant — so at local point ``j`` every operand holds
   the element of position ``P_c(r)(j)`` (position by position, through multi-range slices);
   a body reading ``linalg.index r`` reads the loop itself;
4. the shifts, the sizes of the reduced loops and the positions each partial holds of the
   result are the same on every chip (every chip pairs its operands alike and adds into the
   same elements);

and across chips:

5. at most one reduced loop ``r*`` is cut (holds less than its whole axis, on some chip); the
   sequences ``P_c(r*)`` are disjoint and cover the axis (``slices-overlap``,
   ``slices-gap``) — with none cut and N > 1 every chip sums everything (an overlap);
6. for every operand that is a ``tp.shard`` of an entry argument read by a reduced loop along
   its cut, the slices of that checkpoint tensor are disjoint and cover (the rule before
   positions, kept: it names the weight).

Then ``S[o] = Σ_c Σ_{j} t(operands at P_c(r*)(j)) = Σ_{r ∈ axis} t(…, r, …)``: each position of
the summed axis is added exactly once, from operands holding that position, into a sum that
starts from zero. Every partial must be such a sum when one is (a chip whose partial is not
would add something else). A partial that is not itself a reduction but derives from one
through what moves or changes data is refused as unprovable; partials that derive from no
reduction make no claim (an elementwise chip value: a vocab-parallel lookup's zeros
elsewhere, say). What the claim does not say: that ``t`` is the unsharded model's term (that is
what ``tp-run --check`` measures).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import BFloat16Type
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.traits import IsTerminator, SymbolTable

from tp_dialect.analysis.certify.gather import check_lookups
from tp_dialect.analysis.certify.positions import (
    UNKNOWN,
    Axis,
    AxisPos,
    Pairs,
    PositionAnalysis,
    Positions,
    correspond,
    loop_readers,
)
from tp_dialect.analysis.certify.provenance import Solver
from tp_dialect.analysis.values import origin
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.errors import TpError
from tp_dialect.linalg_kinds import LoopView, is_zeros, loop_view, sums_each_point
from tp_dialect.names import value_name
from tp_dialect.ops import Collective, ShardOp, UnshardOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import BindError, entry_function, ports

Calls = tuple[tuple[func.CallOp, func.FuncOp], ...]  # outermost first
MAX_CONTEXTS = 64  # call chains into one collective's function; beyond: not provable


class Unproven(TpError):
    """A partial the rule refuses; ``how`` says why, ``reason`` which refusal it is."""

    def __init__(self, chip: int, how: str, reason: TpReject = TpReject.SLICES_GAP) -> None:
        super().__init__(how)
        self.chip = chip
        self.how = how
        self.reason = reason


@dataclass(frozen=True)
class ContractedSlice:
    """A ``tp.shard`` of ``weight`` that a partial's reduction reads along a reduced loop:
    the ranges of the weight's ``axis`` (of ``size``) that the partial covers."""

    shard: ShardOp
    weight: SSAValue
    axis: int
    size: int
    ranges: list[tuple[int, int]]


@dataclass(frozen=True)
class Claim:
    """What chip ``chip``'s partial sums: its reduction ``op``, the positions each reduced
    loop holds (in loop order), each reader's (full axis, shift) per reduced loop, the
    positions the partial holds of the result, and the shards it reads along a cut."""

    chip: int
    op: Operation
    loops: tuple[Axis, ...]
    pairing: tuple[tuple[tuple[int, int, Pairs], ...], ...]
    out: Positions
    shards: tuple[ContractedSlice, ...]
    names: tuple[str, ...]  # per reduced loop: the value whose positions name it


class Tracer:
    """Follows values back through what hands data on unchanged, within call chains."""

    def __init__(self, sends: dict[str, SSAValue]) -> None:
        self.sends = sends
        self.positions = PositionAnalysis(self._exact)
        self._found: dict[tuple[SSAValue, Calls], tuple[SSAValue, Calls]] = {}

    def _exact(self, value: SSAValue, calls: object) -> tuple[SSAValue, object]:
        assert isinstance(calls, tuple)
        return self.exact(value, calls)

    def exact(self, value: SSAValue, calls: Calls) -> tuple[SSAValue, Calls]:
        """The value ``value`` hands on unchanged, and the call chain it is in."""
        key = (value, calls)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._follow(value, calls)
        return found

    def _follow(self, value: SSAValue, calls: Calls) -> tuple[SSAValue, Calls]:
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
        a reduction, an all-reduce or a host input), from an op ``wanted`` holds for: its
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
                    for u in _data_operands(region_op):
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


def _reduction(op: Operation) -> bool:
    """Any linalg op that reduces over loops (a sum or not)."""
    view = loop_view(op)
    return view is not None and bool(view.reduced)


def _moves(op: Operation) -> bool:
    """Ops through which data flows moved or changed but not summed over chips: everything
    but a reduction, a shard, a collective and a host store."""
    return not isinstance(op, ShardOp | Collective | UnshardOp) and not _reduction(op)


def _data_operands(op: Operation) -> Iterator[SSAValue]:
    yield from op.operands
    for inner in op.walk():
        if inner is not op and inner.has_trait(IsTerminator):
            yield from inner.operands  # what a region op's regions hand out


def _rounding(op: object) -> bool:
    """A precision change that hands on the same reals, rounded, within f32's range: a
    widening, or a narrowing to bf16 (f32's exponents; tp-narrow-wire's). A narrowing to
    f16 or f8 is not one: it overflows to inf where f32 does not."""
    if isinstance(op, arith.ExtFOp):
        return True
    if not isinstance(op, arith.TruncFOp):
        return False
    t = op.result.type
    return isinstance(getattr(t, "element_type", t), BFloat16Type)


def _through_views(value: SSAValue, calls: Calls, tracer: Tracer) -> tuple[SSAValue, Calls]:
    """``value`` seen through static ``tensor.extract_slice``s of it (a two-shot all-reduce's
    reduce-scatter sums one slice of every partial) and through `_rounding` casts (a partial
    carried in bf16): what they slice or round. Which part of the result the partial then
    holds is its positions (the same on every chip: rule 4); the claim is over reals, as f32
    sums in any order already are, so a rounding changes none of it."""
    while True:
        op = value.owner
        if isinstance(op, tensor.ExtractSliceOp) and not (op.offsets or op.sizes or op.strides):
            value, calls = tracer.exact(op.source, calls)
        elif _rounding(op):
            value, calls = tracer.exact(op.operands[0], calls)  # type: ignore[union-attr]
        else:
            return value, calls


def _runs(p: AxisPos) -> str:
    if not isinstance(p, Axis):
        return "positions that cannot be told" if p is UNKNOWN else "no positions"
    held = " + ".join(f"[{s}, {s + n})" for s, n in p.runs) or "nothing"
    return f"{held} of {p.full}"


def claim(partial: SSAValue, tracer: Tracer, chip: int, calls: Calls = ()) -> Claim | None:
    """What chip ``chip``'s ``partial`` sums (rules 1–3 of the module docstring), None when it
    derives from no reduction; raises Unproven when it breaks a rule."""
    value, calls = tracer.exact(partial, calls)
    out = tracer.positions.of(value, calls)
    base, calls = _through_views(value, calls, tracer)
    op = base.owner
    view = loop_view(op) if isinstance(op, Operation) else None
    if view is None or not view.reduced:
        if (via := tracer.reaches(base, calls, _reduction)) is not None:
            raise Unproven(
                chip,
                f"%{value_name(partial)}, which derives from a reduction through {via}: which "
                "part of the summed axis it sums cannot be proven",
            )
        return None
    assert isinstance(op, Operation)
    name = value_name(base)
    if not sums_each_point(view):
        raise Unproven(
            chip,
            f"%{name} = '{op.name}', whose body does not add one term per point to its "
            "accumulator (a max, a product, an overwrite): the sum over chips of such "
            "reductions is not the reduction over the whole axis",
            TpReject.NOT_PARTIAL_SUM,
        )
    init = op.operands[view.n_inputs]
    if not is_zeros(tracer.exact(init, calls)[0]):
        raise Unproven(
            chip,
            f"%{name}, whose accumulator starts from %{value_name(init)}, not from zeros: "
            "the all-reduce would add that start once per chip",
            TpReject.NOT_PARTIAL_SUM,
        )
    operands = list(op.operands)
    readers = loop_readers(view, operands, lambda v: tracer.positions.of(v, calls))
    loops: list[Axis] = []
    pairing: list[tuple[tuple[int, int, Pairs], ...]] = []
    names: list[str] = []
    for d in sorted(view.reduced):
        found = readers[d]
        held, shifts = correspond([p for _, _, p in found], follow_cut=False)
        if held is UNKNOWN:
            raise _unaligned(chip, name, d, found, operands)
        loops.append(held if isinstance(held, Axis) else Axis.whole(view.extents[d]))
        pairing.append(
            tuple(
                (p.full, k if k is not None else 0, p.pairs)
                for (_, _, p), k in zip(found, shifts, strict=True)
                if isinstance(p, Axis)
            )
        )
        names.append(_namer(found, held, operands) or name)
    return Claim(
        chip,
        op,
        tuple(loops),
        tuple(pairing),
        out,
        tuple(_shards(op, view, tracer, calls, chip)),
        tuple(names),
    )


def _namer(
    found: list[tuple[int, int, AxisPos]], held: AxisPos, operands: Sequence[SSAValue]
) -> str | None:
    for i, _, p in found:
        if p == held and 0 <= i < len(operands):
            return value_name(operands[i])
    return None


def _unaligned(
    chip: int,
    name: str,
    loop: int,
    found: list[tuple[int, int, AxisPos]],
    operands: Sequence[SSAValue],
) -> Unproven:
    def what(i: int) -> str:
        return f"%{value_name(operands[i])}" if 0 <= i < len(operands) else "linalg.index"

    for i, axis, p in found:
        if p is UNKNOWN:
            return Unproven(
                chip,
                f"%{name}, which reads axis {axis} of {what(i)} along its summed loop d{loop}: "
                "which positions of the summed axis that holds cannot be proven",
            )
    known = [(i, p) for i, _, p in found if isinstance(p, Axis)]
    i, p = min(known, key=lambda ip: ip[1].full)
    j, q = next((j, q) for j, q in known if q.shift_from(p) is None)
    return Unproven(
        chip,
        f"%{name}, which reads {what(i)} holding {_runs(p)} and {what(j)} holding {_runs(q)} "
        f"along its summed loop d{loop}: the operands of a contraction must hold the same "
        "positions of the summed axis, element by element",
        TpReject.SLICES_MISALIGNED,
    )


def _shards(
    op: Operation, view: LoopView, tracer: Tracer, calls: Calls, chip: int
) -> Iterator[ContractedSlice]:
    """The shards of entry-function arguments that ``op`` reads directly along the cut of
    one of its reduced loops (rule 6)."""
    for operand, amap in zip(op.operands[: view.n_inputs], view.maps, strict=False):
        v, vcalls = tracer.exact(operand, calls)
        shard = v.owner
        if not isinstance(shard, ShardOp):
            continue
        weight, _ = tracer.exact(shard.source, vcalls)
        if not (isinstance(weight, BlockArgument) and isinstance(_op_of(weight), func.FuncOp)):
            continue  # a slice of a computed value: its positions hold it to the rule
        sl = shard.slice
        expr = amap.results[sl.axis_index] if sl.axis_index < len(amap.results) else None
        if isinstance(expr, AffineDimExpr) and expr.position in view.reduced:
            size = sl.full_shape[sl.axis_index]
            yield ContractedSlice(shard, weight, sl.axis_index, size, list(sl.ranges))


def claim_of(
    partial: SSAValue, solver: Solver, at: Operation, chip: int, calls: Calls = ()
) -> Claim | None:
    """What chip ``chip``'s ``partial`` of the all-reduce at ``at`` sums (`claim`), traced
    afresh; raises Unproven when the partial breaks a rule."""
    return claim(partial, Tracer(solver.sends_in(at)), chip, calls)


def contracted_slices(
    partial: SSAValue, solver: Solver, at: Operation, chip: int, calls: Calls = ()
) -> Iterator[ContractedSlice]:
    """The slices of weights that the reduction computing ``partial`` (chip ``chip``'s)
    reads along the cut of a reduced loop; raises Unproven when the partial breaks a rule."""
    found = claim_of(partial, solver, at, chip, calls)
    if found is not None:
        yield from found.shards


def _op_of(value: BlockArgument) -> Operation | None:
    return value.owner.parent_op()


class ModuleIndex:
    """What coverage asks of the whole module, gathered once per check (one walk, not one per
    all-reduce): who calls each function, the checkpoint names of the entry's arguments, and
    one tracer (with its positions) per function, shared by the all-reduces in it."""

    def __init__(self, root: Operation) -> None:
        self.callers: dict[func.FuncOp, list[func.CallOp]] = {}
        for op in root.walk():
            if isinstance(op, func.CallOp):
                callee = SymbolTable.lookup_symbol(op, op.callee)
                if isinstance(callee, func.FuncOp):
                    self.callers.setdefault(callee, []).append(op)
        self.entry: func.FuncOp | None = None
        self._names: list[str] | None = None
        self._tracers: dict[Operation | None, Tracer] = {}
        try:
            self.entry = entry_function(root)  # type: ignore[arg-type]
        except BindError:  # no single entry function: arguments are their own weights
            pass

    def is_entry(self, f: func.FuncOp) -> bool:
        """Whether a host may call ``f``: the entry function tp-run binds (``@decode``, or
        the only one), or a function no call in the module resolves to — but not one taking
        a chip's data (an argument typed ``#tp.chip<c>``), which no host holds: such a
        function runs only where a tp program calls it and is checked there (tp-link-points
        leaves a public callee so once each call names its per-chip copies)."""
        if f is self.entry:
            return True
        return f not in self.callers and all(chip_of(t) is None for t in f.function_type.inputs)

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

    def tracer(self, at: Operation, solver: Solver) -> Tracer:
        """The tracer for all-reduces in the function holding ``at``."""
        scope = _function_of(at)
        if scope not in self._tracers:
            self._tracers[scope] = Tracer(solver.sends_in(at))
        return self._tracers[scope]


def _function_of(op: Operation) -> Operation | None:
    f = op.parent_op()
    while f is not None and not isinstance(f, func.FuncOp):
        f = f.parent_op()
    return f


def check_coverage(
    partials: Sequence[SSAValue], at: Operation, solver: Solver, index: ModuleIndex | None = None
) -> None:
    """Raise a `TpReject` (``slices-overlap``, ``slices-gap``, ``slices-misaligned``,
    ``not-partial-sum``) when the all-reduce at ``at`` sums partials that break the rule of
    the module docstring, in any call chain reaching it. ``index``: the module's
    `ModuleIndex`, when several all-reduces are checked."""
    index = index or ModuleIndex(at.get_toplevel_object())
    contexts = chains_to_check(
        at, index, "the all-reduce", "which slices its partials sum cannot be proven"
    )
    tracer = index.tracer(at, solver)
    for calls in contexts:
        _check(partials, at, tracer, calls, index)


def _check(
    partials: Sequence[SSAValue], at: Operation, tracer: Tracer, calls: Calls, index: ModuleIndex
) -> None:
    claims: list[tuple[int, SSAValue, Claim | None]] = []
    for position, partial in enumerate(partials):
        # A ring fold adds its partials in a rotated order: name each by its own chip.
        owner = chip_of(partial.type)
        chip = position if owner is None else owner
        try:
            claims.append((chip, partial, claim(partial, tracer, chip, calls)))
        except Unproven as why:
            raise why.reason.at(
                at, f"the all-reduce sums chip {why.chip}'s partial {why.how}"
            ) from None
    made = [(c, p, k) for c, p, k in claims if k is not None]
    if not made:
        # no sum over part of an axis: a sum of the chips' lookups in a cut table, or no claim
        check_lookups(partials, at, lambda v: tracer.exact(v, calls)[0])
        return
    for c, p, k in claims:
        if k is None:
            raise TpReject.SLICES_GAP.at(
                at,
                f"the all-reduce sums chip {made[0][0]}'s partial, a sum over part of an axis, "
                f"with chip {c}'s %{value_name(p)}, which is no such sum: which part of the "
                "axis the all-reduce covers cannot be proven",
            )
    sums = [k for _, _, k in made if k is not None]
    _same_loops(at, sums)
    _check_shards(at, sums, index)
    _check_cut(at, sums)
    _same_pairing(at, sums)


def _same_loops(at: Operation, sums: list[Claim]) -> None:
    """Every chip sums over reduced loops of the same sizes (so rule 5 compares like with
    like)."""
    first = sums[0]
    for other in sums[1:]:
        if [a.full for a in other.loops] != [a.full for a in first.loops]:
            raise TpReject.SLICES_GAP.at(
                at,
                f"the all-reduce sums chip {first.chip}'s and chip {other.chip}'s partials, "
                "which sum over differently shaped axes: which part of the summed axis each "
                "covers cannot be proven",
            )


def _same_pairing(at: Operation, sums: list[Claim]) -> None:
    """Rule 4: every chip pairs its operands alike (the same shifts) and adds into the same
    positions of the result."""
    first = sums[0]
    for other in sums[1:]:
        if other.pairing != first.pairing and _shifts(other) == _shifts(first):
            raise TpReject.SLICES_MISALIGNED.at(
                at,
                f"the all-reduce sums chip {first.chip}'s and chip {other.chip}'s partials, "
                "whose operands derive from parts paired differently on the way (chip "
                f"{first.chip} shifts {_upstream(first)}, chip {other.chip} "
                f"{_upstream(other)}): every chip must pair its parts alike",
            )
        if other.pairing != first.pairing:
            raise TpReject.SLICES_MISALIGNED.at(
                at,
                f"the all-reduce sums chip {first.chip}'s and chip {other.chip}'s partials, "
                "whose operands pair different positions of the summed axis (chip "
                f"{first.chip} pairs {_pairs(first)}, chip {other.chip} {_pairs(other)}): "
                "every chip must pair its operands alike",
            )
        if other.out != first.out:
            axis = next(
                (a for a, (x, y) in enumerate(zip(first.out, other.out, strict=False)) if x != y),
                0,
            )
            theirs = other.out[axis] if axis < len(other.out) else UNKNOWN
            raise TpReject.SLICES_MISALIGNED.at(
                at,
                f"the all-reduce sums partials holding different parts of its result: along "
                f"axis {axis}, chip {first.chip}'s holds {_runs(first.out[axis])} and chip "
                f"{other.chip}'s {_runs(theirs)}: every chip must add into the same elements",
            )


def _shifts(k: Claim) -> tuple[tuple[tuple[int, int], ...], ...]:
    return tuple(tuple((full, shift) for full, shift, _ in loop) for loop in k.pairing)


def _pairs(k: Claim) -> str:
    """How a claim pairs its operands along its reduced loops: each operand's shift."""
    return "; ".join(", ".join(f"{s:+d}" for _, s, _ in loop) for loop in k.pairing) or "nothing"


def _upstream(k: Claim) -> str:
    """How the parts of a claim's operands were paired before it: each part's shift."""
    found = sorted({pair for loop in k.pairing for *_, pairs in loop for pair in pairs})
    return ", ".join(f"{s:+d} of {full}" for full, s in found) or "none"


def _check_shards(at: Operation, sums: list[Claim], index: ModuleIndex) -> None:
    """Rule 6: each checkpoint tensor that every chip reads along the cut, as a slice of
    the argument itself, is covered once (rule 5 holds the rest to their positions)."""
    held: dict[object, set[tuple[int, int, int]]] = {}
    readers: dict[object, set[int]] = {}
    sizes: dict[object, int] = {}
    names: dict[object, str] = {}
    for k in sums:
        for cut in k.shards:
            key = (_weight_key(cut.weight, index), cut.axis)
            sizes[key] = cut.size
            names[key] = f"axis {cut.axis} of %{value_name(cut.weight)}"
            readers.setdefault(key, set()).add(k.chip)
            # A chip reading one slice twice (a sum of squares) holds it once.
            held.setdefault(key, set()).update((s, s + n, k.chip) for s, n in cut.ranges)
    for key, spans in held.items():
        if len(readers[key]) == len(sums):
            _partition(at, names[key], sorted(spans), sizes[key])


def _check_cut(at: Operation, sums: list[Claim]) -> None:
    """Rule 5: one reduced loop cut, its parts disjoint and covering."""
    cut = sorted({d for k in sums for d, axis in enumerate(k.loops) if not axis.is_whole()})
    if len(cut) > 1:
        raise TpReject.SLICES_GAP.at(
            at,
            "the all-reduce sums contractions cut along two summed axes: which parts of "
            "their product each chip sums cannot be proven",
        )
    if not cut:
        if len(sums) > 1 and sums[0].loops:
            raise TpReject.SLICES_OVERLAP.at(
                at,
                f"the all-reduce sums {len(sums)} partials that each sum the whole of their "
                f"summed axis (%{sums[0].names[0]}, {sums[0].loops[0].full} positions): the sum "
                f"counts it {len(sums)} times",
            )
        return
    d = cut[0]
    spans = sorted({(s, s + n, k.chip) for k in sums for s, n in k.loops[d].runs})
    what = f"the summed axis as %{sums[0].names[d]} holds it"
    _partition(at, what, spans, sums[0].loops[d].full)


def _partition(at: Operation, what: str, spans: list[tuple[int, int, int]], size: int) -> None:
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
    if reach < size:
        raise _gap(at, what, reach, size)


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


def chains_to_check(at: Operation, index: ModuleIndex, what: str, unproven: str) -> list[Calls]:
    """`call_chains` of the collective ``at`` (``what``: "the all-reduce"); beyond
    MAX_CONTEXTS, a ``slices-gap`` refusal saying what cannot be proven (``unproven``)."""
    contexts = call_chains(at, index)
    if contexts is None:
        raise TpReject.SLICES_GAP.at(
            at, f"{what} is reached by more than {MAX_CONTEXTS} call chains: {unproven}"
        )
    return contexts


def call_chains(at: Operation, index: ModuleIndex) -> list[Calls] | None:
    """Every chain of calls from a function a host may call (`ModuleIndex.is_entry`) into the
    function holding ``at`` (one empty chain when that is one; none when nothing that runs
    reaches it); None beyond MAX_CONTEXTS."""
    f = _function_of(at)
    if f is None:
        return [()]
    assert isinstance(f, func.FuncOp)
    callers = index.callers
    chains: list[Calls] = []

    def up(fn: func.FuncOp, suffix: Calls, active: frozenset[func.FuncOp]) -> bool:
        if len(chains) > MAX_CONTEXTS:
            return False
        if not callers.get(fn):
            if index.is_entry(fn):
                chains.append(suffix)
            return True
        for call in callers[fn]:
            caller = _function_of(call)
            if caller is None or caller in active:
                continue  # recursion is refused elsewhere (opaque-call)
            assert isinstance(caller, func.FuncOp)
            if not up(caller, ((call, fn), *suffix), active | {caller}):
                return False
        return True

    return chains if up(f, (), frozenset({f})) and len(chains) <= MAX_CONTEXTS else None
