"""tp-to-mpi: the per-chip programs as ONE function every MPI rank runs (xDSL's ``mpi`` dialect).

Invariant: the entry's per-chip programs and relay (tp-link-points, tp-relay) become a single
SPMD body: ``mpi.comm.rank`` picks rank c's branch (``scf.if`` on ``rank == c``), which is chip
c's program as it was (its sections' statements in order), each ``tp.link`` spelled as the
relay's copies it takes part in — an ``mpi.isend`` of a copy of every buffer it sends to every
chip the relay copies it to, then a blocking ``mpi.recv`` of every buffer it receives (a name
received again is the value received first, as the relay's inbox keeps it) — and one
``mpi.waitall`` per link's sends at the branch's end (a wait at the link could deadlock: the
receiver may take the message at a later link). Buffers pass through
``bufferization.to_buffer``/``alloc_tensor`` and ``mpi.unwrap_memref``; a buffer's tag is its
name's place among the relay's copied names, sorted. A chip other than 0 whose program hands
the host a value (a result, a cache slice the host assembles) sends it to rank 0 at its end,
where rank 0 receives it after its own program; other ranks hold placeholders
(``tensor.empty``, zeros) in its place, and the host's work after the programs runs on every
rank: rank 0's results are the function's. Ranks only block at receives until their ends, and
the relay's order is one interleaving of those receives (each after its send's halt), so no
rank waits forever even if every send completes only when received. Ranks past N-1 do
nothing. xDSL's ``lower-mpi`` takes the result to calls into an MPI library; the caller
initialises MPI. The certificate is dropped: tp-verify reads tp's links, not ``mpi`` messages
(the programs it certified are what each branch runs).

Refused (``not-exportable``), before anything changes: outlined per-chip functions (run tp-inline
first), a relay that repeats, no program on chip 0, a receive no relay copy brings, a program
reading a value computed between programs, the host reading results before the relay ends, a
value handed to the host that is not a statically shaped tensor (or, from chip 0, a scalar);
with no per-chip programs, ``not-sectioned``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, mpi, scf, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tp_dialect.certificate import drop
from tp_dialect.names import value_hint, value_name
from tp_dialect.ops import SectionOp
from tp_dialect.passes.preconditions import entry_of
from tp_dialect.program_ops import (
    ChipProgramOp,
    CopyOp,
    FinishOp,
    LinkOp,
    RelayOp,
    RelayRepeatOp,
)
from tp_dialect.reject import TpReject

_PASS = "tp-to-mpi"


@dataclass(frozen=True)
class Route:
    """Where the relay moves one named buffer: from chip ``source`` to each of ``dests``,
    under MPI tag ``tag``."""

    source: int
    dests: tuple[int, ...]
    tag: int


def routes(relay: RelayOp) -> dict[str, Route]:
    """Every buffer the relay copies, by name: its sender, its receivers, its tag."""
    found: dict[str, tuple[int, list[int]]] = {}
    for step in relay.body.block.ops:
        if isinstance(step, RelayRepeatOp):
            raise _refuse(step, "a relay that repeats (an outlined program): run tp-inline first")
        if isinstance(step, CopyOp):
            name = step.tensor.data
            source, dests = found.setdefault(name, (step.source.value.data, []))
            if step.dest.value.data not in dests:  # a chip keeps what it was copied
                dests.append(step.dest.value.data)
    return {
        name: Route(source, tuple(dests), tag)
        for tag, (name, (source, dests)) in enumerate(sorted(found.items()))
    }


def _refuse(op: Operation, why: str) -> Exception:
    return TpReject.NOT_EXPORTABLE.at(op, f"{_PASS}: {why}")


class _Builder:
    """Ops added to one block (at its end, or before ``before``), named by what they hold;
    an i32 constant made once per builder and name."""

    def __init__(self, block: Block, before: Operation | None = None) -> None:
        self.block, self.before = block, before
        self._ints: dict[tuple[int, str], SSAValue] = {}

    def add(self, op: Operation, *names: str) -> Operation:
        if self.before is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.before)
        for result, name in zip(op.results, names, strict=False):
            result.name_hint = value_hint(name)
        return op

    def i32(self, value: int, name: str) -> SSAValue:
        """An i32 constant ``value`` named ``name`` (``to1``, ``tag3``)."""
        key = (value, name)
        if key not in self._ints:
            made = arith.ConstantOp.from_int_and_width(value, 32)
            self._ints[key] = self.add(made, name).results[0]
        return self._ints[key]

    def buffer(self, value: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
        """``value``'s storage as MPI takes it: (memref, pointer, count, datatype)."""
        t = value.type
        assert isinstance(t, TensorType)
        name = value_name(value)
        to_buffer = bufferization.ToBufferOp(
            operands=[value], result_types=[MemRefType(t.element_type, t.get_shape())]
        )
        ref = self.add(to_buffer, f"{name}_buf").results[0]
        unwrap = self.add(mpi.UnwrapMemRefOp(ref), f"{name}_ptr", f"{name}_count", f"{name}_type")
        return ref, unwrap.results[0], unwrap.results[1], unwrap.results[2]

    def receive(self, t: Attribute, name: str, source: int, tag: int) -> SSAValue:
        """A fresh tensor of type ``t`` named ``name``, filled by a blocking receive from
        rank ``source`` under ``tag``."""
        fresh = self.add(bufferization.AllocTensorOp(t, []), f"{name}_in").results[0]
        ref, ptr, count, dtype = self.buffer(fresh)
        self.add(
            mpi.RecvOp(
                ptr, count, dtype, self.i32(source, f"from{source}"), self.i32(tag, f"tag{tag}")
            )
        )
        # typed as the link's result was (on its chip): the memref carries no chip
        back = bufferization.ToTensorOp.create(
            operands=[ref],
            result_types=[t],
            properties={"restrict": UnitAttr(), "writable": UnitAttr()},
        )
        return self.add(back, name).results[0]

    def send_all(self, sends: list[tuple[SSAValue, int, int]]) -> SSAValue | None:
        """Non-blocking sends of (value, dest, tag), in order, each of a copy of the value
        (the program may write the value in place before the send completes); their
        requests, to wait on."""
        if not sends:
            return None
        count = self.i32(len(sends), "sends")
        requests = self.add(mpi.AllocateTypeOp(mpi.RequestType, count), "requests")
        for k, (value, dest, tag) in enumerate(sends):
            copy = bufferization.AllocTensorOp(value.type, [], copy=value)
            _, ptr, n, dtype = self.buffer(self.add(copy, f"{value_name(value)}_out").results[0])
            request = self.add(mpi.VectorGetOp(requests, self.i32(k, f"send{k}")), f"request{k}")
            to, tagged = self.i32(dest, f"to{dest}"), self.i32(tag, f"tag{tag}")
            self.add(mpi.IsendOp(ptr, n, dtype, to, tagged, request.results[0]))
        return requests.results[0]

    def wait(self, requests: SSAValue | None, count: int) -> None:
        if requests is not None:
            self.add(mpi.WaitallOp(requests, self.i32(count, "sends")))


