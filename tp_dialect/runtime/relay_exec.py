"""Per-chip programs run under the host's relay, on the reference interpreter.

Each chip has its own interpreter (its own values: nothing is shared but what the relay
copies). ``RunTo(chip, h)`` resumes the chip where it stands, binding what its halt receives
from its inbox, and runs it until it arrives at halt ``h``, publishing what that halt sends;
``Copy(t, a, b)`` moves buffer ``t`` from chip a's outbox to chip b's inbox. A read of a
buffer nobody copied fails loudly, naming it and the chip.

Under storage semantics (``storage=True``, in-place updates overwrite storage) every chip has
its own memory: its own copies of the host inputs, a send snapshots the buffer as the chip
stands at its halt, and each copy gives the receiver a buffer of its own — so an in-place
update on one chip is never seen by another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from tp_dialect.analysis.calls.chip_runs import (
    chip_function,
    expanded_name,
    program_links,
    tag_of,
)
from tp_dialect.analysis.rounds import Copy
from tp_dialect.analysis.schedule.programs import check_programs, relay_steps
from tp_dialect.ops import SectionOp, ShardOp
from tp_dialect.program_ops import ChipProgramOp, FinishOp, LinkOp, RelayOp
from tp_dialect.runtime.numpy_impls import LocatingInterpreter, NumpyFunctions, own_storage
from tp_dialect.xdsl_compat import func_functions


def _interpreter(
    module: ModuleOp,
    placed: dict[ShardOp, np.ndarray] | None,
    storage: bool = False,
    functions: NumpyFunctions | None = None,
) -> Interpreter:
    """An interpreter of ``module`` with ``functions`` (a serving session's), else tp's
    op implementations over ``placed`` slices."""
    interpreter = LocatingInterpreter(module)
    interpreter.register_implementations(func_functions())
    interpreter.register_implementations(functions or NumpyFunctions(placed, storage=storage))
    return interpreter


def _kept(value: Any, storage: bool) -> Any:
    """``value`` as a chip keeps it: under storage semantics in a buffer of its own."""
    return own_storage(value) if storage else value


@dataclass
class _Frame:
    """Where a chip stands in its program, or in a per-chip function a call of it runs."""

    ops: list[Operation]
    next: int = 0
    call: CallOp | None = None
    tag: str = ""


class ChipRunner:
    """One chip's program, resumable at its halts (with ``storage``, in a memory of its own:
    its host inputs and what it sends are copies). A call to a per-chip function runs its
    body in a scope of its own, its links halting the chip like the program's, their buffer
    names expanded by the call's tag (`tp_dialect.analysis.calls.chip_runs`)."""

    def __init__(
        self,
        module: ModuleOp,
        program: ChipProgramOp,
        inputs: Sequence[Any],
        placed: dict[ShardOp, np.ndarray] | None,
        storage: bool = False,
        functions: NumpyFunctions | None = None,
    ) -> None:
        self.chip = program.chip_index
        self.storage = storage
        self.interpreter = _interpreter(module, placed, storage, functions)
        block = program.body.block
        # A serving session's chip state is resident: its inputs are never written (caches
        # and weights come placed), so they are not copied.
        resident = functions is not None and functions.resident
        own = list(inputs) if resident else [_kept(v, storage) for v in inputs]
        self.interpreter.set_values(zip(block.args, own, strict=True))
        self.frames = [_Frame(list(block.ops))]
        self.halts = [link.halt for link in program_links(program)]
        self.arrived = 0  # links arrived at so far
        self.standing: tuple[LinkOp, str] | None = None
        self.outbox: dict[str, Any] = {}
        self.inbox: dict[str, Any] = {}
        self.outputs: tuple[Any, ...] | None = None
        self._start()

    def _start(self) -> None:
        """Set up the chip before round 0: its constants, and its start halt (link 0) if it
        has one; no section (or call) runs until the relay says so."""
        interp = self.interpreter
        frame = self.frames[0]
        while frame.next < len(frame.ops):
            op = frame.ops[frame.next]
            if isinstance(op, LinkOp) and op.halt == 0:
                self.standing = (op, "")
                self.arrived = 1
                frame.next += 1
                return
            if isinstance(op, SectionOp | LinkOp | FinishOp) or chip_function(op) is not None:
                return
            interp.set_values(
                zip(op.results, interp.run_op(op, interp.get_values(op.operands)), strict=True)
            )
            frame.next += 1

    def run_to(self, halt: int) -> None:
        """Leave the current halt (taking its receives) and run until arriving at ``halt``."""
        if self.outputs is not None:
            raise InterpretationError(f"chip {self.chip} has finished; it has no halt {halt}")
        if self.standing is not None:
            self._take(*self.standing)
            self.standing = None
        arrived = self._run()
        if isinstance(arrived, LinkOp) and self.halts[self.arrived - 1] != halt:
            raise InterpretationError(
                f"the relay ran chip {self.chip} to halt {halt}, but it halts at "
                f"{self.halts[self.arrived - 1]} first"
            )

    def _take(self, link: LinkOp, tag: str) -> None:
        values = []
        for name in link.receives:
            name = expanded_name(name, tag)
            if name not in self.inbox:
                raise InterpretationError(
                    f"chip {self.chip} leaves halt {self.halts[self.arrived - 1]} without "
                    f"'{name}': the relay never copied it here"
                )
            values.append(self.inbox[name])
        self.interpreter.set_values(zip(link.received, values, strict=True))

    def _run(self) -> Operation | None:
        """Run until the next link (publishing what it sends) or the end."""
        interp = self.interpreter
        while True:
            frame = self.frames[-1]
            if frame.next >= len(frame.ops):
                return None
            op = frame.ops[frame.next]
            frame.next += 1
            if isinstance(op, FinishOp):
                self.outputs = interp.get_values(op.values)
                return op
            if isinstance(op, LinkOp):
                self.standing = (op, frame.tag)
                self.arrived += 1
                for name, value in zip(op.sends, interp.get_values(op.sent), strict=True):
                    # As it is at the halt: a later in-place update does not reach the copy.
                    self.outbox[expanded_name(name, frame.tag)] = _kept(value, self.storage)
                return op
            if isinstance(op, ReturnOp) and frame.call is not None:
                returned = interp.get_values(op.operands)
                interp.pop_scope()
                self.frames.pop()
                interp.set_values(zip(frame.call.results, returned, strict=True))
                continue
            if (f := chip_function(op)) is not None:
                assert isinstance(op, CallOp)
                args = interp.get_values(op.operands)
                interp.push_scope(f.sym_name.data)
                interp.set_values(zip(f.body.block.args, args, strict=True))
                self.frames.append(_Frame(list(f.body.block.ops), 0, op, tag_of(op)))
                continue
            results = interp.run_op(op, interp.get_values(op.operands))
            interp.set_values(zip(op.results, results, strict=True))


