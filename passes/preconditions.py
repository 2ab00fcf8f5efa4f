"""What the tp passes require of their input, checked before they change anything.

The lowering passes read a function as one block of statements, act on the entry function
(``@decode``, or the module's only function) and some of them write work for every chip of
the grid. A module that breaks one of these expectations is refused up front by a located
diagnostic naming what is wrong, never left to fail half-way through a pass (which a user
would see as an internal error, neither located nor named):

- `entry_of`: the entry function, or a diagnostic at the module when there is none or
  several and none is ``@decode``; it has a body, of one block, ended by ``func.return``
  (xDSL 0.75 lets a ``linalg.yield`` end a function);
- `single_blocks`: every region of one block (a branch between blocks is refused at the op
  ending the first block, ``opaque-op``: tp-verify refuses it for the same reason);
  `every_function` holds every function of the module to the same, for tp-relocate;
- `not_programs`: a function not yet split into per-chip programs, for the passes before
  tp-link-points;
- `lowered_of`: the functions a pass lowers in an outlined program — the entry and every
  function its lowered calls reach (`tp_dialect.analysis.calls.outlined`: a call to a function
  holding chip work is a bare statement, its callee placed once), callees first — each held
  to `entry_of`'s rules, recursion and a lowered call nested in other work refused at the
  call; `placed`: every statement of such a function a section, a transfer or a lowered
  call (``not-sectioned`` otherwise), for the passes after tp-relocate;
- `chips_to_place`: N, refused at the module when it states none, by the passes that
  write sections; `replicated_within`: a statement that runs on every chip (its section
  lists each one) refused at the statement when N is above `MAX_LOWERED_CHIPS`;
  `chips_to_lower`: the same bound for tp-link-points, at the module (every chip gets a
  program).
  Everything else — parsing, verification, tp-verify and the other checks, and work placed
  on chips the program names — does no work proportional to N: N is a number the input
  states, not work it asks for.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation

from tp_dialect.analysis.calls.outlined import ChipWork, lowered_functions
from tp_dialect.analysis.touch import statements
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import CHIPS_ATTR, MAX_LOWERED_CHIPS, stated_chips
from tp_dialect.ops import SectionOp, TransferOp
from tp_dialect.program_ops import ChipProgramOp, RelayOp
from tp_dialect.reject import TpReject
from tp_dialect.signature import BindError, entry_function


def chips_to_place(module: ModuleOp, pass_name: str) -> int:
    """N as ``module`` states it, guaranteed stated (the sections a pass writes need it);
    else a diagnostic at the module naming ``tp.chips``. Any N: `replicated_within` bounds
    the work written for every chip."""
    n = stated_chips(module)
    if n is None:
        raise TpDiagnostic(
            module,
            f"{pass_name} places work on chips, but the module states no chip count "
            f"(module attributes {{{CHIPS_ATTR} = N : i64}})",
        )
    return n


def replicated_within(op: Operation, n: int, pass_name: str) -> None:
    """Nothing when ``n`` is at most `MAX_LOWERED_CHIPS`; else a diagnostic at ``op``, a
    statement that runs on every chip (its section would list all ``n``), naming
    ``tp.chips``. A statement on one chip costs nothing per chip of the grid: only
    replicated work is bounded."""
    if n > MAX_LOWERED_CHIPS:
        raise TpDiagnostic(
            op,
            f"'{op.name}' runs on every chip: {pass_name} lists every chip of a replicated "
            f"statement's section, for at most {MAX_LOWERED_CHIPS} chips (the module states "
            f"{CHIPS_ATTR} = {n})",
        )


def chips_to_lower(module: ModuleOp, pass_name: str) -> int:
    """N as ``module`` states it, guaranteed stated (the programs written need it) and at
    most `MAX_LOWERED_CHIPS` (every chip gets a program); else a diagnostic at the module
    naming ``tp.chips``."""
    n = chips_to_place(module, pass_name)
    if n > MAX_LOWERED_CHIPS:
        raise TpDiagnostic(
            module,
            f"{CHIPS_ATTR} = {n}: {pass_name} writes a program for every chip and lowers "
            f"at most {MAX_LOWERED_CHIPS} chips",
        )
    return n


def entry_of(module: ModuleOp, pass_name: str) -> FuncOp:
    """The function ``pass_name`` lowers (``@decode``, else the module's only function),
    guaranteed to have a body of one block that ends with ``func.return``; otherwise a
    located diagnostic (at the module when there is no single entry function, at the branch
    when its body has several blocks, at the op ending it in place of the return)."""
    try:
        func = entry_function(module)
    except BindError:
        names = [f"@{op.sym_name.data}" for op in module.ops if isinstance(op, FuncOp)]
        found = f"its functions are {', '.join(names)}" if names else "it has no function"
        raise TpDiagnostic(
            module,
            f"{pass_name} works on the module's entry function, @decode or its only function, "
            f"but {found}",
        ) from None
    single_blocks(func, pass_name)
    if not func.body.blocks:
        raise TpDiagnostic(func, f"{pass_name}: @{func.sym_name.data} has no body to lower")
    _ends_with_return(func, pass_name)
    return func


def not_programs(func: FuncOp, pass_name: str) -> None:
    """``func`` holds no per-chip programs nor a relay (tp-link-points has not run on it);
    else a diagnostic at the first: the passes before tp-link-points place statements,
    which a function of programs no longer has."""
    for op in func.body.block.ops if func.body.blocks else ():
        if isinstance(op, ChipProgramOp | RelayOp):
            raise TpDiagnostic(
                op,
                f"{pass_name} works on a function's statements, but @{func.sym_name.data} "
                f"is already per-chip programs (it holds a '{op.name}': tp-link-points has "
                "run)",
            )


def lowered_of(module: ModuleOp, pass_name: str) -> tuple[list[FuncOp], ChipWork]:
    """The functions ``pass_name`` lowers: the entry (`entry_of`) and every function its
    lowered calls reach, callees before callers, each of one block ending with
    ``func.return`` and holding no per-chip programs; and the `ChipWork` that says which
    calls are lowered. A located diagnostic otherwise (recursion and a lowered call nested
    in a section or region: at the call)."""
    entry = entry_of(module, pass_name)
    work = ChipWork()
    funcs = lowered_functions(entry, work)
    for func in funcs:
        if func is not entry:
            single_blocks(func, pass_name)
        not_programs(func, pass_name)
    return funcs, work


def placed(func: FuncOp, work: ChipWork, before: str) -> None:
    """Every statement of ``func`` is a section, a transfer or a lowered call; else a
    ``not-sectioned`` diagnostic at the first that is not, saying to run tp-relocate
    ``before`` (what the pass does)."""
    for stmt in statements(func):
        if not isinstance(stmt, SectionOp | TransferOp) and work.lowered(stmt) is None:
            raise TpReject.NOT_SECTIONED.at(
                stmt, f"'{stmt.name}' is not in a tp.section: run tp-relocate before {before}"
            )


def every_function(module: ModuleOp, pass_name: str) -> None:
    """Every region in ``module`` is of one block (`single_blocks`) and every function
    with a body ends with ``func.return`` and holds no per-chip programs; else a located
    diagnostic."""
    single_blocks(module, pass_name)
    for op in module.walk():
        if isinstance(op, FuncOp) and op.body.blocks:
            _ends_with_return(op, pass_name)
            not_programs(op, pass_name)


def _ends_with_return(func: FuncOp, pass_name: str) -> None:
    last = func.body.block.last_op
    if not isinstance(last, ReturnOp):
        # xDSL 0.75 lets another dialect's terminator (a linalg.yield) end a function.
        at = last or func
        raise TpDiagnostic(
            at,
            f"{pass_name}: @{func.sym_name.data} ends with '{at.name}', not 'func.return': "
            "a function hands its results back at its return",
        )


def single_blocks(root: Operation, pass_name: str) -> None:
    """Every region under ``root`` (``root``'s own included) has at most one block; else
    an ``opaque-op`` diagnostic at the op ending the first block of the first region that
    has more (the branch), or at the region's op when that block is empty. One walk."""
    for op in root.walk():
        for region in op.regions:
            if len(region.blocks) < 2:
                continue
            first = region.blocks[0]
            at = first.last_op or op
            raise TpReject.OPAQUE_OP.at(
                at,
                f"'{at.name}' ends block 1 of {len(region.blocks)} in a region of "
                f"'{op.name}': {pass_name} reads each region as one block of statements and "
                "does not follow branches",
            )
