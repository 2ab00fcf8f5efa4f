"""tp-split on an outlined program: ``@decode`` calls ``@layer`` once a layer; ``@layer`` is
split once, and the calls are left as they are.

Invariants (the result runs bitwise as the flat split of the inlined program, and reads the
same loads):

- **The entry** (``@decode``) keeps its ports and is split as a flat program is, except at a
  ``func.call`` to a function of the module that `values.callee` can follow: the call passes
  whole values only. An entry argument the plan cuts is handed whole (the callee loads its
  runs), a partial sum is all-reduced before the call (as before any reader), and a value
  cut inside the entry is refused (``cannot-split``).
- **One cut per callee argument.** The plan's entries match the entry's ports (HF names);
  the callee's argument i takes the cut the plan gives the entry argument each call hands it
  (an argument the entry computes is whole). Every call must give the same cut — the axis
  and the chips' runs, which the entry's style and layout decide — else ``plan-mismatch``,
  located at the later call, naming the argument and both calls.
- **Loads.** A callee argument that every call hands an entry argument is a host value:
  where the callee needs its chips' runs it loads them by ``tp.shard`` of the argument, as
  the flat split shards the entry's argument; the manifest follows each call to the entry
  argument, so the loads (tensor, chip, slice) are the flat split's. Any other argument is
  cut on the chips by ``tensor.extract_slice``: the same numbers, but where one call hands
  it an entry argument (layer 0's hidden state) the flat split would load that by
  ``tp.shard``, so the outlined manifest lists one load fewer.
- **Whole outputs.** The callee's results stay whole, so neither its signature nor the
  entry's ports change: a partial sum is all-reduced inside the callee, and a cut value (a
  KV cache) is stored by ``tp.unshard`` inside it, as ``tp-gen --outline`` writes a sharded
  program. A ``tp.unshard`` result is a host output that may only be returned: a call result
  the callee stored so may be read only by the entry's ``func.return`` (where the flat split
  unshards too); any other reader is refused (``cannot-split``).
- **Which calls are followed**: a callee whose every call is a statement of the entry's
  body. A callee also called elsewhere (inside a region, from another function, by itself)
  or without a one-block body is left whole: its calls are the spine when handed no cut
  value, else refused (``cannot-split``, the flat rule for an op without one).

The loads equal the flat split's when each entry argument is handed to one call (the
outlined form ``tp-gen`` writes); an argument handed to several calls is loaded once per
call, where the flat split loads it once.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import BlockArgument, SSAValue

from tp_dialect.analysis.split.layouts import Split
from tp_dialect.analysis.split.plan import TpPlan
from tp_dialect.analysis.values import callee
from tp_dialect.names import value_name
from tp_dialect.passes.split_walk import Splitter
from tp_dialect.reject import TpReject
from tp_dialect.signature import NAME_ATTR


class EntrySplitter(Splitter):
    """The entry function's walk, splitting each callee once at its first call."""

    def __init__(self, fn: func.FuncOp, plan: TpPlan, chips: int) -> None:
        super().__init__(fn, plan, chips)
        self.calls: dict[func.FuncOp, list[func.CallOp]] = {}  # in program order
        for op in fn.body.block.ops:
            if isinstance(op, func.CallOp) and (f := callee(op)) is not None and f is not fn:
                _check_arity(op, f)
                self.calls.setdefault(f, []).append(op)
        # A callee called from anywhere else (another function, a region) is not followed:
        # what those calls hand it is not known here, so it stays whole (the flat rule).
        module = fn.parent_op()
        for op in module.walk() if module is not None else ():
            if isinstance(op, func.CallOp) and op.parent is not fn.body.block:
                self.calls.pop(callee(op), None)  # type: ignore[arg-type]
        self.split: dict[func.FuncOp, CalleeSplitter] = {}

    def cut_weights(self) -> None:
        """The flat rule on the entry's ports, then each callee argument's one cut."""
        super().cut_weights()
        for f, calls in self.calls.items():
            for i, arg in enumerate(f.body.block.args):
                first = calls[0]
                for call in calls[1:]:
                    if self.handed(call, i) != self.handed(first, i):
                        raise TpReject.PLAN_MISMATCH.at(
                            call,
                            f"@{f.sym_name.data}'s argument %{value_name(arg)} is cut otherwise "
                            f"at two calls: {self.describe(first, i)}, but "
                            f"{self.describe(call, i)}; @{f.sym_name.data} is split once, so "
                            "the plan must cut what every call hands it alike",
                        )

    def handed(self, call: func.CallOp, i: int) -> Split | None:
        """The cut of the value ``call`` hands as argument ``i``: the plan's cut of an entry
        argument; None (whole) for anything the entry computes."""
        v = call.arguments[i]
        return self.cut.get(v) if self.is_port(v) else None

    def is_port(self, v: SSAValue) -> bool:
        """Whether ``v`` is one of the entry's arguments (a host value)."""
        return isinstance(v, BlockArgument) and v.owner is self.fn.body.block

    def describe(self, call: func.CallOp, i: int) -> str:
        """``call`` and what it hands as argument ``i``, for a diagnostic."""
        k = self.calls[callee(call)].index(call)  # type: ignore[index]
        at = f"call {k}" + (f" (%{value_name(call.results[0])})" if call.results else "")
        v, cut = call.arguments[i], self.handed(call, i)
        if not self.is_port(v):
            return f"{at} hands %{value_name(v)}, computed in @{self.fn.sym_name.data}: whole"
        name = self.port_name(v)
        entry = None if name is None else self.plan.entry_for(name)
        what = f"{at} hands '{name}'" if name else f"{at} hands %{value_name(v)}"
        if entry is None:
            return f"{what}, whole (no plan entry names it)"
        if cut is None:
            return f"{what}, left whole by plan entry {entry.describe()}"
        return f"{what}, cut by plan entry {entry.describe()} along {cut.describe()}"

    def port_name(self, v: SSAValue) -> str | None:
        """The checkpoint name (``tp.name``) the entry states for its argument ``v``."""
        assert isinstance(v, BlockArgument)
        attrs = self.fn.arg_attrs.data if self.fn.arg_attrs else ()
        named = attrs[v.index].data.get(NAME_ATTR) if v.index < len(attrs) else None
        return getattr(named, "data", None)

    def call(self, op: func.CallOp) -> bool:
        """A followed call: its callee split (once), the call left as it is; False for a
        call not followed and handed no cut value (the spine)."""
        f = callee(op)
        if f is None or f not in self.calls:  # not followed: the spine, unless handed a cut
            cut = next((v for v in op.arguments if v in self.cut), None)
            if cut is None:
                return False
            name = op.callee.string_value()
            raise self.refuse(
                op,
                cut,
                f"@{name} has no one-block body ending in func.return to split"
                if f is None
                else f"@{name} is called from elsewhere too (or by itself): tp-split splits a "
                f"callee whose only calls are statements of @{self.fn.sym_name.data}",
            )
        for v in op.arguments:
            if v in self.cut and not self.is_port(v):
                raise self.refuse(
                    op,
                    v,
                    f"@{f.sym_name.data} is handed whole values only: a value cut in "
                    f"@{self.fn.sym_name.data} cannot be passed to it",
                )
        if f not in self.split:
            self.split[f] = CalleeSplitter(self, f)
            self.split[f].run()
        for j in self.split[f].stored:
            for use in op.results[j].uses:
                reader = use.operation
                if not (isinstance(reader, func.ReturnOp) and reader.parent_op() is self.fn):
                    raise TpReject.CANNOT_SPLIT.at(
                        reader,
                        f"'{reader.name}' reads %{value_name(op.results[j])}, which "
                        f"@{f.sym_name.data} returns cut and stores whole by tp.unshard: a "
                        f"host output, which only @{self.fn.sym_name.data}'s func.return "
                        "may read",
                    )
        return True


