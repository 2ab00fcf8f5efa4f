"""Bounds on a modelled step: what no schedule of the program can beat.

Invariant: every bound reads only the program's data (shards, arguments, results, all-reduces,
contractions) and the machine, the same at every stage of lowering, so a mode's ratio to them
compares schedules, not stages. All-reduces are counted one per sum (`allreduces`): a copy per chip
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
  chain (each layer's output feeds the next layer), so all are counted. On a machine that
  streams weights ahead (``prefetch_weights``: `prefetch`) the HBM moves while the chain waits
  on links, so the bound is the *larger* of the HBM time and the chain's link time, both
  reported; no schedule beats either.

- `compute_bound`: the program's useful FLOPs over the N chips' peak: 2 per multiply-add
  of every contraction of two different operands each chip runs (`cost.matmul_flops`: the
  projections, the MLP, attention over the cache, the LM head; a norm's sum of squares left
  out), summed over the chips — a split contraction's slices add up to the unsharded one's.
  No schedule beats it: every chip computes at most ``peak_flops``.
- The step's bound (`StepBound`) is the larger of the compute bound and the physical bound,
  and names what binds: ``compute-bound`` (a long prefill on few chips), else the physical
  bound's larger part, ``HBM-bound`` (decode) or ``link-bound`` (all-reduce link time).

A gather (an embedding's ``tensor.extract`` of a captured table in a generic's body) reads
the rows it looks up, not the table (`cost.gathered_bytes`).

An outlined program (``@decode`` calling ``@layer``) is bounded as its flat program: a
callee's shards, cache writes and all-reduces count once per call, with that call's data
(`calls.Runs`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.calls.chip_runs import chip_function, tag_of
from tp_dialect.analysis.calls.flat_runs import Frame, HeldKey, Ref, Runs
from tp_dialect.analysis.certify.folds import find_folds
from tp_dialect.analysis.certify.manifest import Collective, one_per_sum, read_manifest
from tp_dialect.analysis.schedule.programs import programs
from tp_dialect.analysis.timing.cost import (
    VIEWS,
    allreduce_link_time,
    gathered_bytes,
    least_allreduce_link_time,
    matmul_flops,
    nbytes,
)
from tp_dialect.analysis.touch import storage
from tp_dialect.analysis.values import (
    callee,
    origin,
    origin_through,
    sent_values,
    visible,
    walk_calls,
)
from tp_dialect.attrs import chip_of
from tp_dialect.grid import stated_chips
from tp_dialect.machine import Machine
from tp_dialect.ops import AllReduceOp, SectionOp, ShardOp, UnshardOp
from tp_dialect.program_ops import chip_group
from tp_dialect.runtime.model.core import chips_of, placed_in
from tp_dialect.runtime.model.memory import Held, holdings, weight_bytes
from tp_dialect.signature import entry_function

DEPENDENCY_NOTE = (
    "every all-reduce of a decode step is on its dependency chain (each layer's output "
    "feeds the next): all are counted"
)


def allreduces(func: FuncOp, runs: Runs | None = None) -> list[int]:
    """The bytes of each all-reduce's tensor, one entry per sum in program order, at any
    stage (module docstring). An outlined program's callee sums once per call
    (``runs``: its `Runs`, if already made), in the flat program's order: the manifest's
    (every ``tp.allreduce`` in program order, then every fold), calls expanded in place."""
    sends = sent_values(func)
    runs = runs or Runs(func)
    if any(f.call is not None and chip_function(f.call) is not None for f in runs.frames):
        return _chip_call_sums(func)
    if runs.flat:
        module = func.parent_op()
        assert isinstance(module, ModuleOp)
        found = [(runs.root, c) for c in read_manifest(module).collectives]
    else:
        found = _per_call(runs)
    sizes: dict[tuple[Ref, ...], int] = {}
    for frame, coll in found:
        roots = [_root(runs, frame, p, sends) for p in coll.partials]
        # One sum however its partials are ordered (a ring's folds are rotations of it).
        key = tuple(sorted(roots, key=lambda r: chip_of(r[1].type) or 0))
        sizes.setdefault(key, nbytes(roots[0][1].type) if roots else nbytes(coll.result.type))
    return list(sizes.values())


def _chip_call_sums(func: FuncOp) -> list[int]:
    """`allreduces` of per-chip programs calling per-chip functions: the sums of the
    programs' own sections, then each call's — a group of per-chip functions (one per chip,
    `chip_group`) computes the same sums at every call, found once among its functions (its
    buffers named as the functions write them) and counted once per call tag."""
    module = func.parent_op()
    assert isinstance(module, ModuleOp)
    n = stated_chips(module) or 1
    found: dict[object, list[Collective]] = {}
    for op in module.walk():
        if isinstance(op, AllReduceOp):
            found.setdefault(_scope(op), []).append(
                Collective(visible(op.result), tuple(op.partials), ((op,),))
            )
    for fold in find_folds(module):
        if fold.is_allreduce(n):
            found.setdefault(_scope(fold.ops[0]), []).append(
                Collective(fold.result, fold.partials, (fold.ops,))
            )
    tags: dict[str, list[str]] = {}
    for program in programs(func):
        for op in program.body.block.ops:
            if (f := chip_function(op)) is not None and (g := chip_group(f)) is not None:
                if tag_of(op) not in tags.setdefault(g, []):
                    tags[g].append(tag_of(op))
    sizes = _sizes(found.get(None, []), sent_values(func))
    for group, calls in tags.items():
        funcs = [f for f in module.ops if isinstance(f, FuncOp) and chip_group(f) == group]
        sends = {k: v for f in funcs for k, v in sent_values(f).items()}
        sizes += _sizes(found.get(group, []), sends) * len(calls)
    return sizes


def _scope(op: Operation) -> str | None:
    """The group of the per-chip function holding ``op`` (None: the programs' own)."""
    f = op.parent_op()
    while f is not None and not isinstance(f, FuncOp):
        f = f.parent_op()
    return chip_group(f) if isinstance(f, FuncOp) else None


def _sizes(found: list[Collective], sends: dict[str, SSAValue]) -> list[int]:
    """The bytes of each distinct sum among ``found`` (copies merged as the manifest does;
    the 1/N slices of a two-shot or ring all-reduce, each folded on its own, are one sum of
    the partials they were cut from, as `allreduces` counts them)."""
    sizes: dict[frozenset[SSAValue], int] = {}
    for coll in one_per_sum(found, sends):
        roots = [_unsliced(origin(p, sends), sends) for p in coll.partials]
        if not roots:
            roots = [_unsliced(visible(coll.result), sends)]
        sizes.setdefault(frozenset(roots), nbytes(roots[0].type))
    return list(sizes.values())


def _unsliced(root: SSAValue, sends: dict[str, SSAValue]) -> SSAValue:
    """The value a slice was cut from (``tensor.extract_slice``), else ``root``."""
    if isinstance(root.owner, tensor.ExtractSliceOp):
        return origin(root.owner.source, sends)
    return root


def _root(runs: Runs, frame: Frame, partial: SSAValue, sends: dict[str, SSAValue]) -> Ref:
    """The flat program's value ``partial`` stands for (`values.origin`, through the
    relay's sends and through calls), or the partial a two-shot slice was cut from."""
    if runs.flat:
        root = origin(partial, sends)
        if isinstance(root.owner, tensor.ExtractSliceOp):
            root = origin(root.owner.source, sends)
        return runs.root, root
    f, root = runs.origin(frame, partial)  # per-chip calls: `_chip_call_sums` instead
    if isinstance(root.owner, tensor.ExtractSliceOp):
        return runs.origin(f, root.owner.source)
    return f, root


def _per_call(runs: Runs) -> list[tuple[Frame, Collective]]:
    """Each sum of each function run (`_collectives`), once per frame running it, in the
    flat program's order — the manifest's: the ``tp.allreduce``s in program order with
    calls expanded in place, then the folds likewise."""
    module = runs.entry.parent_op()
    assert isinstance(module, ModuleOp)
    n = stated_chips(module) or 1
    at = {f: _collectives(f, n) for f in runs.functions()}

    def expand(frame: Frame, kind: str) -> Iterator[tuple[Frame, Collective]]:
        where = {op: i for i, op in enumerate(frame.func.body.block.ops)}
        items: list[tuple[int, int, Frame | Collective]] = [
            (i, k, c) for k, (i, c) in enumerate(at[frame.func]) if c.kind == kind
        ]
        items += [(where[call], -1, child) for call, child in frame.children.items()]
        for _, _, item in sorted(items, key=lambda x: (x[0], x[1])):
            if isinstance(item, Frame):
                yield from expand(item, kind)
            else:
                yield frame, item

    return [*expand(runs.root, "allreduce"), *expand(runs.root, "fold")]


def _collectives(func: FuncOp, n: int) -> list[tuple[int, Collective]]:
    """The sums ``func``'s own ops compute, as the manifest finds them (every
    ``tp.allreduce`` in walk order, then every fold that is an all-reduce over ``n``
    chips), each with the index of the statement holding it."""
    found = [
        Collective(visible(op.result), tuple(op.partials), ((op,),))
        for op in func.walk()
        if isinstance(op, AllReduceOp)
    ]
    found += [
        Collective(fold.result, fold.partials, (fold.ops,))
        for fold in find_folds(func)
        if fold.is_allreduce(n)
    ]
    where = {op: i for i, op in enumerate(func.body.block.ops)}
    return [(where[_statement_of(c.copies[0][0])], c) for c in found]


def _statement_of(op: Operation) -> Operation:
    """The top-level statement of its function holding ``op``."""
    while not isinstance(parent := op.parent_op(), FuncOp) and parent is not None:
        op = parent
    return op


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
    # the machine streams weights ahead (`prefetch`): seconds = max(HBM, chain), else the sum
    overlapped: bool = False

    def to_json(self) -> dict[str, object]:
        """The bound's parts as plain data, with the dependency-chain note."""
        return {
            "seconds": self.seconds,
            "hbm_bytes_per_chip": self.hbm_bytes,
            "hbm_s": self.hbm_s,
            "allreduces": self.allreduce_count,
            "allreduce_link_s": self.link_s,
            "dependency_chain_s": self.link_s,
            "combined": "max" if self.overlapped else "sum",
            "note": DEPENDENCY_NOTE,
        }


def physical_bound(
    module: ModuleOp,
    machine: Machine,
    held: list[dict[HeldKey, Held]] | None = None,
    sizes: list[int] | None = None,
    runs: Runs | None = None,
) -> PhysicalBound:
    """The physical bound of ``module``'s step on ``machine`` (module docstring). Host data a
    chip holds counts when an op on that chip reads it (a shard nobody reads moves nothing);
    an output counts when some op writes it (an argument handed straight back does not).
    An outlined program's callee reads and writes once per call, its data that call's
    (`Runs`). ``held``, ``sizes`` and ``runs``: the program's `holdings`, `allreduces` and
    `Runs`, if already known."""
    func = entry_function(module)
    n = chips_of(module)
    runs = runs or Runs(func)
    held = holdings(runs, n) if held is None else held
    read: list[set[HeldKey]] = [set() for _ in range(n)]
    gathered: list[dict[HeldKey, float]] = [{} for _ in range(n)]
    written = [0.0] * n
    accesses: dict[SectionOp, list[Access]] = {}
    for frame in runs.frames:
        for section, chips in placed_in(runs, frame.func):
            if section not in accesses:
                accesses[section] = section_accesses(section)
            for dest, entry, operands, rows in accesses[section]:
                if dest is not None and runs.held_key(frame, dest) is not None:
                    for c in chips:  # the cache entry it writes (the cache read is counted)
                        written[c] += entry
                for operand in operands:
                    key = runs.held_key(frame, operand)
                    if key is not None:
                        for c in chips:
                            if key in held[c] and rows is None:
                                read[c].add(key)
                            elif key in held[c]:
                                gathered[c][key] = gathered[c].get(key, 0.0) + rows
    ret = func.body.block.last_op
    if isinstance(ret, ReturnOp):
        for value in ret.operands:
            frame, root = runs.origin(runs.root, value)
            parts = root.owner.parts if isinstance(root.owner, UnshardOp) else (root,)
            for part in parts:
                where, made = runs.origin(frame, part)
                if runs.held_key(where, made) is not None or isinstance(made.owner, VIEWS):
                    continue  # stored in place (counted as its cache and entry), or a view
                if isinstance(made, BlockArgument) or not isinstance(made.type, TensorType):
                    continue  # an argument handed back, a scalar
                chip = chip_of(part.type)
                for c in range(n) if chip is None else (chip,):
                    written[c] += nbytes(part.type)  # a spine output: every chip stores one
    # A table gathered from reads its rows (at most itself); one also read whole, once whole.
    rows_read = [
        sum(min(rows, held[c][k].bytes) for k, rows in gathered[c].items() if k not in read[c])
        for c in range(n)
    ]
    moved = [
        written[c] + rows_read[c] + sum(held[c][key].bytes for key in read[c]) for c in range(n)
    ]
    sizes = allreduces(func, runs) if sizes is None else sizes
    link = sum(least_allreduce_link_time(b, n, machine) for b in sizes)
    hbm = max(moved, default=0.0) / machine.hbm_bandwidth
    # A chip that streams its weights ahead moves them while it waits on links: the HBM
    # stream and the dependency chain overlap, and the bound is the larger of the two.
    overlapped = machine.prefetch_weights
    seconds = max(hbm, link) if overlapped else hbm + link
    return PhysicalBound(seconds, moved, hbm, len(sizes), link, overlapped)


Access = tuple[SSAValue | None, int, list[SSAValue], float | None]


COMPUTE_NOTE = (
    "2 FLOPs per multiply-add of every contraction of two different operands the chips run "
    "(projections, MLP, attention, LM head; norms' sums of squares left out), over "
    "N x peak FLOPs"
)


@dataclass
class ComputeBound:
    """The compute bound and its parts (module docstring)."""

    seconds: float = 0.0
    flops: float = 0.0
    chips: int = 1

    def to_json(self) -> dict[str, object]:
        """The bound's parts as plain data, with what it counts."""
        return {
            "seconds": self.seconds,
            "flops": self.flops,
            "chips": self.chips,
            "counts": COMPUTE_NOTE,
        }


def useful_flops(runs: Runs) -> float:
    """The FLOPs `compute_bound` counts: `cost.matmul_flops` of every section each chip runs
    (a lowered call's callee once per call), summed over the chips running it."""
    per_section: dict[SectionOp, float] = {}
    total = 0.0
    for frame in runs.frames:
        for section, chips in placed_in(runs, frame.func):
            if section not in per_section:
                per_section[section] = matmul_flops(section)
            total += per_section[section] * len(chips)
    return total


def compute_bound(module: ModuleOp, machine: Machine, runs: Runs | None = None) -> ComputeBound:
    """The compute bound of ``module``'s step on ``machine`` (module docstring): its
    `useful_flops` over N x the machine's peak FLOPs. ``runs``: the program's `Runs`, if
    already made."""
    n = chips_of(module)
    flops = useful_flops(runs or Runs(entry_function(module)))
    return ComputeBound(flops / (n * machine.peak_flops), flops, n)


@dataclass
class StepBound:
    """The step's bound: the larger of its compute bound and its physical (memory) bound,
    and which of the two binds."""

    compute: ComputeBound = field(default_factory=ComputeBound)
    physical: PhysicalBound = field(default_factory=PhysicalBound)

    @property
    def seconds(self) -> float:
        """max(compute bound, physical bound)."""
        return max(self.compute.seconds, self.physical.seconds)

    @property
    def binding(self) -> str:
        """``compute-bound`` when the compute bound is the larger; else the physical bound's
        larger part: ``HBM-bound`` (its HBM time) or ``link-bound`` (its all-reduces' least
        link time: a long prefill's activations over slow links)."""
        if self.compute.seconds > self.physical.seconds:
            return "compute-bound"
        return "link-bound" if self.physical.link_s > self.physical.hbm_s else "HBM-bound"


def section_accesses(section: SectionOp) -> list[Access]:
    """What each op of ``section`` (views aside) may read or write of host data, in its
    function's terms: an in-place write's destination and the bytes of the entry it writes
    (None, 0 for any other op), the operands it reads that may be host data (its origin a
    block argument, a shard or a call's result; an in-place write reads only the new entry),
    and how many of their bytes it reads: None for all of them, or a gather's rows
    (`cost.gathered_bytes`: a ``tensor.extract`` in a generic's body of a table it
    captures), or an ``extract_slice``'s window. A call the section runs as one op (a call
    tp-relocate did not lower) does what its callee's ops do, their arguments its operands
    (`values.walk_calls`)."""
    found: list[Access] = []
    for op in section.walk():
        if not isinstance(op, CallOp) or (f := callee(op)) is None:
            found += _access(op, ())
            continue
        for inner, calls in walk_calls(f):
            found += _access(inner, (op, *calls))
    return found


def _access(op: Operation, calls: tuple[CallOp, ...]) -> list[Access]:
    """`section_accesses` of one op run through ``calls`` (outermost first): its values in the
    terms of the function the first call is in (none when it reads no host data)."""
    if isinstance(op, VIEWS) or (calls and isinstance(op, CallOp | ReturnOp)):
        return []  # a followed call's ops are its callee's; its return hands values back

    def outer(value: SSAValue) -> SSAValue:
        return origin_through(storage(value), calls) if calls else value

    if isinstance(op, tensor.ExtractOp) and isinstance(gather := op.parent_op(), linalg.GenericOp):
        table = outer(op.tensor)
        if not _may_be_held(table):
            return []
        return [(None, 0, [table], min(nbytes(op.tensor.type), gathered_bytes(gather)))]
    if isinstance(op, tensor.ExtractSliceOp):
        # A window of its source: the window's bytes read (as the step charges it).
        source = outer(op.source)
        if not _may_be_held(source):
            return []
        return [(None, 0, [source], float(nbytes(op.result.type)))]
    operands = list(op.operands)
    dest: SSAValue | None = None
    entry = 0
    if isinstance(op, tensor.InsertSliceOp):
        operands.remove(op.dest)
        dest, entry = outer(op.dest), nbytes(op.source.type)
    kept = [v for v in map(outer, operands) if _may_be_held(v)]
    return [(dest, entry, kept, None)] if dest is not None or kept else []


def _may_be_held(value: SSAValue) -> bool:
    """Whether ``value``'s storage could be host data in some frame: its origin in its own
    function is a block argument, a ``tp.shard``'s result or a call's result."""
    root = origin(storage(value))
    return isinstance(root, BlockArgument) or isinstance(root.owner, ShardOp | CallOp)