def _placeholder(builder: _Builder, value: SSAValue) -> SSAValue:
    """What a rank that does not hold ``value`` has in its place: an empty tensor, or zero
    (`_check` refuses other types)."""
    t, name = value.type, f"{value_name(value)}_elsewhere"
    if isinstance(t, TensorType):
        return builder.add(tensor.EmptyOp([], t), name).results[0]
    if isinstance(t, AnyFloat):
        return builder.add(arith.ConstantOp(FloatAttr(0.0, t)), name).results[0]
    assert isinstance(t, IntegerType | IndexType)
    return builder.add(arith.ConstantOp(IntegerAttr(0, t)), name).results[0]


def _unwrap_sections(block: Block) -> None:
    """Each section's statements in its place (a section groups a chip's statements for the
    schedule, which one rank running its branch in order no longer needs)."""
    for section in [op for op in block.ops if isinstance(op, SectionOp)]:
        done = section.yield_op
        for op in list(section.body.block.ops):
            if op is done:
                break
            op.detach()
            block.insert_op_before(op, section)
        for out, value in zip(section.outs, done.values, strict=True):
            out.replace_all_uses_with(value)
        section.detach()
        section.erase()


def _spell_links(block: Block, table: dict[str, Route]) -> list[tuple[SSAValue, int]]:
    """Each link in a chip's ``block`` as its sends and its receives (a name received again
    is the value received first: the relay's inbox keeps it); the requests of its sends and
    their counts, waited on at the branch's end (a wait at the link could deadlock: the
    receiver may take the message at a later link)."""
    pending: list[tuple[SSAValue, int]] = []
    taken: dict[str, SSAValue] = {}
    for link in [op for op in block.ops if isinstance(op, LinkOp)]:
        at = _Builder(block, link)
        sends = [
            (value, dest, table[name].tag)
            for value, name in zip(link.sent, link.sends, strict=True)
            if name in table
            for dest in table[name].dests
        ]
        requests = at.send_all(sends)
        if requests is not None:
            pending.append((requests, len(sends)))
        for result, name in zip(link.received, link.receives, strict=True):
            if name not in taken:
                route = table[name]
                taken[name] = at.receive(result.type, name, route.source, route.tag)
            result.replace_all_uses_with(taken[name])
        link.detach()
        link.erase()
    return pending