class CalleeSplitter(Splitter):
    """A callee's walk: its arguments seeded with the cuts every call agrees on (see
    `EntrySplitter.cut_weights`); it records which results it stored by ``tp.unshard``."""

    def __init__(self, entry: EntrySplitter, fn: func.FuncOp) -> None:
        super().__init__(fn, entry.plan, entry.n)
        calls = entry.calls[fn]
        args = fn.body.block.args
        self.hosts = {
            a for i, a in enumerate(args) if all(entry.is_port(c.arguments[i]) for c in calls)
        }
        self.seed = {
            a: cut for i, a in enumerate(args) if (cut := entry.handed(calls[0], i)) is not None
        }
        for i, a in enumerate(args):
            if (tail := entry.tails.get(calls[0].arguments[i])) is not None:
                self.tails[a] = tail
        self.stored: list[int] = []  # the results returned cut, stored by tp.unshard

    def cut_weights(self) -> None:
        """The cuts the calls agree on; the plan was read against the entry's ports."""
        self.cut.update(self.seed)

    def finish(self, ret: func.ReturnOp) -> None:
        """The flat rule on the callee's results (a sum all-reduced, a cut value unsharded),
        noting which results were cut."""
        self.stored = [j for j, v in enumerate(ret.operands) if v in self.cut]
        super().finish(ret)


def _check_arity(call: func.CallOp, f: func.FuncOp) -> None:
    """A call handing ``f`` as many values as it takes and binding as many as it returns."""
    takes, gives = len(f.body.block.args), len(f.body.block.last_op.operands)  # type: ignore[union-attr]
    if len(call.arguments) != takes or len(call.results) != gives:
        raise TpReject.CANNOT_SPLIT.at(
            call,
            f"'func.call' hands @{f.sym_name.data} {len(call.arguments)} values and binds "
            f"{len(call.results)}, but it takes {takes} and returns {gives}",
        )
