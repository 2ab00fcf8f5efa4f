"""Calls in a program the passes lower: which functions are lowered once, and what a call does.

An outlined decoder (``tp-gen --outline``) is ``@decode`` calling ``@layer`` once a layer.
The lowering passes place the callee's statements ONCE, for every call, and keep the calls:

- A function *holds chip work* when anything in it lives on or is placed on a chip: a value
  or argument of a chip's type, a ``tp.shard``, ``tp.unshard``, ``tp.allreduce`` or
  ``tp.maxloc``, a section, transfer or barrier, or a call to a function that holds chip work.
- A call to such a function (a *lowered call*) is a bare statement of its caller: never
  wrapped in a ``tp.section`` — its callee holds the sections —, it stands alone in a phase
  of its caller (its callee's phases run in it, in order), and what crosses chips for it
  crosses in the caller, before the call. A call anywhere else (inside a section or another
  op's region) is refused at the call: sections never nest.
- A call to a function holding no chip work is ordinary spine or chip work: it is sectioned
  where it stands, its callee left as it is (run inside that section).

`lowered_functions` lists the entry and every function its lowered calls reach, callees
before callers, refusing recursion at the call and a call handing one storage to two
parameters of which its callee writes one in place (`check_aliases`: the callee's
statements are ordered once, by the storages its parameters name); `placed_functions` the
functions tp-relocate sections (`Provenance.check_call` checks that a lowered call hands its
callee only what the callee's argument types place: its statements are placed once, by
those types, for every call).
What a lowered call reads and where its results are held, as a statement of its caller, is
`tp_dialect.analysis.calls.summary`.

What each pass does with calls, and why: docs/outlining.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Operation, SSAValue

from tp_dialect.analysis.touch import storage, written_in_place
from tp_dialect.analysis.values import callee
from tp_dialect.attrs import chip_of
from tp_dialect.names import value_name
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    MaxLocOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
)
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.reject import TpReject

_CHIP_OPS = (
    ShardOp,
    UnshardOp,
    AllReduceOp,
    MaxLocOp,
    SectionOp,
    TransferOp,
    BarrierOp,
    ChipProgramOp,
)


class ChipWork:
    """Which functions of a module hold chip work (module docstring), and which place work
    (hold a section, transfer or barrier, at any call depth), each answered once: a
    function's own ops are read once, and what it reaches through calls (cycles included)
    by a walk of the call graph."""

    def __init__(self) -> None:
        self._own: dict[FuncOp, tuple[bool, bool, list[FuncOp]]] = {}
        self._holds: dict[FuncOp, bool] = {}
        self._places: dict[FuncOp, bool] = {}

    def holds(self, func: FuncOp) -> bool:
        """Whether ``func`` holds chip work, itself or in a function it calls."""
        if func not in self._holds:
            self._holds[func] = self._reaches(func, 0)
        return self._holds[func]

    def places(self, func: FuncOp) -> bool:
        """Whether ``func`` places work on chips: a ``tp.section``, ``tp.transfer`` or
        ``tp.barrier`` in it or in a function it calls."""
        if func not in self._places:
            self._places[func] = self._reaches(func, 1)
        return self._places[func]

    def _reaches(self, func: FuncOp, which: int) -> bool:
        """Whether a function ``func`` reaches through calls (itself included) holds chip
        work (``which`` 0) or places work (1) among its own ops."""
        seen, todo = {func}, [func]
        while todo:
            own = self._own_ops(todo.pop())
            if own[which]:
                return True
            for g in own[2]:
                if g not in seen:
                    seen.add(g)
                    todo.append(g)
        return False

    def _own_ops(self, func: FuncOp) -> tuple[bool, bool, list[FuncOp]]:
        """Whether ``func``'s own ops (and signature) hold chip work, place work, and the
        functions it calls."""
        if func not in self._own:
            types = (*func.function_type.inputs, *func.function_type.outputs)
            holds = any(chip_of(t) is not None for t in types)
            places = False
            called: list[FuncOp] = []
            for op in func.walk():
                places = places or isinstance(op, SectionOp | TransferOp | BarrierOp)
                holds = holds or isinstance(op, _CHIP_OPS)
                holds = holds or any(chip_of(r.type) is not None for r in op.results)
                if isinstance(op, CallOp) and (f := callee(op)) is not None:
                    called.append(f)
            self._own[func] = (holds, places, called)
        return self._own[func]

    def lowered(self, op: Operation) -> FuncOp | None:
        """The callee of ``op`` when it is a call to a function holding chip work."""
        if not isinstance(op, CallOp):
            return None
        f = callee(op)
        return f if f is not None and self.holds(f) else None


def lowered_functions(entry: FuncOp, work: ChipWork) -> list[FuncOp]:
    """``entry`` and every function its lowered calls reach, callees before their callers
    (each once). Raises, at the call: a lowered call that is not a statement of its function
    (``section-chip``: inside a section or another op's region, sections would nest),
    recursion (``opaque-call``: a function lowered once cannot contain itself) and one
    storage handed to two parameters of which the callee writes one in place
    (``aliased-arguments``, `check_aliases`)."""
    order: list[FuncOp] = []
    done: set[FuncOp] = set()

    def visit(func: FuncOp, path: tuple[FuncOp, ...]) -> None:
        for call, f in _lowered_calls(func, work):
            if f in path:
                raise TpReject.OPAQUE_CALL.at(
                    call,
                    f"'func.call' calls @{f.sym_name.data} recursively: a function whose "
                    "statements are placed once cannot contain itself",
                )
            if f not in done:
                visit(f, (*path, f))
            check_aliases(call, f)
        done.add(func)
        order.append(func)

    visit(entry, (entry,))
    return order


def placed_functions(module: ModuleOp, work: ChipWork) -> list[FuncOp]:
    """The functions of ``module`` whose statements tp-relocate places: every function with
    a body but those a call reaches that hold no chip work (such a call is sectioned where it
    stands, its callee run inside the section). Lowered calls nested in other work, and
    recursion through lowered calls, are refused (`lowered_functions`) from every function
    no call reaches."""
    funcs = [f for f in module.walk() if isinstance(f, FuncOp) and f.body.blocks]
    called = {f for c in module.walk() if isinstance(c, CallOp) and (f := callee(c))}
    for root in funcs:
        if root not in called:
            lowered_functions(root, work)
    return [f for f in funcs if f not in called or work.holds(f)]


def check_aliases(call: CallOp, func: FuncOp) -> None:
    """A lowered call hands no storage to two parameters of ``func`` of which ``func`` (or a
    function it calls) writes one in place; an ``aliased-arguments`` diagnostic at the call
    otherwise, naming both parameters. ``func``'s statements are ordered once, for every
    call (tp-relocate's epilogue, tp-fuse, tp-phase, the per-chip functions tp-link-points
    writes and the relay running them), by the storages its parameters name: two parameters
    are two storages, so a read of one may be moved past an in-place write of the other.
    Storage is `touch.storage`'s: the same SSA value, an in-place update's result and its
    destination, a section's out and what it yields, a call's result handing back an
    argument (each ``tp.shard`` loads a copy of its own)."""
    written = set(written_in_place(func))
    params = func.body.block.args
    first: dict[SSAValue, int] = {}  # storage -> the first parameter handed it
    for i, value in enumerate(call.arguments):
        held = storage(value)
        j = first.setdefault(held, i)
        if j == i or not {params[i], params[j]} & written:
            continue
        name = func.sym_name.data
        a, b = (i, j) if params[i] in written else (j, i)
        raise TpReject.ALIASED_ARGUMENTS.at(
            call,
            f"'func.call' hands @{name} one storage, %{value_name(held)}, for argument "
            f"#{j} (%{value_name(params[j])}) and argument #{i} (%{value_name(params[i])}), "
            f"and @{name} writes %{value_name(params[a])} in place: its statements are "
            f"ordered once, for every call, as if %{value_name(params[a])} and "
            f"%{value_name(params[b])} were two (hand it two storages, or inline the call "
            "before lowering: tp-inline)",
        )


def _lowered_calls(func: FuncOp, work: ChipWork) -> Iterator[tuple[CallOp, FuncOp]]:
    for op in func.walk():
        if (f := work.lowered(op)) is None:
            continue
        assert isinstance(op, CallOp)
        parent = op.parent_op()
        if parent is not func:
            where = f"inside a '{parent.name}'" if parent is not None else "outside a function"
            raise TpReject.SECTION_CHIP.at(
                op,
                f"'func.call' calls @{f.sym_name.data}, which holds chip work, {where}: a "
                "call to it is a statement of a function (its callee places its own work; "
                "sections never nest)",
            )
        yield op, f