def _static_tensor(t: Attribute) -> bool:
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape())


def _check(
    func: FuncOp, programs: list[ChipProgramOp], relay: RelayOp, table: dict[str, Route]
) -> None:
    """Refuse, before anything changes, what the SPMD form cannot spell (module docstring)."""
    for op in func.walk():
        if isinstance(op, CallOp):
            raise _refuse(op, "a per-chip function call (an outlined program): run tp-inline first")
    if programs[0].chip_index != 0:
        raise _refuse(programs[0], "no program on chip 0, whose rank gathers the host's values")
    block = func.body.block
    order = {op: k for k, op in enumerate(block.ops)}
    first = min(order[p] for p in programs)
    last = max(order[p] for p in [*programs, relay])
    for program in programs:
        c = program.chip_index
        for value in program.inputs:  # all of them ready where the branches will stand
            owner = value.owner
            if isinstance(owner, Operation) and order.get(owner, -1) > first:
                raise _refuse(
                    program, f"chip {c} reads %{value_name(value)}, computed between programs"
                )
        for link in program.body.block.ops:
            if not isinstance(link, LinkOp):
                continue
            for name in link.receives:
                if name not in table:
                    raise _refuse(link, f'chip {c} receives "{name}", which no relay copy brings')
        for value in program.outputs:
            if not value.uses:
                continue
            if not _static_tensor(value.type) and not isinstance(
                value.type, AnyFloat | IntegerType | IndexType
            ):
                raise _refuse(
                    program,
                    f"chip {c} hands the host a {value.type}: only a statically shaped tensor or "
                    "a scalar has a placeholder on the other ranks",
                )
            if c != 0 and not _static_tensor(value.type):
                raise _refuse(
                    program,
                    f"chip {c} hands the host a {value.type}: only a statically shaped tensor "
                    "can be sent to rank 0",
                )
            if any(order.get(_top(use.operation, block), last) < last for use in value.uses):
                raise _refuse(program, f"the host reads chip {c}'s results before the relay ends")


