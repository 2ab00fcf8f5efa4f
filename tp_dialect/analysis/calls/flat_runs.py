"""How the model follows lowered calls: an outlined program read as its flat program.

An outlined program (``tp-gen --outline``: ``@decode`` calling ``@layer`` once a layer) is
modelled at the sectioned and phased stages as it stands, never inlined. Each lowered call
(`tp_dialect.analysis.calls.outlined`: a bare statement calling a function that holds chip work)
opens a `Frame`, one run of its callee inside its caller's frame; the entry function's run is
the root frame. A value seen in a frame stands for the value of the flat program tp-inline
makes of the module (and, at the per-chip stage, of the flat per-chip programs):

- `Runs.ref`: a callee's argument is its call's operand (in the caller's frame), a call's
  result is what its callee returns (in the call's frame); any other value is the frame's own
  copy, ``(frame, value)`` — two calls of one callee compute two copies, as two inlined
  bodies do.
- `Runs.storage`, `Runs.origin`: `touch.storage` and `values.origin` followed across frames
  the same way, so buffers, host data and liveness are keyed per copy.
- names: a frame's labels and value names are the inlined copy's — a name written once for
  every layer (``l_…``) takes its call's layer tag by tp-inline's rule (`call_tag`: the
  call's ``tp.layer``, else the first `layer_tag` among its result names; `in_layer`),
  innermost call first (callees are inlined before their callers); a value the callee
  returns from one of its statements takes the call's result name.
- order: `Runs.walk` lists a frame's statements in program order with each lowered call's
  callee run in its place, the inlined program's statement order; `Runs.phases` a phased
  program's phases with each call's phase replaced by its callee's phases, in order, the
  numbering tp-inline gives the flat program (`tp_dialect.passes.phase.renumber`).

Invariant: every figure read through a `Runs` equals the figure read from the flat program
(the same statements in the same order, storages equal exactly when the flat program's are,
the same labels); a program with no lowered call is its own single root frame. Per-chip
programs calling per-chip functions (tp-link-points on an outlined program) open a frame for
each such call too, inside the root frame: the flat per-chip programs' values, names and
buffers. What depends
only on a function's IR (its statements, its phase groups) is computed once per function, not
once per call; the model's own per-statement caches (costs, touches, memory events) are keyed
by the callee's op for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import IntegerAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from tp_dialect.analysis.calls.chip_runs import chip_function, tag_of
from tp_dialect.analysis.calls.outlined import ChipWork
from tp_dialect.analysis.touch import SectionTouch, is_constant, statements, storage
from tp_dialect.analysis.values import origin
from tp_dialect.errors import TpError
from tp_dialect.names import call_tag, in_layer, value_name
from tp_dialect.ops import SectionOp, ShardOp, TransferOp
from tp_dialect.program_ops import ChipProgramOp

PHASE_ATTR = "tp.phase"


class CallError(TpError):
    """A program whose lowered calls cannot be followed (recursion, a call sharing a phase)."""


@dataclass(eq=False)
class Frame:
    """One run of ``func``: the entry function's (``call`` None) or the run a lowered call
    makes, inside its caller's frame ``parent``; ``tag`` is the call's `call_tag`."""

    func: FuncOp
    call: CallOp | None = None
    parent: Frame | None = None
    tag: str | None = None
    children: dict[Operation, Frame] = field(default_factory=dict[Operation, "Frame"])
    operands: tuple[SSAValue, ...] = ()  # the call's operands, bound to ``func``'s arguments
    returned: tuple[SSAValue, ...] = ()  # what ``func`` returns, the call's results
    block: Block = field(init=False)  # ``func``'s body

    def __post_init__(self) -> None:
        self.block = self.func.body.block
        if self.call is not None:
            ret = self.block.last_op
            assert isinstance(ret, ReturnOp)  # `analysis.values.callee` checked it
            self.operands = tuple(self.call.arguments)
            self.returned = tuple(ret.operands)


Ref = tuple[Frame, SSAValue]
"""A value of the flat program: a frame and the value as its function spells it."""

HeldKey = tuple[int, int | None, tuple[tuple[int, int], ...]]
"""Host data a chip may hold: (entry argument, axis, ranges) of a shard, (argument, None, ())
for an argument read whole."""


class Runs:
    """The runs of ``func`` and of every function its lowered calls reach (module docstring),
    with the flat program's values, storages, origins and names read across them, each
    answered once (memoized per frame and value)."""

    def __init__(self, func: FuncOp, work: ChipWork | None = None) -> None:
        self.entry = func
        self.root = Frame(func)
        self._work = work or ChipWork()
        self._statements: dict[FuncOp, list[Operation]] = {}
        self._storage: dict[Ref, Ref] = {}
        self._origin: dict[Ref, Ref] = {}
        self._local_storage: dict[SSAValue, SSAValue] = {}
        self._local_origin: dict[SSAValue, SSAValue] = {}
        self._host: dict[Ref, bool] = {}
        self._fixed_host: dict[SSAValue, object] = {}
        self._held_shape: dict[SSAValue, object] = {}
        self._arguments: dict[tuple[Frame, int], BlockArgument | None] = {}
        self._renamed: dict[Frame, dict[SSAValue, int]] = {}
        self._held: dict[Ref, HeldKey | None] = {}
        self._groups: dict[FuncOp, list[list[Operation]] | None] = {}
        # The model's figures that depend only on an op or a function (a function's placed
        # sections, say), kept once for every frame that runs it.
        self.cache: dict[object, Any] = {}
        # Every run: the entry's first, then in program order (a caller before its calls).
        self.frames: list[Frame] = []
        self._unfold(self.root, (func,))

    # -- structure -------------------------------------------------------------------------

    def statements(self, func: FuncOp) -> list[Operation]:
        """``func``'s top-level statements in program order (`touch.statements`), once."""
        if func not in self._statements:
            self._statements[func] = statements(func)
        return self._statements[func]

    def _unfold(self, frame: Frame, path: tuple[FuncOp, ...]) -> None:
        self.frames.append(frame)
        for op in self.statements(frame.func):
            f = self._work.lowered(op)
            if f is None:
                continue
            assert isinstance(op, CallOp)
            if f in path:
                raise CallError(
                    f"'func.call' calls @{f.sym_name.data} recursively: a function lowered "
                    "once cannot contain itself"
                )
            child = Frame(f, op, frame, call_tag(op))
            frame.children[op] = child
            self._unfold(child, (*path, f))
        if frame is self.root:
            # Per-chip programs' calls to per-chip functions: each a run of its own, one
            # level deep (`tp_dialect.analysis.calls.chip_runs`), tagged by the call's ``tp.tag``.
            for program in self.statements(frame.func):
                if not isinstance(program, ChipProgramOp):
                    continue
                for op in program.body.block.ops:
                    if (f := chip_function(op)) is not None:
                        assert isinstance(op, CallOp)
                        child = Frame(f, op, frame, tag_of(op) or None)
                        frame.children[op] = child
                        self.frames.append(child)

    def lowered(self, op: Operation) -> bool:
        """Whether ``op`` is a lowered call (its callee runs in a frame of its own)."""
        return self._work.lowered(op) is not None

    @property
    def flat(self) -> bool:
        """Whether the program has no lowered call (one frame: the entry's)."""
        return len(self.frames) == 1

    def functions(self) -> list[FuncOp]:
        """Each function some frame runs, once, in order of first run."""
        return list(dict.fromkeys(f.func for f in self.frames))

    def walk(self, frame: Frame | None = None) -> Iterator[tuple[Frame, Operation]]:
        """Every statement ``frame`` (default: the entry's) runs, with each lowered call's
        callee run in the call's place: the inlined program's statements, in order."""
        frame = frame or self.root
        for op in self.statements(frame.func):
            child = frame.children.get(op)
            if child is None:
                yield frame, op
            else:
                yield from self.walk(child)

    # -- phases ----------------------------------------------------------------------------

    def groups(self, func: FuncOp) -> list[list[Operation]] | None:
        """``func``'s statements grouped by their ``tp.phase``, phases in order, program
        order within one (computed once per function); None unless every statement (lowered
        calls included) carries a ``tp.phase``. A lowered call must stand alone in its phase
        (tp-phase places it on every chip its caller uses): `CallError` otherwise."""
        if func not in self._groups:
            by_phase: dict[int, list[Operation]] = {}
            for op in self.statements(func):
                phase = op.attributes.get(PHASE_ATTR)
                if not isinstance(phase, IntegerAttr):
                    self._groups[func] = None
                    return None
                by_phase.setdefault(phase.value.data, []).append(op)
            groups = [by_phase[p] for p in sorted(by_phase)]
            for group in groups:
                call = next((op for op in group if self._work.lowered(op) is not None), None)
                if call is not None and len(group) > 1:
                    raise CallError(
                        f"'func.call' of @{func.sym_name.data} shares phase "
                        f"{call.attributes[PHASE_ATTR].value.data} with other statements: a "  # type: ignore[attr-defined]
                        "lowered call stands alone in its phase (tp-phase)"
                    )
            self._groups[func] = groups
        return self._groups[func]

    @property
    def phased(self) -> bool:
        """Whether every statement of every function run carries a ``tp.phase``."""
        return all(self.groups(f) is not None for f in self.functions())

    def phases(self, frame: Frame | None = None) -> Iterator[list[tuple[Frame, Operation]]]:
        """A phased program's phases (`phased`), in order: each phase of ``frame`` (default:
        the entry's), a lowered call's phase replaced by its callee's phases in order."""
        frame = frame or self.root
        groups = self.groups(frame.func)
        assert groups is not None, "phases() of a program that is not phased"
        for group in groups:
            child = frame.children.get(group[0])
            if child is None:
                yield [(frame, op) for op in group]
            else:
                yield from self.phases(child)

    # -- values ----------------------------------------------------------------------------

    def ref(self, frame: Frame, value: SSAValue) -> Ref:
        """The flat program's value ``value`` of ``frame`` is (module docstring)."""
        if isinstance(value, OpResult) and value.op not in frame.children:
            return frame, value  # the frame's own (most values: a quick answer)
        while True:
            if isinstance(value, BlockArgument):
                parent = frame.parent
                if parent is None or value.owner is not frame.block:
                    return frame, value
                frame, value = parent, frame.operands[value.index]
            elif isinstance(value, OpResult) and (child := frame.children.get(value.op)):
                frame, value = child, child.returned[value.index]
            else:
                return frame, value

    def storage(self, frame: Frame, value: SSAValue) -> Ref:
        """`touch.storage` of ``value`` in ``frame``, followed across frames: the flat
        program's buffer."""
        return self._follow(frame, value, storage, self._local_storage, self._storage)

    def origin(self, frame: Frame, value: SSAValue) -> Ref:
        """`values.origin` of ``value`` in ``frame``, followed across frames."""
        return self._follow(frame, value, origin, self._local_origin, self._origin)

    def _follow(
        self,
        frame: Frame,
        value: SSAValue,
        step: Callable[[SSAValue], SSAValue],
        local: dict[SSAValue, SSAValue],
        memo: dict[Ref, Ref],
    ) -> Ref:
        """``step`` (storage or origin: each ends where it ends) within a function, then
        across frames (`ref`), until neither moves. ``step``'s answer for a value is the
        same in every frame, so it is kept per value (``local``); the whole per frame and
        value (``memo``)."""
        s = local.get(value)
        if s is None:
            s = local[value] = step(value)
        if isinstance(s, OpResult) and s.op not in frame.children:
            return frame, s  # the frame's own: no frame to cross
        key = (frame, value)
        found = memo.get(key)
        if found is None:
            f = frame
            while True:
                g, w = self.ref(f, s)
                if g is f and w is s:
                    break
                f = g
                s = local.get(w)
                if s is None:
                    s = local[w] = step(w)
            found = memo[key] = (f, s)
        return found

    def host_argument(self, frame: Frame, value: SSAValue) -> BlockArgument | None:
        """The entry function's argument ``value`` stands for, if it is one (through
        sections, chip programs and calls)."""
        f, root = self.origin(frame, value)
        if f is self.root and isinstance(root, BlockArgument):
            if root.owner is self.entry.body.block:
                return root
        return None

    def is_host(self, frame: Frame, value: SSAValue) -> bool:
        """Host data every chip holds its own copy of: an entry argument (seen through
        sections, chip programs and calls) or a constant (`core.is_host`)."""
        fixed = self._fixed_host.get(value)
        if fixed is None:
            fixed = self._fixed_host[value] = _fixed_host(value)
        if fixed is not _DEPENDS:
            return fixed  # the same in every frame
        key = (frame, value)
        found = self._host.get(key)
        if found is None:
            f, v = self.ref(frame, value)
            found = self.host_argument(f, v) is not None or (
                not isinstance(v, BlockArgument) and is_constant(v.owner)  # type: ignore[arg-type]
            )
            self._host[key] = found
        return found

    def held_key(self, frame: Frame, value: SSAValue) -> HeldKey | None:
        """The host data ``value``'s storage is, if it is host data (`memory` module
        docstring): a shard of an entry argument, or an entry argument read whole."""
        shape = self._held_shape.get(value)
        if shape is None:
            shape = self._held_shape[value] = _held_shape(value)
        if shape is _NEVER:
            return None  # the function's own buffer in every frame
        if isinstance(shape, tuple):  # a shard of the function's argument i
            i, axis, ranges = shape
            arg = self._argument(frame, i)
            return None if arg is None else (arg.index, axis, ranges)
        key = self.storage(frame, value)
        if key in self._held:
            return self._held[key]
        f, root = self.origin(*key)
        found: HeldKey | None = None
        if f is self.root and isinstance(root, BlockArgument):
            if root.owner is self.entry.body.block:
                found = (root.index, None, ())
        elif isinstance(owner := root.owner, ShardOp):
            if (arg := self.host_argument(f, owner.source)) is not None:
                found = (arg.index, owner.slice.axis_index, tuple(owner.slice.ranges))
        self._held[key] = found
        return found

    def _argument(self, frame: Frame, i: int) -> BlockArgument | None:
        """`host_argument` of ``frame``'s function's argument ``i`` (once per frame)."""
        key = (frame, i)
        if key not in self._arguments:
            arg = frame.block.args[i]
            self._arguments[key] = self.host_argument(frame, arg)
        return self._arguments[key]

    def touch(self, frame: Frame, op: SectionOp | TransferOp, base: SectionTouch) -> SectionTouch:
        """``base`` (`touch.touch` of ``op``, in its function's terms) with every storage the
        flat program's (`storage`): the statement's touch in the inlined program, up to the
        renaming of its buffers."""
        if self.flat:
            return base

        def keys(ks: frozenset[tuple[SSAValue, int]]) -> frozenset[tuple[SSAValue, int]]:
            return frozenset((self.storage(frame, s), c) for s, c in ks)  # type: ignore[misc]

        return SectionTouch(op, base.chips, keys(base.reads), keys(base.writes), keys(base.copies))

    # -- names -----------------------------------------------------------------------------

    def retag(self, frame: Frame, text: str) -> str:
        """``text`` (a label or name of ``frame``'s function) as the inlined copy spells it:
        each enclosing call's tag applied, innermost first (`in_layer`)."""
        while frame.parent is not None:
            if frame.tag is not None:
                text = in_layer(text, frame.tag)
            frame = frame.parent
        return text

    def name(self, frame: Frame, value: SSAValue) -> str:
        """``value``'s name in the flat program (`names.value_name` of its inlined copy)."""
        f, v = self.ref(frame, value)
        while f.call is not None and f.parent is not None:
            j = self._returned_as(f).get(v)
            if j is None:
                break
            f, v = f.parent, f.call.results[j]
        return self.retag(f, value_name(v))

    def _returned_as(self, frame: Frame) -> dict[SSAValue, int]:
        """The values ``frame``'s callee returns from its own statements, each with the call
        result whose name tp-inline gives it (the last named one)."""
        found = self._renamed.get(frame)
        if found is None:
            found = {}
            block = frame.block
            ret = block.last_op
            assert isinstance(ret, ReturnOp) and frame.call is not None
            for j, (v, r) in enumerate(zip(ret.operands, frame.call.results, strict=True)):
                if isinstance(v, OpResult) and v.op.parent is block and r.name_hint:
                    found[v] = j
            self._renamed[frame] = found
        return found

    def label(self, frame: Frame, op: Operation) -> str:
        """A statement's name in reports (`core.label_of`) as the flat program spells it."""
        if isinstance(op, SectionOp):
            return self.retag(frame, op.label.data) if op.label else ""
        if isinstance(op, TransferOp):
            return self.name(frame, op.input)
        return ""


