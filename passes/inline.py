"""tp-inline: every call to a function of the module becomes a copy of the callee's body.

Invariant: afterwards no ``func.call`` names a function of the module with a body, and each
former call's results are the values its inlined copy returns (the callee's ops, cloned in
order just before the call, reading the call's operands for its arguments); a private callee
that no call names any more is erased, so an outlined program (``tp-gen --outline``) becomes
its flat program, computing the same values with the same ops in the same order.

xDSL 0.75 has no function inliner (its inlining passes are stencil's and snrt's), so this is
one `RewritePattern` on ``func.call`` over the rewriter's ``inline_block`` and ``replace``.
A call to a declaration (no body) is left as it is; a callee of several blocks is refused,
as is recursion, which inlining would never finish.

Names: where the call states its layer (``func.call @layer(…) {tp.layer = 3 : i64}``, as
``tp-gen --outline`` writes; else a layer tag its results carry, ``%l3_out``:
`tp_dialect.names.call_tag`), the copy's values and section labels written once for every
layer (``l_…``) take that tag (``l3_…``): the flat program's names, and the layer
`tp_dialect.names.layer_of` attributes its statements to. A phased program (tp-phase ran on
the callee and the callers) stays phased: the function's phases are renumbered in program
order, each phase of a call becoming its callee's phases (`tp_dialect.passes.phase.renumber`).
`inline_calls` is the same inlining for other passes, of the calls they choose (tp-link-points
inlines a callee's own lowered calls into it: per-chip functions are one level deep).

Per-chip programs calling per-chip functions (tp-link-points on an outlined program) become
the flat per-chip programs they stand for (`tp_dialect.analysis.calls.chip_runs.flat_copy`): each
call's body in its place, its links numbered and its buffers named as the call runs them,
the relay's repeats unrolled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from tp_dialect.analysis.calls.chip_runs import flat_copy, has_chip_calls, retag
from tp_dialect.analysis.schedule.programs import check_programs, programs
from tp_dialect.certificate import kept
from tp_dialect.names import call_tag
from tp_dialect.passes.phase import renumber
from tp_dialect.reject import TpReject


@dataclass
class InlineCall(RewritePattern):
    """At a call to a function of the module with a one-block body (one ``chosen`` accepts,
    by default every one): the body's clone in its place, the call's results replaced by
    what the clone returns."""

    chosen: Callable[[CallOp], bool] = field(default=lambda call: True)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CallOp, rewriter: PatternRewriter) -> None:
        callee = _callee(op)
        if callee is None or not self.chosen(op):
            return
        block = callee.body.clone().block
        ret = block.last_op
        assert isinstance(ret, ReturnOp)  # _callee checked the original
        inlined = set(block.ops)
        tag = call_tag(op)
        if tag is not None:
            retag(inlined, tag)
        rewriter.inline_block(block, InsertPoint.before(op), op.arguments)
        returned = list(ret.arguments)  # read now: an argument returned is now an operand
        for value, result in zip(returned, op.results, strict=True):
            # A value the copy computes takes the call's name for it (the caller's name
            # reads better in the caller); an operand passed straight through keeps its own.
            if value.owner in inlined and result.name_hint:
                value.name_hint = result.name_hint
        rewriter.replace(op, [], returned)
        rewriter.erase(ret)


def _callee(call: CallOp) -> FuncOp | None:
    """The function ``call`` names when it has a body to inline (None for a declaration or
    a symbol that is no function); a body of several blocks is refused."""
    found = SymbolTable.lookup_symbol(call, call.callee)
    if not isinstance(found, FuncOp) or found.is_declaration:
        return None
    if len(found.body.blocks) != 1 or not isinstance(found.body.block.last_op, ReturnOp):
        raise TpReject.OPAQUE_CALL.at(
            call,
            f"'func.call' calls @{found.sym_name.data}, whose body is not one block ending in "
            "func.return: tp-inline inlines straight-line functions only",
        )
    return found


def _refuse_recursion(module: ModuleOp, chosen: Callable[[CallOp], bool]) -> None:
    """Raise at a call ``chosen`` accepts on a cycle of such calls (a function reaching
    itself)."""
    edges: dict[FuncOp, list[tuple[CallOp, FuncOp]]] = {}
    for f in module.ops:
        if isinstance(f, FuncOp):
            edges[f] = [
                (c, g)
                for c in f.walk()
                if isinstance(c, CallOp) and chosen(c) and isinstance(g := _callee(c), FuncOp)
            ]
    done: set[FuncOp] = set()

    def visit(f: FuncOp, path: list[FuncOp]) -> None:
        for call, g in edges.get(f, []):
            if g in path:
                raise TpReject.OPAQUE_CALL.at(
                    call,
                    f"'func.call' calls @{g.sym_name.data} recursively: inlining would never end",
                )
            if g not in done:
                visit(g, [*path, g])
        done.add(f)

    for f in edges:
        if f not in done:
            visit(f, [f])


def _erase_unused(module: ModuleOp, callees: set[FuncOp]) -> None:
    """Erase each private function of ``callees`` that no remaining op names (in a
    property or attribute: a call's callee, or any other symbol reference)."""
    named: set[str] = set()
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, SymbolRefAttr):
                named.add(attr.root_reference.data)
    for f in callees:
        private = f.sym_visibility is not None and f.sym_visibility.data == "private"
        if private and f.sym_name.data not in named:
            f.detach()
            f.erase()


def inline_calls(module: ModuleOp, chosen: Callable[[CallOp], bool] = lambda call: True) -> None:
    """Inline every call ``chosen`` accepts (and, in the copies, every call it accepts
    there), renumber the phases of every function that had a call inlined, and erase the
    private callees no call names any more. Recursion among the module's calls is refused
    at a call on the cycle; a callee of several blocks at its call."""
    calls = [c for c in module.walk() if isinstance(c, CallOp) and chosen(c)]
    callees: set[FuncOp] = {f for c in calls if (f := _callee(c)) is not None}
    if not callees:
        return
    _refuse_recursion(module, chosen)
    callers = {f for c in calls if isinstance(f := c.parent_op(), FuncOp)}
    PatternRewriteWalker(InlineCall(chosen)).rewrite_module(module)
    for f in callers:
        renumber(f.body.block)
    _erase_unused(module, callees)


@dataclass(frozen=True)
class TpInline(ModulePass):
    """Inline every func.call to a function of the module; erase private callees left
    unused (an outlined program back to its flat form, phases renumbered if phased)."""

    name = "tp-inline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Inlining moves no work between chips: a certified program stays certified.
        with kept(op):
            if has_chip_calls(op):
                # Per-chip programs calling per-chip functions: the flat programs the calls
                # stand for (links numbered, buffers named as each call runs them; the relay
                # unrolled), as tp-link-points writes them for a flat program — once the
                # programs and their relay are known to fit, refused where they are written.
                for f in op.ops:
                    if isinstance(f, FuncOp) and len(f.body.blocks) == 1 and programs(f):
                        check_programs(f)
                flat, _ = flat_copy(op)
                for old in list(op.body.block.ops):
                    old.detach()
                    old.erase(safe_erase=False)
                for new in list(flat.body.block.ops):
                    new.detach()
                    op.body.block.add_op(new)
            inline_calls(op)


__all__ = ["InlineCall", "TpInline", "inline_calls"]
