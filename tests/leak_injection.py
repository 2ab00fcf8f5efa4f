"""Leak injection: mutations that break the shard obligation, applied to any tp module.

Each mutator changes a module in place at a place chosen by a ``random.Random`` and returns a
one-line description of what it broke, or None when the module offers no place for it. Every
mutation keeps the IR well typed (the op verifiers still pass, so it is tp-verify that must
see the leak) and makes the program unsound in one of the ways the certificate promises to
exclude:

* ``swap-partial`` — an all-reduce or fold sums another chip's value in place of a partial
  (in a fold, in chip order or a ring's rotation of it, that chip is then added twice);
* ``break-fold`` (in `FOLD_MUTATORS`, with ``swap-partial``: for modules holding folds) — a
  valid fold (in chip order, or a ring's cyclic rotation of it) with two partials swapped
  into an order no rotation has (N >= 3), a partial sum read by one more op (where it is
  computed, or on the chip a ring copies it to), or spine data in place of a partial;
* ``drop-partial`` — a fold skips one chip's partial; an all-reduce over contractions of a
  weight's slices on two or more chips gets one chip's partial replaced by an empty tensor
  (its slice is not summed);
* ``chip-scalar`` — a scalar read out of a chip's tensor is written into a spine tensor
  (splat, fill, insert), which then flows on;
* ``capture`` — a region computing a spine value reads a chip's tensor captured from above
  (a ``linalg.generic`` body, or an ``scf.execute_region``);
* ``wrap-if`` / ``wrap-for`` — the chip-scalar leak inside ``scf.if`` / ``scf.for``, or a chip
  scalar used as the condition / loop bound of a region yielding spine values;
* ``cast`` — chip data laundered to the spine through ``builtin.unrealized_conversion_cast`` or
  a memref (``bufferization.to_buffer`` / ``to_tensor``);
* ``overlap-slices`` — two chips' slices of a row-split weight made the same;
* ``move-argument`` — a spine argument of the entry function moved onto a chip;
* ``cross-slices`` — two chips' slices of a row-split weight swapped: each side still covers
  the axis, but every chip pairs its activation with another chip's rows;
* ``reorder-ranges`` — a chip's slice of a row-split weight lists its ranges in another
  order (one range split in two and swapped): position by position, the operands differ;
* ``not-a-sum`` — a partial's contraction keeps the max of its products, or ignores its
  accumulator, instead of adding to it;
* ``start-nonzero`` — a partial's contraction starts from a fill of 1 (or, where one is at
  hand, from a spine value) instead of zeros: the all-reduce adds the start once per chip;
* ``maxloc-offset`` / ``maxloc-last`` (in `MAXLOC_MUTATORS`: for modules holding a
  ``tp.maxloc``) — a chip's argmax counts its index from one past its run's start, or keeps
  the last maximum (``cmpf oge``) instead of the first.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xdsl.dialects import arith, bufferization, func, scf, tensor
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    UnrealizedConversionCastOp,
    i1,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove, IsTerminator, SymbolTable

from tp_dialect.analysis.certify.coverage import claim_of, contracted_slices
from tp_dialect.analysis.certify.folds import Fold, find_folds
from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.attrs import SliceAttr, chip_of, on_chip
from tp_dialect.grid import stated_chips
from tp_dialect.linalg_kinds import argmax
from tp_dialect.ops import AllReduceOp, ShardOp, UnshardOp
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.signature import entry_function

Mutator = Callable[[ModuleOp, random.Random], str | None]


# -- where values are visible --------------------------------------------------------------


def _is_f32_tensor(v: SSAValue) -> bool:
    t = v.type
    return (
        isinstance(t, TensorType)
        and isinstance(t.element_type, Float32Type)
        and all(d > 0 for d in t.get_shape())
    )


def visible_at(anchor: Operation) -> list[SSAValue]:
    """Values an op inserted right after ``anchor`` may read: results of earlier ops of its
    block (and ``anchor``'s own), block arguments, and the same in enclosing blocks, up to
    an op isolated from above (a function, a chip program)."""
    out: list[SSAValue] = []
    op: Operation | None = anchor
    while op is not None:
        block = op.parent_block()
        if block is None:
            break
        out.extend(block.args)
        for earlier in block.ops:
            out.extend(earlier.results)
            if earlier is op:
                break
        parent = block.parent_op()
        if parent is None or parent.has_trait(IsolatedFromAbove):
            break
        op = parent
    return out


def _statement_sites(module: ModuleOp) -> list[tuple[Operation, SSAValue]]:
    """(op, its spine f32 tensor result) for ops a leak can follow: not terminators, not in a
    linalg body, not host stores; only those with a chip tensor visible to them."""
    sites = []
    for op in module.walk():
        parent = op.parent_op()
        if op.has_trait(IsTerminator) or isinstance(parent, linalg.LinalgStructuredOperation):
            continue
        if isinstance(op, UnshardOp | func.FuncOp | ModuleOp):
            continue
        for r in op.results:
            if _is_f32_tensor(r) and chip_of(r.type) is None:
                sites.append((op, r))
                break
    return sites


def _chip_values(anchor: Operation, chip: int | None = None) -> list[SSAValue]:
    return [
        v
        for v in visible_at(anchor)
        if _is_f32_tensor(v)
        and chip_of(v.type) is not None
        and (chip is None or chip_of(v.type) == chip)
    ]


@dataclass(frozen=True)
class Site:
    """Where a leak goes: right after ``anchor``, into its spine result ``spine`` (whose later
    readers then read the leak), with ``chip`` a chip tensor visible there."""

    anchor: Operation
    spine: SSAValue
    chip: SSAValue

    def splice(self, ops: list[Operation], replacement: SSAValue) -> None:
        """Insert ``ops`` after the anchor; later readers of the spine value read
        ``replacement`` (computed by ``ops``) instead."""
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_ops_after(ops, self.anchor)
        mine = {inner for op in ops for inner in op.walk()}
        self.spine.replace_uses_with_if(replacement, lambda use: use.operation not in mine)


def _site(module: ModuleOp, rng: random.Random) -> Site | None:
    """A spine value to leak into and a chip tensor visible there."""
    sites = [(op, r) for op, r in _statement_sites(module) if _chip_values(op)]
    if not sites:
        return None
    op, r = rng.choice(sites)
    return Site(op, r, rng.choice(_chip_values(op)))


def _index(value: int = 0) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def _scalar_of(v: SSAValue) -> tuple[list[Operation], SSAValue]:
    """Ops reading the first element of tensor ``v``, and that scalar."""
    assert isinstance(v.type, TensorType)
    c0 = _index()
    ext = tensor.ExtractOp(v, [c0.result] * len(v.type.get_shape()), v.type.element_type)
    return [c0, ext], ext.result


def _into_spine(s: SSAValue, r: SSAValue, rng: random.Random) -> tuple[list[Operation], SSAValue]:
    """Ops writing scalar ``s`` into spine tensor ``r``'s shape and adding it to ``r``."""
    assert isinstance(r.type, TensorType)
    form = rng.choice(["splat", "fill", "insert"])
    if form == "insert":
        c0 = _index()
        ins = tensor.InsertOp(s, r, [c0.result] * len(r.type.get_shape()))
        return [c0, ins], ins.result
    if form == "splat":
        spread: Operation = tensor.SplatOp(s, [], r.type)
    else:
        spread = linalg.FillOp([s], [r], [r.type])
    add = arith.AddfOp(r, spread.results[0])
    return [spread, add], add.result


# -- the mutators --------------------------------------------------------------------------


def chip_scalar(module: ModuleOp, rng: random.Random) -> str | None:
    if (site := _site(module, rng)) is None:
        return None
    r, v = site.spine, site.chip
    read, s = _scalar_of(v)
    write, r2 = _into_spine(s, r, rng)
    site.splice(read + write, r2)
    return f"a scalar of chip {chip_of(v.type)}'s %{v.name_hint} written into spine %{r.name_hint}"


def capture(module: ModuleOp, rng: random.Random) -> str | None:
    generics = [
        g
        for g in module.walk()
        if isinstance(g, linalg.GenericOp)
        and g.res
        and chip_of(g.res[0].type) is None
        and isinstance(g.body.block.last_op, linalg.YieldOp)
        and isinstance(g.body.block.last_op.operands[0].type, Float32Type)
        and _chip_values(g)
    ]
    if generics and rng.random() < 0.6:
        g = rng.choice(generics)
        v = rng.choice(_chip_values(g))
        yield_op = g.body.block.last_op
        assert yield_op is not None
        read, s = _scalar_of(v)
        add = arith.AddfOp(yield_op.operands[0], s)
        g.body.block.insert_ops_before([*read, add], yield_op)
        yield_op.operands = [add.result, *yield_op.operands[1:]]
        return f"linalg.generic body captures chip {chip_of(v.type)}'s %{v.name_hint}"
    if (site := _site(module, rng)) is None:
        return None
    r, v = site.spine, site.chip
    read, s = _scalar_of(v)
    write, r2 = _into_spine(s, r, rng)
    region = scf.ExecuteRegionOp([r.type], Region(Block([*read, *write, scf.YieldOp(r2)])))
    site.splice([region], region.results[0])
    return f"scf.execute_region captures chip {chip_of(v.type)}'s %{v.name_hint}"


def wrap_if(module: ModuleOp, rng: random.Random) -> str | None:
    if (site := _site(module, rng)) is None:
        return None
    r, v = site.spine, site.chip
    read, s = _scalar_of(v)
    if rng.random() < 0.5:  # the leak inside the branch of a spine condition
        cond = arith.ConstantOp(IntegerAttr(1, i1))
        write, r2 = _into_spine(s, r, rng)
        then = [*write, scf.YieldOp(r2)]
        pre = [*read, cond]
        what = "inside scf.if"
    else:  # a chip condition choosing between spine values
        cond = arith.CmpfOp(s, s, "oeq")
        then = [scf.YieldOp(r)]
        pre = [*read, cond]
        what = "as the condition of scf.if"
    if_op = scf.IfOp(cond, [r.type], then, [scf.YieldOp(r)])
    site.splice([*pre, if_op], if_op.results[0])
    return f"chip {chip_of(v.type)}'s scalar {what}"


def wrap_for(module: ModuleOp, rng: random.Random) -> str | None:
    if (site := _site(module, rng)) is None:
        return None
    r, v = site.spine, site.chip
    read, s = _scalar_of(v)
    c0, c1 = _index(0), _index(1)
    pre: list[Operation] = [*read, c0, c1]
    body = Block(arg_types=[IndexType(), r.type])
    acc = body.args[1]
    if rng.random() < 0.5:  # the leak inside the loop body
        write, r2 = _into_spine(s, acc, rng)
        body.add_ops([*write, scf.YieldOp(r2)])
        ub: SSAValue = c1.result
        what = "inside scf.for"
    else:  # a chip scalar as the loop bound
        as_int = arith.FPToSIOp(s, i64)
        bound = arith.IndexCastOp(as_int.result, IndexType())
        pre += [as_int, bound]
        ub = bound.result
        body.add_ops([scf.YieldOp(acc)])
        what = "as the bound of scf.for"
    loop = scf.ForOp(c0.result, ub, c1.result, [r], body)
    site.splice([*pre, loop], loop.results[0])
    return f"chip {chip_of(v.type)}'s scalar {what}"


def cast(module: ModuleOp, rng: random.Random) -> str | None:
    if (site := _site(module, rng)) is None:
        return None
    r, v = site.spine, site.chip
    assert isinstance(v.type, TensorType)
    spine_t = on_chip(v.type, None)
    if rng.random() < 0.5:
        laundered: list[Operation] = [UnrealizedConversionCastOp.get([v], [spine_t])]
        how = "builtin.unrealized_conversion_cast"
    else:
        mem = bufferization.ToBufferOp.build(
            operands=[v], result_types=[MemRefType(v.type.element_type, v.type.get_shape())]
        )
        laundered = [mem, bufferization.ToTensorOp(mem.results[0], restrict=True)]
        how = "a memref"
    clean = laundered[-1].results[0]
    read, s = _scalar_of(clean)
    write, r2 = _into_spine(s, r, rng)
    ops = [*laundered, *read, *write]
    site.splice(ops, r2)
    return f"chip {chip_of(v.type)}'s %{v.name_hint} laundered through {how}"


def _collectives(module: ModuleOp) -> Iterator[tuple[Operation, list[SSAValue]]]:
    n = stated_chips(module) or 1
    for op in module.walk():
        if isinstance(op, AllReduceOp):
            yield op, list(op.partials)
    for fold in find_folds(module):
        if fold.is_allreduce(n):
            yield fold.ops[-1], list(fold.partials)


def swap_partial(module: ModuleOp, rng: random.Random) -> str | None:
    options = []
    for op, partials in _collectives(module):
        for c, p in enumerate(partials):
            # Another chip than partial c's own (a ring's fold adds chip c+r at place c).
            others = [
                v
                for v in _chip_values(op)
                if chip_of(v.type) != chip_of(p.type) and v.type.get_shape() == p.type.get_shape()
            ]  # type: ignore[attr-defined]
            if others:
                options.append((op, c, p, others))
    if not options:
        return None
    op, c, p, others = rng.choice(options)
    w = rng.choice(others)
    if isinstance(op, AllReduceOp):
        # Keep the all-reduce well typed: the other chip's value cast to partial c's type.
        conv = UnrealizedConversionCastOp.get([w], [p.type])
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(conv, op)
        op.operands = [conv.results[0] if i == c else x for i, x in enumerate(op.operands)]
    else:
        fold = next(f for f in find_folds(module) if f.ops[-1] is op)
        holder = fold.ops[0] if c == 0 else fold.ops[c - 1]
        index = 0 if c == 0 else 1
        holder.operands = [w if i == index else x for i, x in enumerate(holder.operands)]
    return f"partial #{c} replaced by chip {chip_of(w.type)}'s %{w.name_hint}"


def _partial_slot(fold: Fold, k: int) -> tuple[Operation, int]:
    """The add reading partial ``k`` of ``fold`` and the operand it reads it as."""
    return (fold.ops[0], 0) if k == 0 else (fold.ops[k - 1], 1)


def break_fold(module: ModuleOp, rng: random.Random) -> str | None:
    n = stated_chips(module) or 1
    folds = [f for f in find_folds(module) if f.is_allreduce(n)]
    options: list[tuple[str, Fold, int, int]] = []
    seen: dict[Operation, set[SSAValue]] = {}

    def visible(value: SSAValue, op: Operation) -> bool:
        if op not in seen:
            seen[op] = set(visible_at(op))
        return value in seen[op]

    for fold in folds:
        slots = [_partial_slot(fold, k) for k in range(len(fold.partials))]
        for i in range(len(fold.partials)) if n >= 3 else ():
            for j in range(i + 1, len(fold.partials)):
                a, b = slots[i][0], slots[j][0]
                if visible(fold.partials[j], a) and visible(fold.partials[i], b):
                    options.append(("permute", fold, i, j))
        for k in range(len(fold.ops) - 1):  # each partial sum, and its reader's copy
            options += [("escape", fold, k, 0), ("escape", fold, k, 1)]
        for k in range(1, len(fold.partials)):
            options.append(("spine", fold, k, 0))
    if not options:
        return None
    kind, fold, i, j = rng.choice(options)
    if kind == "permute":
        (a, ai), (b, bi) = _partial_slot(fold, i), _partial_slot(fold, j)
        pa, pb = fold.partials[i], fold.partials[j]
        a.operands = [pb if x == ai else v for x, v in enumerate(a.operands)]
        b.operands = [pa if x == bi else v for x, v in enumerate(b.operands)]
        chips = [chip_of(p.type) for p in fold.partials]
        chips[i], chips[j] = chips[j], chips[i]
        return f"fold's partials #{i} and #{j} swapped: chips {chips}, no rotation"
    if kind == "escape":
        # Read the partial sum where it is computed (j = 0), or where the next add reads it
        # (j = 1): on the chip a ring sent it to, as that chip's received copy.
        at = fold.ops[i + j]
        value = at.results[0] if j == 0 else at.operands[0]
        reader = arith.MulfOp(value, value)
        block = at.parent_block()
        assert block is not None
        block.insert_op_after(reader, at)
        where = "where it is computed" if j == 0 else "beside the next add"
        return f"fold's partial sum #{i} (%{value.name_hint}) also read {where}"
    add, slot = _partial_slot(fold, i)
    p = fold.partials[i]
    spine = [
        v
        for v in visible_at(add)
        if _is_f32_tensor(v)
        and chip_of(v.type) is None
        and v.type.get_shape() == p.type.get_shape()  # type: ignore[attr-defined]
    ]
    if not spine:
        return None
    w = rng.choice(spine)
    add.operands = [w if x == slot else v for x, v in enumerate(add.operands)]
    return f"fold adds spine %{w.name_hint} in place of partial #{i}"


def _contracted_shards(module: ModuleOp) -> list[tuple[Operation, int, ShardOp, SSAValue]]:
    """(collective, chip c, a tp.shard that partial c's contraction reads on its cut axis,
    the weight it is cut from)."""
    solver = Provenance(module).top
    return [
        (op, c, cut.shard, cut.weight)
        for op, partials in _collectives(module)
        for c, p in enumerate(partials)
        for cut in contracted_slices(p, solver, op, c)
        if cut.axis == cut.shard.slice.axis_index
    ]


def drop_partial(module: ModuleOp, rng: random.Random) -> str | None:
    n = stated_chips(module) or 1
    folds = [f for f in find_folds(module) if f.is_allreduce(n) and len(f.ops) >= 2]
    # Coverage is judged against the other partials' slices of the weight: with one chip
    # there is no other, and an all-reduce of anything over every chip leaks nothing.
    contracted = [
        (op, c)
        for op, c, _, _ in _contracted_shards(module)
        if isinstance(op, AllReduceOp) and len(op.operands) > 1
    ]
    if not folds and not contracted:
        return None
    if folds and (not contracted or rng.random() < 0.5):
        fold = rng.choice(folds)
        k = rng.randrange(1, len(fold.ops))  # an add whose left operand is a partial sum
        add = fold.ops[k]
        skipped = chip_of(fold.partials[k + 1].type)
        add.results[0].replace_all_uses_with(add.operands[0])
        add.detach()
        add.erase()
        return f"fold skips chip {skipped}'s partial"
    op, c = rng.choice(contracted)
    p = op.operands[c]
    empty = tensor.EmptyOp([], p.type)
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(empty, op)
    op.operands = [empty.results[0] if i == c else x for i, x in enumerate(op.operands)]
    return f"all-reduce sums an empty tensor in place of chip {c}'s contraction"


def overlap_slices(module: ModuleOp, rng: random.Random) -> str | None:
    found = _contracted_shards(module)
    pairs = [
        (a, b)
        for _, ca, a, wa in found
        for _, cb, b, wb in found
        if ca != cb and wa is wb and a.slice.shape == b.slice.shape and a.slice != b.slice
    ]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    a.slice = b.slice
    return f"chip {a.chip}'s slice made chip {b.chip}'s {b.slice.ranges}"


def _read_by_the_spine(value: SSAValue, prov: Provenance) -> bool:
    """Whether an op computing a spine value reads ``value`` (into chip programs and callees
    too): an argument read only by one chip's work, moved onto that chip, leaks nothing."""
    for use in value.uses:
        user = use.operation
        if isinstance(user, ChipProgramOp):
            if _read_by_the_spine(user.body.block.args[use.index], prov):
                return True
        elif isinstance(user, func.CallOp):
            callee = SymbolTable.lookup_symbol(user, user.callee)
            if not isinstance(callee, func.FuncOp) or not callee.body.blocks:
                return True
            if _read_by_the_spine(callee.body.block.args[use.index], prov):
                return True
        elif any(prov.placement(r).spine for r in user.results):
            return True
    return False


def move_argument(module: ModuleOp, rng: random.Random) -> str | None:
    n = stated_chips(module) or 1
    f = entry_function(module)
    prov = Provenance(module)
    args = [
        a
        for a in f.body.block.args
        if _is_f32_tensor(a) and chip_of(a.type) is None and _read_by_the_spine(a, prov)
    ]
    if not args:
        return None
    arg: BlockArgument = rng.choice(args)
    chip = rng.randrange(n)
    assert isinstance(arg.type, TensorType)
    Rewriter.replace_value_with_new_type(arg, on_chip(arg.type, chip))
    inputs = [a.type for a in f.body.block.args]
    f.function_type = FunctionType.from_lists(inputs, list(f.function_type.outputs.data))
    return f"argument %{arg.name_hint} moved onto chip {chip}"


def cross_slices(module: ModuleOp, rng: random.Random) -> str | None:
    found = _contracted_shards(module)
    pairs = [
        (a, b)
        for op_a, ca, a, wa in found
        for op_b, cb, b, wb in found
        if op_a is op_b
        and ca < cb
        and wa is wb
        and a.slice.shape == b.slice.shape
        and a.slice != b.slice
    ]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    a.slice, b.slice = b.slice, a.slice
    return f"chips {chip_of(a.result.type)} and {chip_of(b.result.type)} swap their slices"


def reorder_ranges(module: ModuleOp, rng: random.Random) -> str | None:
    shards = [shard for _, _, shard, _ in _contracted_shards(module)]
    if not shards:
        return None
    shard = rng.choice(shards)
    ranges = list(shard.slice.ranges)
    if len(ranges) >= 2:
        k = rng.randrange(1, len(ranges))
        ranges = ranges[k:] + ranges[:k]
    else:
        (start, length) = ranges[0]
        if length < 2:
            return None
        half = length // 2
        ranges = [(start + half, length - half), (start, half)]
    sl = shard.slice
    shard.slice = SliceAttr(sl.axis_index, ranges, sl.full_shape)
    return f"%{shard.result.name_hint}'s ranges listed as {ranges}"


def _partial_reductions(module: ModuleOp) -> list[tuple[int, Operation]]:
    """(chip, the reduction computing its partial) for every partial summed over slices."""
    solver = Provenance(module).top
    found: list[tuple[int, Operation]] = []
    for op, partials in _collectives(module):
        for c, p in enumerate(partials):
            made = claim_of(p, solver, op, c)
            if made is not None and made.shards:
                found.append((c, made.op))
    return found


def not_a_sum(module: ModuleOp, rng: random.Random) -> str | None:
    found = [(c, op) for c, op in _partial_reductions(module) if isinstance(op, linalg.GenericOp)]
    if not found:
        return None
    c, op = rng.choice(found)
    block = op.body.block
    add = block.last_op.operands[0].owner  # type: ignore[union-attr]
    assert isinstance(add, arith.AddfOp)
    if rng.random() < 0.5:
        Rewriter.replace_op(add, arith.MaximumfOp(add.lhs, add.rhs))
        return f"chip {c}'s partial keeps the max of its terms"
    acc = block.args[len(op.inputs)]
    term = add.rhs if add.lhs is acc else add.lhs
    add.results[0].replace_all_uses_with(term)
    add.detach()
    add.erase()
    return f"chip {c}'s partial ignores its accumulator"


def start_nonzero(module: ModuleOp, rng: random.Random) -> str | None:
    found = [(c, op) for c, op in _partial_reductions(module) if isinstance(op, linalg.GenericOp)]
    if not found:
        return None
    c, op = rng.choice(found)
    init = op.outputs[0]
    one = arith.ConstantOp(FloatAttr(1.0, Float32Type()))
    fill = linalg.FillOp((one.result,), (init,), (init.type,))
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before([one, fill], op)
    op.operands = [fill.results[0] if v is init else v for v in op.operands]
    return f"chip {c}'s partial starts from a fill of 1"


MUTATORS: dict[str, Mutator] = {
    "swap-partial": swap_partial,
    "drop-partial": drop_partial,
    "chip-scalar": chip_scalar,
    "capture": capture,
    "wrap-if": wrap_if,
    "wrap-for": wrap_for,
    "cast": cast,
    "overlap-slices": overlap_slices,
    "move-argument": move_argument,
    "cross-slices": cross_slices,
    "reorder-ranges": reorder_ranges,
    "not-a-sum": not_a_sum,
    "start-nonzero": start_nonzero,
}

COVERAGE_KINDS = frozenset({"cross-slices", "reorder-ranges", "not-a-sum", "start-nonzero"})
"""Mutators that need an all-reduce over contractions of weight slices."""


def _argmaxes(module: ModuleOp) -> list[linalg.GenericOp]:
    """The module's argmax generics with a constant index offset, in walk order."""
    return [
        op
        for op in module.walk()
        if isinstance(op, linalg.GenericOp) and (form := argmax(op)) and form.offset is not None
    ]


def maxloc_offset(module: ModuleOp, rng: random.Random) -> str | None:
    found = [
        (op, add)
        for op in _argmaxes(module)
        for add in op.body.walk()
        if isinstance(add, arith.AddiOp) and isinstance(add.rhs.owner, arith.ConstantOp)
    ]
    if not found:
        return None
    op, add = rng.choice(found)
    start = argmax(op).offset  # type: ignore[union-attr]
    const = arith.ConstantOp(IntegerAttr(start + 1, add.result.type))  # type: ignore[operator]
    Rewriter.replace_op(add.rhs.owner, const)  # type: ignore[arg-type]
    return f"an argmax counts its index from {start + 1}, its run starting at {start}"


def maxloc_last(module: ModuleOp, rng: random.Random) -> str | None:
    found = [c for op in _argmaxes(module) for c in op.body.walk() if isinstance(c, arith.CmpfOp)]
    if not found:
        return None
    cmp = rng.choice(found)
    Rewriter.replace_op(cmp, arith.CmpfOp(cmp.lhs, cmp.rhs, "oge"))
    return "an argmax keeps the last maximum (oge)"


MAXLOC_MUTATORS: dict[str, Mutator] = {"maxloc-offset": maxloc_offset, "maxloc-last": maxloc_last}
"""What breaks a maxloc's pairs (for modules that hold one: the generated decoders hold none)."""

FOLD_MUTATORS: dict[str, Mutator] = {"break-fold": break_fold, "swap-partial": swap_partial}
"""What breaks a fold of adds (a ring's rotated ones included): for modules that hold one
(`MUTATORS` draws from every generated program, most of which hold none)."""