_DEPENDS = object()
"""`_fixed_host` of a value whose being host data depends on the frame."""


def _fixed_host(value: SSAValue) -> object:
    """Whether ``value`` is host data in every frame (a constant: True; the result of an op
    whose origin is no argument and no call: False), or `_DEPENDS`."""
    if isinstance(value, OpResult) and not isinstance(value.op, CallOp):
        root = origin(value)
        if isinstance(root, OpResult) and not isinstance(root.op, CallOp):
            return is_constant(value.op)
    return _DEPENDS


_NEVER = object()
"""`_held_shape` of a value whose storage is never host data, whatever the frame."""


def _held_shape(value: SSAValue) -> object:
    """What `Runs.held_key` of ``value`` depends on, the same in every frame: `_NEVER` (its
    storage's origin is an op's result, neither a shard's nor a call's), (i, axis, ranges)
    for a ``tp.shard`` of its function's argument i (the key is that argument's entry
    argument in the frame), or `_DEPENDS`."""
    root = origin(storage(value))
    if not isinstance(root, OpResult) or isinstance(root.op, CallOp):
        return _DEPENDS
    owner = root.op
    if not isinstance(owner, ShardOp):
        return _NEVER
    source = origin(owner.source)
    func = owner.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    if isinstance(source, BlockArgument) and isinstance(func, FuncOp):
        if source.owner is func.body.block:
            return (source.index, owner.slice.axis_index, tuple(owner.slice.ranges))
    return _DEPENDS
