"""Chip provenance: for every SSA value, the chips whose own data it lives on or derives from.

A value's `Placement` is the set of chips it lives on (a tensor type's ``#tp.chip<c>``) or is
computed from, and whether it derives from a host output (a ``tp.unshard``); no chips and no
host output is the replicated spine. It is computed for every value — tensors, scalars,
indices and ``i1``s, memrefs and vectors, block arguments, values captured by regions,
results of nested regions and of calls, casts through any type — and it includes control
dependence: everything computed inside a region op (a condition's ``scf.if``, a loop's
bounds, a ``linalg.generic``'s operands) carries the chips of that op's operands, and the op's
results carry those and whatever its regions yield. Only the collectives over every chip clear
chips: ``tp.allreduce``, ``tp.maxloc`` and the last add of the seed's fold when it is a valid
all-reduce; every other op joins.

Calls are followed into the callee, once per distinct placement of the arguments (context
sensitive); a call with no body to follow, or recursion, is *opaque*. An op that writes
memory, or whose effects are unknown, is opaque too, and so is an op tp gives no meaning to
(`kind_opacity`: another dialect than those tp runs, a memref op reading raw memory; a cast
changing what its values hold), so that tp-run runs everything a certificate holds: the
checker refuses opaque ops, never trusts them. Per-chip programs are followed across their
link points: a received buffer carries the placement of what its sender sent under that name.

Why not xDSL's dataflow framework: in xDSL 0.75 its sparse forward analysis refuses ops with
regions and does not follow calls (its region-branch and call interfaces are still to do), and
tp needs both plus links between programs. This is the same lattice idea as a small worklist:
a value's placement only grows, so each value changes at most once per chip it can reach.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    UnrealizedConversionCastOp,
    UnregisteredOp,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.traits import (
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    MemoryFreeEffect,
    MemoryWriteEffect,
    SymbolTable,
    get_effects,
)

from tp_dialect.analysis.certify.folds import Fold, find_folds, visible
from tp_dialect.attrs import chip_of
from tp_dialect.grid import chips_in, stated_chips
from tp_dialect.names import value_name
from tp_dialect.op_guards import cast_meaning
from tp_dialect.ops import Collective, SectionOp, UnshardOp
from tp_dialect.program_ops import ChipProgramOp, LinkOp, RelayOp
from tp_dialect.reject import TpReject
from tp_dialect.scatter_ops import ReduceScatterOp


@dataclass(frozen=True, slots=True)
class Placement:
    """The chips a value lives on or derives from, and whether it derives from a host output."""

    chips: frozenset[int] = frozenset()
    host: bool = False

    @property
    def spine(self) -> bool:
        return not self.chips and not self.host

    def __or__(self, other: Placement) -> Placement:
        if other.chips <= self.chips and other.host <= self.host:
            return self
        if self.chips <= other.chips and self.host <= other.host:
            return other
        return Placement(self.chips | other.chips, self.host or other.host)


SPINE = Placement()
HOST = Placement(host=True)


def declared(value: SSAValue) -> Placement:
    """What a value's type says: the chip in a tensor type's encoding (or anywhere else in the
    type, such as a memref's memory space), else nothing."""
    chip = chip_of(value.type)
    if chip is None and not isinstance(value.type, TensorType):
        chip = next(chips_in(value.type), None)
    return SPINE if chip is None else Placement(frozenset((chip,)))


def join(placements: Iterable[Placement]) -> Placement:
    out = SPINE
    for p in placements:
        out = out | p
    return out


# Ops that declare no memory effects in xDSL 0.75 but have value semantics (their results are
# functions of their operands and regions); everything else undeclared is opaque.
_VALUE_OPS = frozenset(
    {
        "bufferization.to_tensor",
        "bufferization.to_buffer",
        "bufferization.to_memref",
        "func.return",
        "builtin.unrealized_conversion_cast",
        "vector.transfer_read",  # reads its source, writes nothing
        "bufferization.alloc_tensor",  # a new tensor (of its copy operand, if any)
        "bufferization.materialize_in_destination",  # with a result: a tensor, by value
    }
)
_CONTAINERS = (ModuleOp, func.FuncOp, ChipProgramOp, RelayOp)
# What a region's contents reach no further than: ops that hand on only what their
# terminators name (sections and programs) or that are no computation (functions, modules).
_OPAQUE_BOUNDARIES = (ModuleOp, func.FuncOp, ChipProgramOp, RelayOp, SectionOp)


def _function_of(op: Operation) -> Operation | None:
    """The function ``op`` is in (None: not in one)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def _static_shape_query(op: Operation) -> bool:
    """``tensor.dim``/``memref.dim`` of a static dimension, by a constant index: the answer
    is in the type, not in the data (so it holds no chip's data)."""
    if op.name not in ("tensor.dim", "memref.dim") or len(op.operands) != 2:
        return False
    source, index = op.operands
    const = index.owner
    if not isinstance(const, arith.ConstantOp) or not isinstance(const.value, IntegerAttr):
        return False
    shape = getattr(source.type, "get_shape", lambda: ())()
    i = const.value.value.data
    return 0 <= i < len(shape) and shape[i] >= 0


# The dialects tp gives a meaning to: the reference interpreter runs every op of theirs that
# `kind_opacity` admits (tests/test_interpreter_ops.py enumerates them and runs each against
# numpy). An op of any other dialect (an ISA's, LLVM's, another runtime's) has no meaning on
# tp's tensors, so a certificate through it would certify a program nothing can run.
MEANINGFUL_DIALECTS = frozenset(
    {
        "affine",
        "arith",
        "bufferization",
        "builtin",
        "func",
        "linalg",
        "math",
        "memref",
        "scf",
        "tensor",
        "tp",
        "vector",
    }
)
# Ops of those dialects that have no meaning on tensors: memory no value defines (a write is
# refused, so it could only be read uninitialised), and a buffer's address or raw layout.
_NO_MEANING = {
    "memref.alloc": "allocates memory no value defines (memory is never written here)",
    "memref.alloca": "allocates memory no value defines (memory is never written here)",
    "memref.global": "declares global memory, which tp does not model",
    "memref.get_global": "reads global memory, which tp does not model",
    "memref.view": "reinterprets a buffer's bytes, which tp's tensors do not expose",
    "memref.reinterpret_cast": "reinterprets a buffer's layout, which tp's tensors do not expose",
    "memref.extract_aligned_pointer_as_index": "reads a buffer's address, which tp does not model",
    "memref.extract_strided_metadata": "reads a buffer's layout, which tp's tensors do not expose",
}
# Ops admitted whatever effects they declare: their contents are judged op by op.
_SEEN_THROUGH_DIALECTS = ("tp", "scf", "linalg")


def kind_opacity(kind: type[Operation]) -> tuple[TpReject, str] | None:
    """Why no op of class ``kind`` can be seen through, or None when one can (an op of the
    class may still be refused for what it is: `opacity`)."""
    if issubclass(kind, UnregisteredOp):
        return TpReject.OPAQUE_OP, "is not a registered op: what it computes is unknown"
    name = kind.name
    dialect = name.split(".", 1)[0]
    if dialect == "test":
        return TpReject.OPAQUE_OP, "is a test op: the traits it declares are not its semantics"
    if dialect not in MEANINGFUL_DIALECTS:
        return (
            TpReject.OPAQUE_OP,
            f"is an op of the {dialect} dialect, to which tp gives no meaning (it runs "
            f"{', '.join(sorted(MEANINGFUL_DIALECTS))})",
        )
    if (why := _NO_MEANING.get(name)) is not None:
        return TpReject.OPAQUE_OP, why
    if (
        dialect in _SEEN_THROUGH_DIALECTS
        or name in _VALUE_OPS
        or issubclass(kind, (*_CONTAINERS, func.CallOp))
        or kind.has_trait(IsTerminator)
    ):
        return None
    effects = kind.get_traits_of_type(MemoryEffect)
    if not effects:
        return TpReject.OPAQUE_OP, "declares no memory effects, so what it writes is unknown"
    if any(isinstance(e, MemoryWriteEffect | MemoryFreeEffect) for e in effects):
        return TpReject.OPAQUE_OP, "writes memory, which values cannot follow"
    return None


def admitted_kinds(ctx: Context) -> list[type[Operation]]:
    """Every op class of the dialects ``ctx`` loads that `kind_opacity` admits: what a
    certificate may contain (each op still judged as it stands), in name order."""
    kinds = {op for name in ctx.registered_dialect_names for op in ctx.get_dialect(name).operations}
    return sorted((k for k in kinds if kind_opacity(k) is None), key=lambda k: k.name)


def opacity(op: Operation) -> tuple[TpReject, str] | None:
    """Why the analysis cannot see through ``op`` (a reason and what is wrong), or None: its
    class (`kind_opacity`), then what this op is (its regions, operands, successors and the
    effects of what it contains)."""
    if isinstance(op, UnregisteredOp):
        return kind_opacity(UnregisteredOp)
    if isinstance(op, func.CallOp):
        return None  # followed into the callee (or found opaque there)
    if (
        isinstance(op.parent_op(), func.FuncOp)
        and op.parent_block().last_op is op  # type: ignore[union-attr]
        and op.has_trait(IsTerminator)
        and not op.successors
        and not isinstance(op, func.ReturnOp)
    ):
        # xDSL 0.75 lets a linalg.yield end a function: what it returns would go unchecked
        return TpReject.OPAQUE_OP, "ends a function in place of func.return"
    if op.name == "func.call_indirect":
        return TpReject.OPAQUE_CALL, "calls through a value: its callee cannot be followed"
    if any(len(region.blocks) > 1 for region in op.regions):
        return TpReject.OPAQUE_OP, "has a region of several blocks: structured control flow only"
    if op.dialect_name() == "test":
        return kind_opacity(type(op))
    if op.name == "bufferization.materialize_in_destination" and not op.results:
        return TpReject.OPAQUE_OP, "writes its memref destination in place"
    if op.dialect_name() == "linalg" and any(isinstance(v.type, MemRefType) for v in op.operands):
        return TpReject.OPAQUE_OP, "writes its memref operands in place"
    if op.successors:
        # Block arguments fed by branches are not followed: structured control flow only.
        return TpReject.OPAQUE_OP, "branches between blocks, which placements do not follow"
    if (why := kind_opacity(type(op))) is not None:
        return why
    if isinstance(op, UnrealizedConversionCastOp) and (why := cast_meaning(op)) is not None:
        return TpReject.OPAQUE_OP, why
    if (
        op.dialect_name() in _SEEN_THROUGH_DIALECTS
        or op.name in _VALUE_OPS
        or isinstance(op, _CONTAINERS)
        or op.has_trait(IsTerminator)
    ):
        return None  # tp's own ops, control flow and linalg (tensor semantics) are judged by
        # their contents; a terminator hands values to its region's op, which the solver follows
    effects = get_effects(op)  # what this op contains, for a recursive effect
    if effects is None:
        return TpReject.OPAQUE_OP, "declares no memory effects, so what it writes is unknown"
    if any(e.kind in (MemoryEffectKind.WRITE, MemoryEffectKind.FREE) for e in effects):
        return TpReject.OPAQUE_OP, "writes memory, which values cannot follow"
    return None


class Solver:
    """Placements of the values under ``root`` (a module, or a callee in one call context),
    to a fixpoint; ``of[v]`` is v's placement (absent: not reached, i.e. its declared one)."""

    def __init__(
        self, prov: Provenance, root: Operation, entry: Mapping[BlockArgument, Placement]
    ) -> None:
        self.prov = prov
        self.root = root
        self.entry = dict(entry)
        self.of: dict[SSAValue, Placement] = {}
        self.inner: dict[Operation, Placement] = {}  # control context inside a region op
        # Buffer names are a function's own: its chip programs' links pair up by name.
        self.sent: dict[tuple[Operation | None, str], list[SSAValue]] = {}
        self.receivers: dict[tuple[Operation | None, str], list[LinkOp]] = {}
        for op in root.walk():
            if isinstance(op, LinkOp):
                scope = _function_of(op)
                for name, value in zip(op.sends, op.sent, strict=True):
                    self.sent.setdefault((scope, name), []).append(value)
                for name in op.receives:
                    self.receivers.setdefault((scope, name), []).append(op)
        self._solve()

    def placement(self, value: SSAValue) -> Placement:
        return self.of.get(value) or declared(value)

    def sends_in(self, op: Operation) -> dict[str, SSAValue]:
        """Each buffer name sent exactly once in the function holding ``op``, with the value
        sent (for `values.origin`)."""
        scope = _function_of(op)
        return {n: vs[0] for (f, n), vs in self.sent.items() if f is scope and len(vs) == 1}

    def context(self, op: Operation) -> Placement:
        """What every value ``op`` computes depends on through the regions enclosing it."""
        parent = op.parent_op()
        return SPINE if parent is None else self.inner.get(parent, SPINE)

    def returned(self, callee: func.FuncOp) -> list[Placement]:
        """The placement of each result ``callee`` returns (joined over its returns)."""
        outs = [SPINE] * len(callee.function_type.outputs)
        for block in callee.body.blocks:
            ret = block.last_op
            if isinstance(ret, func.ReturnOp):
                outs = [o | self.placement(v) for o, v in zip(outs, ret.operands, strict=True)]
        return outs

    # -- the worklist ---------------------------------------------------------------------

    def _solve(self) -> None:
        order = [op for op in self.root.walk()]
        queue = deque(order)
        queued = set(order)
        while queue:
            op = queue.popleft()
            queued.discard(op)
            for dependent in self._eval(op):
                if dependent not in queued:
                    queued.add(dependent)
                    queue.append(dependent)

    def _set(self, value: SSAValue, p: Placement, out: list[Operation]) -> None:
        p = p | declared(value)
        old = self.of.get(value)
        new = p if old is None else old | p
        if new == old:
            return
        self.of[value] = new
        for use in value.uses:
            user = use.operation
            out.append(user)
            # What a region computes reaches its op's results (through a terminator, or any
            # nested op), and a section or program hands on what its terminator yields.
            parent = user.parent_op()
            while parent is not None and not isinstance(parent, _OPAQUE_BOUNDARIES):
                out.append(parent)
                parent = parent.parent_op()
            if isinstance(parent, SectionOp | ChipProgramOp) and user.has_trait(IsTerminator):
                out.append(parent)
            if isinstance(user, LinkOp) and use.index < len(user.sent):
                key = (_function_of(user), user.sends[use.index])
                out.extend(self.receivers.get(key, ()))

    def _set_inner(self, op: Operation, p: Placement, out: list[Operation]) -> None:
        if self.inner.get(op) == p:
            return
        self.inner[op] = p
        for region in op.regions:
            for block in region.blocks:
                out.extend(block.ops)

    def _eval(self, op: Operation) -> list[Operation]:
        out: list[Operation] = []
        if isinstance(op, func.FuncOp):
            for arg in op.body.blocks[0].args if op.body.blocks else ():
                self._set(arg, self.entry.get(arg, SPINE), out)
            return out
        if isinstance(op, ModuleOp | RelayOp):
            return out
        ctx = self.context(op)
        if isinstance(op, ChipProgramOp):
            block = op.body.block
            for arg, value in zip(block.args, op.inputs, strict=True):
                self._set(arg, self.placement(value), out)
            finish = block.last_op
            if finish is not None and len(finish.operands) == len(op.outputs):
                for res, value in zip(op.outputs, finish.operands, strict=True):
                    self._set(res, self.placement(value), out)
            return out
        if isinstance(op, SectionOp):
            self._set_inner(op, ctx, out)
            last = op.body.block.last_op
            if last is not None and len(last.operands) == len(op.outs):
                for res, value in zip(op.outs, last.operands, strict=True):
                    self._set(res, self.placement(value), out)
            return out
        if isinstance(op, LinkOp):
            for res, name in zip(op.received, op.receives, strict=True):
                sent = join(self.placement(v) for v in self.sent.get((_function_of(op), name), ()))
                self._set(res, sent | ctx, out)
            return out
        if isinstance(op, Collective) or op in self.prov.fold_sums:
            for res in op.results:  # a collective over every chip: the spine
                self._set(res, ctx, out)
            return out
        if isinstance(op, ReduceScatterOp):
            for c, res in enumerate(op.parts):  # chip c's block of the sum: its own data
                self._set(res, Placement(frozenset((c,))) | ctx, out)
            return out
        if isinstance(op, UnshardOp):
            # Like an all-reduce's sum, the host's store of every chip's slice is sanctioned:
            # it holds no chip's data as the spine sees it, but it may only be returned.
            self._set(op.result, HOST | ctx, out)
            return out
        if isinstance(op, func.CallOp):
            # The callee, followed with these arguments, says what each result holds.
            for res, p in zip(op.res, self.prov.call(self, op), strict=True):
                self._set(res, p | ctx, out)
            return out
        if isinstance(op, scf.ForOp):
            return self._for(op, ctx, out)
        if isinstance(op, scf.IfOp):
            return self._if(op, ctx, out)
        if _static_shape_query(op):
            for res in op.results:  # a static size is the type's, the same on every chip
                self._set(res, ctx | join(self.placement(v) for v in op.operands[1:]), out)
            return out
        inputs = join(self.placement(v) for v in op.operands) | ctx
        if op.regions:
            # Any region op: everything inside depends on all its operands, and its results
            # (and block arguments) on those and on everything computed anywhere inside it:
            # every nested result, and what every nested terminator hands on (the only ways
            # a value inside reaches out, effects being refused).
            self._set_inner(op, inputs, out)
            held = inputs | join(
                self.placement(v)
                for inner in op.walk()
                if inner is not op
                for v in (
                    (*inner.results, *inner.operands)
                    if inner.has_trait(IsTerminator)
                    else inner.results
                )
            )
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        self._set(arg, held, out)
            for res in op.results:
                self._set(res, held, out)
            return out
        for res in op.results:
            self._set(res, inputs, out)
        return out

    def _for(self, op: scf.ForOp, ctx: Placement, out: list[Operation]) -> list[Operation]:
        """A loop: its body runs as often as its bounds say (control), each iteration
        argument holds its initial value and what the body yields for it."""
        control = ctx | join(self.placement(v) for v in (op.lb, op.ub, op.step))
        self._set_inner(op, control, out)
        block = op.body.block
        self._set(block.args[0], control, out)
        yielded = block.last_op.operands if block.last_op is not None else ()
        for i, (init, res) in enumerate(zip(op.iter_args, op.res, strict=True)):
            held = control | self.placement(init)
            if i < len(yielded):
                held = held | self.placement(yielded[i])
            self._set(block.args[i + 1], held, out)
            self._set(res, held, out)
        return out

    def _if(self, op: scf.IfOp, ctx: Placement, out: list[Operation]) -> list[Operation]:
        """A choice: each result holds what either branch yields for it, and the condition."""
        control = ctx | self.placement(op.cond)
        self._set_inner(op, control, out)
        for i, res in enumerate(op.output):
            held = control
            for region in op.regions:
                last = region.block.last_op if region.blocks else None
                if last is not None and i < len(last.operands):
                    held = held | self.placement(last.operands[i])
            self._set(res, held, out)
        return out


class Provenance:
    """Chip provenance of a whole module: every function (with its arguments as their types
    state), every call context of every callee, every per-chip program.

    ``placement(v)`` answers for the module as written; `solvers` lists it and each callee
    context, which is what a checker walks; `opaque` holds what could not be seen through.
    """

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.n_chips = stated_chips(module) or 1
        self.folds = list(find_folds(module))
        valid = [f for f in self.folds if f.is_allreduce(self.n_chips)]
        self.fold_sums: frozenset[Operation] = frozenset(f.ops[-1] for f in valid)
        self.fold_of: dict[Operation, Fold] = {op: f for f in self.folds for op in f.ops}
        # A valid fold's partial sums are spine-typed yet hold several chips' data; only the
        # next add reads them (find_folds ends a chain at any other reader).
        self.partial_sums: frozenset[SSAValue] = frozenset(
            v for f in valid for op in f.ops[:-1] for v in {op.results[0], visible(op)}
        )
        self.opaque: dict[Operation, tuple[TpReject, str]] = {}
        self._contexts: dict[tuple[func.FuncOp, tuple[Placement, ...]], Solver] = {}
        # Each followed call's context (the callee with these argument placements).
        self.context_of: dict[func.CallOp, tuple[func.FuncOp, tuple[Placement, ...]]] = {}
        self._active: set[func.FuncOp] = set()
        for op in module.walk():
            if (why := opacity(op)) is not None:
                self.opaque[op] = why
        self.top = Solver(self, module, self._declared_args(module))

    @staticmethod
    def _declared_args(module: ModuleOp) -> dict[BlockArgument, Placement]:
        return {
            arg: declared(arg)
            for op in module.walk()
            if isinstance(op, func.FuncOp) and op.body.blocks
            for arg in op.body.blocks[0].args
        }

    def placement(self, value: SSAValue) -> Placement:
        """The placement of ``value`` in the module as written."""
        return self.top.placement(value)

    @property
    def solvers(self) -> list[Solver]:
        """The module's solver, then one per callee call context, in the order found."""
        return [self.top, *self._contexts.values()]

    def call(self, caller: Solver, op: func.CallOp) -> list[Placement]:
        """The placement of each result of ``op`` (its callee followed with these
        arguments), or of all arguments joined when the callee cannot be followed."""
        args = tuple(caller.placement(v) for v in op.arguments)
        fallback = [join(args)] * len(op.res)
        callee = SymbolTable.lookup_symbol(op, op.callee)
        name = op.callee.string_value()
        if not isinstance(callee, func.FuncOp) or callee.is_declaration:
            self.opaque[op] = (
                TpReject.OPAQUE_CALL,
                f"calls @{name}, which has no body in the module to follow",
            )
            return fallback
        if any(isinstance(o, ChipProgramOp | RelayOp) for o in callee.walk()):
            self.opaque[op] = (
                TpReject.OPAQUE_CALL,
                f"calls @{name}, a host function with chip programs: only the host runs one",
            )
            return fallback
        if callee in self._active:
            self.opaque[op] = (
                TpReject.OPAQUE_CALL,
                f"calls @{name} recursively: a recursion's placements cannot be followed",
            )
            return fallback
        key = (callee, args)
        self.context_of[op] = key
        if key not in self._contexts:
            self._active.add(callee)
            try:
                entry = dict(zip(callee.body.blocks[0].args, args, strict=True))
                self._contexts[key] = Solver(self, callee, entry)
            finally:
                self._active.discard(callee)
        return self._contexts[key].returned(callee)

    def check_call(self, call: func.CallOp, callee: func.FuncOp) -> None:
        """A lowered call hands ``callee`` nothing beyond what its arguments' types declare
        (a spine argument no chip's data, a chip-typed one only that chip's): ``callee``'s
        statements are placed once, by those types, for every call. A ``section-chip``
        diagnostic at the call otherwise."""
        name = callee.sym_name.data
        for i, (v, arg) in enumerate(zip(call.arguments, callee.body.block.args, strict=True)):
            extra = self.placement(v).chips - declared(arg).chips
            if extra:
                chip = chip_of(arg.type)
                want = f"chip {chip}'s" if chip is not None else "a spine"
                raise TpReject.SECTION_CHIP.at(
                    call,
                    f"'func.call' hands @{name} %{value_name(v)}, chip {min(extra)}'s data, "
                    f"for argument #{i} (%{value_name(arg)}), {want} argument: @{name}'s "
                    "statements are placed once, by its arguments' types, for every call",
                )

    def callee_context(self, op: func.CallOp) -> Solver | None:
        """The solver of the context ``op`` calls its callee in (None: not followed)."""
        key = self.context_of.get(op)
        return None if key is None else self._contexts.get(key)

    def chips(self, value: SSAValue) -> frozenset[int]:
        """The chips ``value`` lives on or derives from (empty: the spine)."""
        return self.placement(value).chips

    def home(self, value: SSAValue) -> frozenset[int]:
        """The chips ``value`` lives on: its type's chip when the type states one (a tensor
        handed from one chip to another lives where its type says), else the chips it derives
        from (a scalar read out of chip 1's tensor lives on chip 1); empty: the spine."""
        chip = chip_of(value.type)
        return frozenset((chip,)) if chip is not None else self.placement(value).chips

    def runs_everywhere(self, op: Operation) -> bool:
        """Whether the statement ``op`` runs on every chip (`statement_chips` lists them
        all): a collective, a fold's add, or spine work (nothing it binds lives on a chip).
        Answered without building that list."""
        if isinstance(op, Collective | ReduceScatterOp) or op in self.fold_of:
            return True
        if isinstance(op, UnshardOp):
            return False
        return not any(self.home(r) for r in op.results)

    def statement_chips(self, op: Operation) -> list[int]:
        """The chips a statement runs on: where what it binds lives (`home`: scalars
        included); every chip for the spine, a collective or a fold's add; a host store's
        parts' chips. Raises MIXED_CHIPS when what it binds lives on several chips. The
        list of every chip is built only for a statement that runs on every chip: N is what
        the input states, and a chip statement costs nothing per chip of the grid."""
        if isinstance(op, Collective | ReduceScatterOp) or op in self.fold_of:
            return list(range(self.n_chips))
        if isinstance(op, UnshardOp):
            return sorted({c for p in op.parts for c in self.home(p)})
        chips = sorted({c for r in op.results for c in self.home(r)})
        if len(chips) > 1:
            raise TpReject.MIXED_CHIPS.at(
                op,
                f"'{op.name}' binds %{value_name(op.results[0])} on chips {chips}: a "
                "statement runs on one chip's data (and the spine)",
            )
        return chips or list(range(self.n_chips))