def _top(op: Operation, block: Block) -> Operation:
    """The op of ``block`` holding ``op``."""
    while op.parent_block() is not block and op.parent_op() is not None:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def spmd(func: FuncOp) -> None:
    """``func``'s per-chip programs and relay replaced by one rank-dispatched body."""
    block = func.body.block
    programs = sorted(
        (op for op in block.ops if isinstance(op, ChipProgramOp)), key=lambda p: p.chip_index
    )
    relays = [op for op in block.ops if isinstance(op, RelayOp)]
    if not programs or not relays:
        raise TpReject.NOT_SECTIONED.at(
            func,
            f"@{func.sym_name.data} has no per-chip programs and relay: run tp-link-points "
            "and tp-relay first",
        )
    table = routes(relays[0])
    _check(func, programs, relays[0], table)
    # every program result the host reads (returns, or stores: a cache assembled from slices);
    # rank 0 gathers them at the end, each under a tag after the relay's
    outputs = [r for p in programs for r in p.outputs if r.uses]
    final = {v: len(table) + k for k, v in enumerate(outputs)}
    branches = [_branch(p, outputs, final, table) for p in programs]
    first = next(op for op in block.ops if isinstance(op, ChipProgramOp))  # in block order
    # rank == c picks branch c; a rank past the last chip yields placeholders
    types = [v.type for v in outputs]
    rest = Block()
    rest.add_op(scf.YieldOp(*[_placeholder(_Builder(rest), v) for v in outputs]))
    rank = _Builder(block, first).add(mpi.CommRankOp()).results[0]
    rank.name_hint = "rank"
    for program, branch in reversed(list(zip(programs, branches, strict=True))):
        outer = Block()
        b = _Builder(outer)
        c = program.chip_index
        is_c = b.add(arith.CmpiOp(rank, b.i32(c, f"chip{c}"), "eq"), f"on_chip{c}").results[0]
        choose = b.add(scf.IfOp(is_c, types, Region(branch), Region(rest)))
        outer.add_op(scf.YieldOp(*choose.results))
        rest = outer
    # the outermost choice moves before the first program; its yield is the host's values
    chosen = rest.last_op
    assert isinstance(chosen, scf.YieldOp)
    for op in list(rest.ops)[:-1]:
        op.detach()
        block.insert_op_before(op, first)
    for old, new in zip(outputs, chosen.operands, strict=True):
        old.replace_all_uses_with(new)
    for op in [*programs, *relays]:
        op.detach()
        op.erase()


def _branch(
    program: ChipProgramOp,
    outputs: list[SSAValue],
    final: dict[SSAValue, int],
    table: dict[str, Route],
) -> Block:
    """Chip ``program``'s body as rank c's branch: links spelled, what it hands the host sent
    to rank 0 (c > 0) or, on rank 0, the others' received, all yielded."""
    c = program.chip_index
    body = program.body.block
    for arg, value in zip(body.args, program.inputs, strict=True):
        arg.replace_all_uses_with(value)
    branch = Block()
    for op in list(body.ops):
        op.detach()
        branch.add_op(op)
    finish = branch.last_op
    assert isinstance(finish, FinishOp)
    _unwrap_sections(branch)
    pending = _spell_links(branch, table)
    mine = dict(zip(program.outputs, finish.values, strict=True))
    end = _Builder(branch, finish)
    for requests, count in pending:
        end.wait(requests, count)
    held: list[SSAValue] = []
    for value in outputs:
        if value in mine and c == 0:
            held.append(mine[value])
        elif value in mine:
            _, ptr, count, dtype = end.buffer(mine[value])
            to, tag = end.i32(0, "to0"), end.i32(final[value], f"tag{final[value]}")
            end.add(mpi.SendOp(ptr, count, dtype, to, tag))
            held.append(_placeholder(end, value))
        elif c == 0:
            producer = value.owner
            assert isinstance(producer, ChipProgramOp)
            name = value_name(value)
            held.append(end.receive(value.type, name, producer.chip_index, final[value]))
        else:
            held.append(_placeholder(end, value))
    end.add(scf.YieldOp(*held))
    finish.detach()
    finish.erase()
    return branch


@dataclass(frozen=True)
class TpToMpi(ModulePass):
    """Write the entry's per-chip programs as one SPMD function over the ``mpi`` dialect:
    rank c runs chip c's program, links as MPI messages in the relay's routes."""

    name = _PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = entry_of(op, self.name)
        spmd(func)
        drop(op)  # tp-verify reads tp's links, not MPI messages