def run_linked(
    module: ModuleOp,
    func: FuncOp,
    args: Sequence[Any],
    placed: dict[ShardOp, np.ndarray] | None = None,
    storage: bool = False,
    functions: NumpyFunctions | None = None,
) -> tuple[Any, ...]:
    """``func`` — per-chip programs, host statements, return — run under its relay; with
    ``storage``, under storage semantics, each chip in a memory of its own; with
    ``functions`` (a serving session's, `tp_dialect.runtime.session`), on its resident chip
    state. Programs that do not fit together (two for one chip, a buffer sent twice or
    received as another type, a relay written for other programs) are refused before
    anything runs."""
    check_programs(func)
    if functions is not None:
        storage = functions.storage
    host = _interpreter(module, placed, storage, functions)
    host.set_values(zip(func.body.block.args, args, strict=True))
    runners: dict[int, ChipRunner] = {}
    programs: list[ChipProgramOp] = []
    for op in func.body.block.ops:
        if isinstance(op, ChipProgramOp):
            programs.append(op)
            runners[op.chip_index] = ChipRunner(
                module, op, host.get_values(op.inputs), placed, storage, functions
            )
    for step in relay_steps(func):
        if isinstance(step, Copy):
            src = runners[step.src].outbox
            if step.tensor not in src:
                raise InterpretationError(
                    f"the relay copies '{step.tensor}' from chip {step.src}, which has not sent it"
                )
            runners[step.dst].inbox[step.tensor] = _kept(src[step.tensor], storage)
        else:
            runners[step.chip].run_to(step.halt)
    finished = {chip: runner.outputs for chip, runner in runners.items()}
    return _host_statements(host, func, programs, finished)


def host_results(
    module: ModuleOp,
    func: FuncOp,
    args: Sequence[Any],
    finished: dict[int, tuple[Any, ...] | None],
    placed: dict[ShardOp, np.ndarray] | None = None,
    storage: bool = False,
    functions: NumpyFunctions | None = None,
) -> tuple[Any, ...]:
    """``func``'s results once its chip programs have run elsewhere (``finished[c]``: chip
    c's ``tp.finish`` values): the host's statements run on them and on ``args`` (with
    ``functions``: a serving session's), as `run_linked` ends; raises InterpretationError
    naming a chip that did not finish."""
    host = _interpreter(module, placed, storage, functions)
    host.set_values(zip(func.body.block.args, args, strict=True))
    programs = [op for op in func.body.block.ops if isinstance(op, ChipProgramOp)]
    return _host_statements(host, func, programs, finished)


def _host_statements(
    host: Interpreter,
    func: FuncOp,
    programs: list[ChipProgramOp],
    finished: dict[int, tuple[Any, ...] | None],
) -> tuple[Any, ...]:
    for program in programs:
        outputs = finished.get(program.chip_index)
        if outputs is None:
            raise InterpretationError(f"the relay never ran chip {program.chip_index} to its end")
        host.set_values(zip(program.outputs, outputs, strict=True))
    for op in func.body.block.ops:
        if isinstance(op, ChipProgramOp | RelayOp):
            continue
        if isinstance(op, ReturnOp):
            return host.get_values(op.operands)
        host.set_values(zip(op.results, host.run_op(op, host.get_values(op.operands)), strict=True))
    raise InterpretationError("the function has no return")
