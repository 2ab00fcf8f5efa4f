"""What each op costs on a chip, from shapes alone: FLOPs and HBM bytes, timed by a roofline.

A ``linalg.generic`` runs over its iteration domain: a contraction (`linalg_kinds`' one
definition, a sum of squares included) is 2 FLOPs per point, a map or reduction one per arith
op of its body per point; its bytes are its tensor operands read and its results written (a
weight is read once per step, which is what bounds decode), plus what a gather's body
extracts from a captured table (`gathered_bytes`: the rows it looks up, not the table). Views
(reshapes, a chip's slice of a resident weight or cache) cost nothing; an in-place cache
update writes only its slice. A ``func.call`` a section runs as one op (a call tp-relocate
did not lower) costs its callee's statements (`call_cost`). `matmul_flops` counts the FLOPs of
the products of two operands some work runs (the compute bound's). All-reduce data movement
is costed by the model (transfers, or a ring collective's alpha-beta), its adds here; a
maxloc's likewise (its pairs move by transfers), its compares here.

What a generic is (domain, contraction) and a tensor's bytes come from `tp_dialect.linalg_kinds`;
``nbytes`` is re-exported here for the model and the passes that import it from this module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tp_dialect.analysis.timing.wires import exchange_time
from tp_dialect.analysis.values import callee, walk_calls
from tp_dialect.attrs import SliceAttr, even_ranges
from tp_dialect.collectives import ALL_GATHER, ALLREDUCE, MAXLOC, REDUCE_SCATTER, Exchanges
from tp_dialect.dtypes import numpy_dtype
from tp_dialect.linalg_kinds import contraction, domain_size, elements, is_contraction, nbytes
from tp_dialect.machine import Machine
from tp_dialect.ops import AllReduceOp, MaxLocOp, SectionOp, ShardOp, UnshardOp, YieldOp


@dataclass(frozen=True)
class Cost:
    """FLOPs and HBM bytes of some work, and how many ops it takes."""

    flops: float = 0.0
    bytes: float = 0.0
    ops: int = 0
    copied: float = 0.0  # bytes an update copies first where updates are not in place

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.flops + other.flops,
            self.bytes + other.bytes,
            self.ops + other.ops,
            self.copied + other.copied,
        )

    def time(self, machine: Machine) -> float:
        """Roofline: bound by compute or by HBM bandwidth, whichever is slower (the copies
        of updates counted where the machine makes them), plus its overhead per op (none on
        a dataflow chip), plus mapping in the new buffers its update copies are written to
        (`first_touch_time`: none on a chip)."""
        moved = self.bytes + (self.copied if machine.copies_updates else 0.0)
        roof = max(self.flops / machine.peak_flops, moved / machine.hbm_bandwidth)
        return roof + self.ops * machine.op_overhead + first_touch_time(self, machine)


def first_touch_time(cost: Cost, machine: Machine) -> float:
    """The time the OS takes to map in the new buffers ``cost``'s update copies write, 0
    where there are none. Where updates copy their destination (``copies_updates``: value
    semantics, the reference interpreter), each copy is a buffer new to the process, whose
    pages are faulted in on their first write at ``first_touch_bandwidth`` B/s on top of
    the write the roofline charges; 0 there (the presets): no such cost, a chip updates
    memory it already holds. A copy is written once: half its ``copied`` bytes (which
    count its read and its write)."""
    if not machine.copies_updates or machine.first_touch_bandwidth <= 0:
        return 0.0
    return cost.copied / 2 / machine.first_touch_bandwidth


# No work of their own: views, allocations, terminators, host-side stores.
VIEWS = (
    tensor.ExpandShapeOp,
    tensor.CollapseShapeOp,
    tensor.EmptyOp,
    ShardOp,
    UnshardOp,
    arith.ConstantOp,
    YieldOp,
    tensor.CastOp,  # the same storage, retyped (a reduce-scatter's block, as its chip's)
)


def op_cost(op: Operation) -> Cost:
    """The cost of one statement-level op (inside a section, or a whole section)."""
    if isinstance(op, SectionOp):
        total = Cost()
        inner_ops = [inner for inner in op.body.block.ops if not isinstance(inner, YieldOp)]
        for inner in inner_ops:
            total = total + op_cost(inner)
        # A fused section keeps what it computes on chip (the shim checked it fits in SRAM):
        # its own ops read such a value there, and only a value read after it is written out.
        # A view computes nothing: reading through it still reads HBM.
        inside = set(inner_ops)
        kept = 0.0
        for inner in inner_ops:
            if isinstance(inner, VIEWS):
                continue
            for r in inner.results:
                readers = [u.operation for u in r.uses]
                # Each reader inside reads it on chip: take off what that reader is charged
                # for reading it (a window's bytes for an extract_slice, else all of it).
                local = sum(_read_bytes(u, r) for u in readers if u in inside)
                written = any(u not in inside for u in readers)
                kept += local + (0 if written else nbytes(r.type))
        return Cost(total.flops, max(0.0, total.bytes - kept), total.ops, total.copied)
    return replace(_leaf_cost(op), ops=1)


def _read_bytes(reader: Operation, value: SSAValue) -> float:
    """The bytes `_leaf_cost` charges ``reader`` for reading ``value``: an extract_slice of
    it reads its window; a ``linalg.generic`` reads its inputs, not the init it accumulates
    into (the fill before it wrote that), a fill reads nothing; any other op all of it."""
    if isinstance(reader, tensor.ExtractSliceOp) and reader.source is value:
        return nbytes(reader.result.type)
    if isinstance(reader, linalg.GenericOp):
        return nbytes(value.type) * sum(1 for v in reader.inputs if v is value)
    if isinstance(reader, linalg.FillOp):
        return 0.0
    return nbytes(value.type)


def _leaf_cost(op: Operation) -> Cost:
    """The FLOPs and bytes of one op inside a section."""
    if isinstance(op, VIEWS):
        return Cost()
    if isinstance(op, linalg.GenericOp):
        domain = domain_size(op)
        reads = sum(nbytes(v.type) for v in op.inputs)
        writes = sum(nbytes(r.type) for r in op.results)
        body = [o for o in op.body.block.ops if not isinstance(o, linalg.YieldOp)]
        arith_ops = sum(1 for o in body if not isinstance(o, arith.ExtFOp | arith.ConstantOp))
        per_point = 2 if is_contraction(op) else max(arith_ops, 1)
        return Cost(per_point * domain, reads + writes + gathered_bytes(op))
    if isinstance(op, CallOp):
        return call_cost(op)
    if isinstance(op, tensor.ExtractSliceOp):
        # A window read out of its source (a strided read) and written: the window's bytes,
        # not the whole source's (a 1/N slice of a partial for a two-shot all-reduce).
        return Cost(0, 2 * nbytes(op.result.type))
    if isinstance(op, tensor.InsertSliceOp):
        # In place: the entry read and written. Updating a copy reads and writes it all.
        return Cost(0, 2 * nbytes(op.source.type), copied=2 * nbytes(op.dest.type))
    if isinstance(op, AllReduceOp):
        n = len(op.partials)
        return Cost((n - 1) * elements(op.result.type), (n + 1) * nbytes(op.result.type))
    if isinstance(op, MaxLocOp):
        return maxloc_cost(op.value.type, op.index.type, len(op.values))
    if isinstance(op, linalg.FillOp):
        return Cost(0, sum(nbytes(r.type) for r in op.results))
    reads = sum(nbytes(v.type) for v in op.operands)
    writes = sum(nbytes(r.type) for r in op.results)
    points = max((elements(r.type) for r in op.results), default=0)
    return Cost(points, reads + writes)


def gathered_bytes(op: linalg.GenericOp) -> float:
    """The bytes ``op``'s body reads from tensors it captures (``tensor.extract`` of a value
    defined outside it: an embedding's table): one element per point of its domain for each
    extract, at most the whole tensor — a gather reads the rows it looks up."""
    total = 0.0
    for inner in op.body.walk():
        if isinstance(inner, tensor.ExtractOp) and not _defined_in(inner.tensor, op):
            t = inner.tensor.type
            if isinstance(t, TensorType):
                itemsize = numpy_dtype(t.element_type).itemsize
                total += min(nbytes(t), domain_size(op) * itemsize)
    return total


def _defined_in(value: SSAValue, op: Operation) -> bool:
    """Whether ``value`` is made inside ``op`` (by an op in it, or as one of its blocks')."""
    owner = value.owner
    parent = owner.parent_op() if isinstance(owner, Block) else owner
    return parent is not None and (parent is op or op.is_ancestor(parent))


def call_cost(call: CallOp, _path: tuple[FuncOp, ...] = ()) -> Cost:
    """The cost of a ``func.call`` run as one op: its callee's statements' costs summed (a
    call it cannot follow, or a recursive one, costs its operands read and results written,
    as any other op)."""
    f = callee(call)
    if f is None or f in _path:
        return Cost(
            0,
            sum(nbytes(v.type) for v in call.operands) + sum(nbytes(r.type) for r in call.results),
        )
    total = Cost()
    for inner in f.body.block.ops:
        if isinstance(inner, ReturnOp):
            continue
        if isinstance(inner, CallOp):
            total = total + replace(call_cost(inner, (*_path, f)), ops=1)
        else:
            total = total + op_cost(inner)
    return total


def matmul_flops(op: Operation) -> float:
    """The FLOPs of the products of two operands ``op`` runs: 2 per multiply-add of every
    contraction in it whose two factors differ (projections, attention, the head; a norm's sum
    of squares left out), a call's callee run once per call (`values.walk_calls`)."""
    total = 0.0
    for inner in op.walk():
        if isinstance(inner, CallOp) and (f := callee(inner)) is not None:
            total += sum(_product_flops(o) for o, _ in walk_calls(f))
        else:
            total += _product_flops(inner)
    return total


def _product_flops(op: Operation) -> float:
    """2 x the domain of a contraction of two different factors, else 0."""
    if isinstance(op, linalg.GenericOp):
        found = contraction(op)
        if found is not None and found.factors[0] != found.factors[1]:
            return 2.0 * domain_size(op)
    return 0.0


# -- all-reduce algorithms ------------------------------------------------------------------

ALLREDUCE_ALGORITHMS = AllReduceOp.ALGORITHMS


def allreduce_link_time(algorithm: str, nbytes_: float, n: int, machine: Machine) -> float:
    """The link time of one all-reduce of ``nbytes_`` per partial over ``n`` chips: its
    exchanges (its registry entry's, `collectives.ALLREDUCE`) run on idle links under the
    rules the dataflow mode runs (`links`: routes, first come first served, cut-through),
    each exchange after the one before — or, for an algorithm whose exchange may stay inside
    the collective (``ring``: a ring section tp-transfers has not spelled out, or cannot, and
    the seed's lower bound), its entry's ``inside_time``. Spelled out, every algorithm costs
    `lowered_link_time`.

    Phase mode runs the same transfers one phase at a time; this is their time with
    nothing else in the way.
    """
    if n <= 1:
        return 0.0
    entry = ALLREDUCE.get(algorithm)
    if entry is None:
        raise ValueError(f"no all-reduce algorithm '{algorithm}'")
    if entry.inside_time is not None:
        return entry.inside_time(nbytes_, n, machine.link_latency, machine.link_bandwidth)
    return _exchanges(algorithm, float(nbytes_), n, machine)


def lowered_link_time(algorithm: str, nbytes_: float, n: int, machine: Machine) -> float:
    """The link time of one all-reduce as per-chip programs run it, once tp-transfers has
    spelled it out: its entry's exchanges, one after another (a ``ring``'s N-1 reduce-scatter
    steps, then the two-shot's all-gather), whatever it costs as one collective."""
    if n <= 1 or ALLREDUCE[algorithm].inside_time is None:
        return allreduce_link_time(algorithm, nbytes_, n, machine)
    return _exchanges(algorithm, float(nbytes_), n, machine)


@functools.lru_cache(maxsize=1024)
def _exchanges(algorithm: str, nbytes_: float, n: int, machine: Machine) -> float:
    """The time of ``algorithm``'s exchanges over ``n`` chips, one after another."""
    total = 0.0
    for count, moves in ALLREDUCE[algorithm].exchanges(n):
        total += count * exchange_time([(a, b, nbytes_ / k) for a, b, k in moves], n, machine)
    return total


def allreduce_compute_time(
    algorithm: str, elements: int, itemsize: int, n: int, m: Machine
) -> float:
    """The adds of one all-reduce on the chip(s) that make them: N-1 adds of the whole tensor
    on one chip (fold) or on every chip at once (oneshot), of 1/N of it (twoshot: one section
    reading N slices, writing one; ring: N-1 sections one after another, each reading two
    slices and writing one). An algorithm that works on slices also cuts each chip's partial
    into its N slices and joins the N summed slices into the whole again, as tp-transfers
    spells it out: each a read and a write of the tensor (`_leaf_cost` of the
    ``extract_slice``s and the ``concat``)."""
    if n <= 1:
        return 0.0
    entry = ALLREDUCE[algorithm]
    share = 1 / n if entry.split else 1
    flops = (n - 1) * elements * share
    touched = entry.touched(n)
    moved = touched * elements * itemsize * share
    if entry.split:
        moved += 4 * elements * itemsize  # the cut (2: read, write) and the join (2)
    return max(flops / m.peak_flops, moved / m.hbm_bandwidth)


def allreduce_time(algorithm: str, result_type: Attribute, n: int, machine: Machine) -> float:
    """Modelled time of one all-reduce of a ``result_type`` tensor as per-chip programs run
    it: its link time and its adds (see `lowered_link_time`, `allreduce_compute_time`)."""
    assert isinstance(result_type, TensorType)
    size = nbytes(result_type)
    itemsize = numpy_dtype(result_type.element_type).itemsize
    return lowered_link_time(algorithm, size, n, machine) + allreduce_compute_time(
        algorithm, elements(result_type), itemsize, n, machine
    )


def reduce_scatter_time(algorithm: str, t: Attribute, n: int, machine: Machine) -> float:
    """Modelled time of one reduce-scatter of ``t``-shaped partials over ``n`` chips as
    per-chip programs run it (a two-shot all-reduce's first half): its exchanges of 1/N
    blocks, then on each chip N-1 adds of one block, each partial first cut into blocks."""
    assert isinstance(t, TensorType)
    if n <= 1:
        return 0.0
    size, count = nbytes(t), elements(t)
    link = _blocks_time(REDUCE_SCATTER[algorithm].exchanges(n), size, n, machine)
    moved = 2 * size + (n + 1) * size / n  # the cut (read, write), the adds' reads and write
    return link + max((n - 1) * count / n / machine.peak_flops, moved / machine.hbm_bandwidth)


def all_gather_time(algorithm: str, t: Attribute, n: int, machine: Machine) -> float:
    """Modelled time of one all-gather of a whole ``t`` tensor over ``n`` chips: its
    exchanges of 1/N blocks, then every chip joining the N blocks (a read and a write)."""
    assert isinstance(t, TensorType)
    if n <= 1:
        return 0.0
    size = nbytes(t)
    link = _blocks_time(ALL_GATHER[algorithm].exchanges(n), size, n, machine)
    return link + 2 * size / machine.hbm_bandwidth


def _blocks_time(exchanges: Exchanges, size: float, n: int, machine: Machine) -> float:
    return sum(
        count * exchange_time([(a, b, size / k) for a, b, k in moves], n, machine)
        for count, moves in exchanges
    )


def least_allreduce_link_time(nbytes_: float, n: int, machine: Machine) -> float:
    """A time no all-reduce of ``nbytes_`` over ``n`` chips can beat on the machine's links.

    Some chip must take in at least 2(N-1)/N of the tensor: every element needs one chip
    that receives the other N-1 partials of it, and every other chip then receives the sum
    (the reduce-scatter + all-gather bound), over the links into it (N-1 on all-to-all, 2 on
    a ring). And the sum on a chip depends on the farthest chip's partial: one latency per
    hop of the diameter (1 on all-to-all, floor(N/2) on a ring)."""
    if n <= 1:
        return 0.0
    ring = machine.topology == "ring" and n > 2
    into = 2 if ring else n - 1
    diameter = n // 2 if ring else 1
    return diameter * machine.link_latency + 2 * (n - 1) / n * nbytes_ / (
        into * machine.link_bandwidth
    )


def best_allreduce(
    result_type: Attribute,
    n: int,
    machine: Machine,
    candidates: tuple[str, ...] = ALLREDUCE_ALGORITHMS,
) -> tuple[str, dict[str, float]]:
    """The candidate with the least modelled time for this all-reduce, and every candidate's
    time (ties go to the earlier candidate: the seed's fold first)."""
    times = {a: allreduce_time(a, result_type, n, machine) for a in candidates}
    return min(times, key=lambda a: (times[a], candidates.index(a))), times


# -- maxloc algorithms -----------------------------------------------------------------------

MAXLOC_ALGORITHMS = MaxLocOp.ALGORITHMS


def maxloc_cost(value_type: Attribute, index_type: Attribute, n: int) -> Cost:
    """The compares of one maxloc on the chip(s) forming it: per element and per pair after
    the first, a compare of the values, one of the indices on a tie, and two selects; every
    pair read, the result written."""
    pair = nbytes(value_type) + nbytes(index_type)
    return Cost(4 * (n - 1) * elements(value_type), (n + 1) * pair)


def maxloc_link_time(
    algorithm: str, pair: tuple[float, float], n: int, machine: Machine, back: tuple[int, ...]
) -> float:
    """The link time of one maxloc over ``n`` chips whose pair is ``pair`` (the value's
    bytes, the index's): two small tensors a chip, so latency-bound. Exchanges run as the
    dataflow mode runs them (`links`), each tensor its own transfer:

    - ``fold``: every other chip's value and index into chip 0, then the result's two
      tensors from chip 0 to the chips in ``back`` (those that read it: none for a greedy
      token the host takes);
    - ``oneshot``: every chip's value and index to every other chip (each forms the result).
    """
    if n <= 1:
        return 0.0
    entry = MAXLOC.get(algorithm)
    if entry is None:
        raise ValueError(f"no maxloc algorithm '{algorithm}'")
    moves = entry.gathers(n)
    time = exchange_time([(a, b, size) for a, b in moves for size in pair], n, machine)
    if not entry.lands_on_every_chip and back:
        time += exchange_time([(0, c, size) for c in back for size in pair], n, machine)
    return time


def maxloc_time(
    algorithm: str,
    value_type: Attribute,
    index_type: Attribute,
    n: int,
    machine: Machine,
    back: tuple[int, ...] = (),
) -> float:
    """Modelled time of one maxloc as per-chip programs run it: its link time
    (`maxloc_link_time`; ``back``: the chips besides chip 0 that read the result) and its
    compares (`maxloc_cost`: on chip 0, or on every chip at once — the same time)."""
    pair = (float(nbytes(value_type)), float(nbytes(index_type)))
    compute = maxloc_cost(value_type, index_type, n) if n > 1 else Cost()
    link = maxloc_link_time(algorithm, pair, n, machine, back)
    return link + max(compute.flops / machine.peak_flops, compute.bytes / machine.hbm_bandwidth)


def best_maxloc(
    value_type: Attribute,
    index_type: Attribute,
    n: int,
    machine: Machine,
    back: tuple[int, ...] = (),
) -> tuple[str, dict[str, float]]:
    """The maxloc algorithm with the least modelled time (`maxloc_time`), and every one's
    time (a tie goes to ``fold``: fewer messages)."""
    times = {a: maxloc_time(a, value_type, index_type, n, machine, back) for a in MAXLOC_ALGORITHMS}
    return min(times, key=lambda a: (times[a], MAXLOC_ALGORITHMS.index(a))), times


def split_axis(t: TensorType, n: int) -> SliceAttr | None:
    """How a ``t`` tensor is cut into ``n`` slices for a two-shot all-reduce: along its
    longest axis (the last of equals), in ranges as even as the extent allows — or None when
    no axis has ``n`` elements (there is no slice for every chip)."""
    shape = list(t.get_shape())
    if not shape or max(shape) < n:
        return None
    axis = max(range(len(shape)), key=lambda a: (shape[a], a))
    return SliceAttr(axis, even_ranges(shape[axis], n), shape)
