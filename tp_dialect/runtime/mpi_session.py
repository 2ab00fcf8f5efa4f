"""A serving session whose chips are MPI ranks: rank c is chip c, and each keeps its state.

The single-process `Session` runs a model's step programs on resident chip state; here every
rank holds its own chip's part of that state — its weight slices read once from the
checkpoint (only its own), its cache slices allocated once and written in place — across every
step, so the caches never leave their ranks. Rank 0 drives: `MpiSession.prepare` sends every
rank a program (its text: each rank parses it and places its own slices), `MpiSession.run` one
step's inputs; each rank runs its own ``tp.chip_program`` on its resident state, trading
buffers rank to rank at its link points (`mpi_exec`), and rank 0 runs the host's statements
(the caches' host stores skipped) and returns the step's outputs. The other ranks
`MpiSession.serve` until rank 0 `MpiSession.close`s. So `generation.generate` runs on ranks
unchanged: a step's numbers are bitwise those of the single-process session.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument
from xdsl.printer import Printer

from tp_dialect.analysis.calls.chip_runs import flat_copy, has_chip_calls
from tp_dialect.analysis.schedule.programs import check_programs
from tp_dialect.runtime import mpi_wait
from tp_dialect.runtime.checkpoint import TensorSource
from tp_dialect.runtime.mpi_exec import (
    MpiError,
    Wire,
    abort,
    check_world,
    load_mpi,
    record_error,
    run_chip,
)
from tp_dialect.runtime.numpy_impls import NumpyFunctions
from tp_dialect.runtime.relay_exec import ChipRunner, host_results
from tp_dialect.runtime.session import Session, Step


class MpiSession:
    """Step programs on MPI ranks, each rank one chip keeping its state (module docstring).
    ``parse(text)`` reads a program's text into a module (every rank alike); ``source()``
    opens the checkpoint on a rank; ``cache_outputs``: the outputs handing a cache back."""

    def __init__(
        self,
        parse: Callable[[str], ModuleOp],
        source: Callable[[], TensorSource],
        cache_outputs: Iterable[str] = (),
        comm: Any = None,
        engine: str = "interpreter",
    ) -> None:
        self.mpi = load_mpi()
        self.comm = self.mpi.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.parse = parse
        # Each rank's own state: the single-process session's bookkeeping, over its own
        # slices (place_weights with this rank's chip).
        self.local = Session(source(), cache_outputs)
        if engine == "iree":  # each rank's chip compiled by IREE (`IreeSession` on ranks)
            from tp_dialect.runtime.iree_session import IreeSession

            self.local = IreeSession(self.local.source.source, cache_outputs, comm=self.comm)
        self.steps: list[tuple[Step, Any]] = []

    # -- rank 0 ------------------------------------------------------------------------

    def prepare(self, module: ModuleOp) -> int:
        """Every rank makes ``module`` ready on its own state; the step's number."""
        out = io.StringIO()
        Printer(stream=out).print_op(module)
        self.tell(("prepare", out.getvalue()))
        return self._prepare(out.getvalue())

    def run(self, step: int, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """One run of step ``step`` on every rank; its outputs (rank 0). Rank 0 failing
        mid-step says why and ends every rank: the others wait on its links and could not
        hear a stop (closing would wait for them forever)."""
        self.tell(("run", step, dict(inputs)))
        try:
            outputs = self._run(step, inputs)
        except Exception as err:
            self._end_world(err)
        assert outputs is not None
        return outputs

    def close(self) -> None:
        """Release the serving ranks."""
        self.tell(("stop",))

    def tell(self, word: Any) -> None:
        """Rank 0: ``word`` broadcast to the ranks waiting in `told` (they sleep meanwhile)."""
        mpi_wait.barrier(self.comm)  # the serving ranks wait here, without spinning
        self.comm.bcast(word, root=0)

    def told(self) -> Any:
        """Every other rank: what rank 0 says next through `tell`, waited for asleep."""
        mpi_wait.barrier(self.comm)
        return self.comm.bcast(None, root=0)

    # -- every other rank --------------------------------------------------------------

    def serve(self) -> None:
        """Follow rank 0's commands until it closes the session. A rank failing says why
        (one line) and ends every rank: the others would wait for it forever."""
        while True:
            command = self.told()  # rank 0's next command (`tell`)
            if command[0] == "stop":
                return
            try:
                if command[0] == "prepare":
                    self._prepare(command[1])
                else:
                    self._run(command[1], command[2])
            except Exception as err:  # any failure: the world cannot go on without this rank
                self._end_world(err)

    # -- every rank --------------------------------------------------------------------

    def _end_world(self, err: Exception) -> NoReturn:
        """This rank's failure said in one line (also for the launcher, past teardown), then
        every rank ended."""
        line = f"error: rank {self.rank}: {err}"
        print(line, file=sys.stderr, flush=True)
        record_error(self.rank, line)
        abort(self.comm, 1)
        raise AssertionError("MPI_Abort returned")  # pragma: no cover

    def _prepare(self, text: str) -> int:
        module = self.parse(text)
        if has_chip_calls(module):
            module, _ = flat_copy(module)  # a rank cuts its own shards, op by op (mpi_exec)
        chips = check_world(module, self.comm.Get_size(), "direct")
        if self.rank >= chips:
            raise MpiError(f"rank {self.rank} has no chip among {chips}")
        step = self.local.prepare(module, chip=self.rank)
        if not isinstance(step, Step):  # IREE's: it runs its own relay (`IreeSession.run`)
            self.steps.append((step, None))
            return len(self.steps) - 1
        index = check_programs(step.func)
        self.steps.append((step, index))
        return len(self.steps) - 1

    def _run(self, number: int, inputs: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
        step, index = self.steps[number]
        if index is None:
            outputs = self.local.run(step, inputs)
            return outputs if self.rank == 0 else None
        args = self.local.arguments(step, inputs)
        functions = NumpyFunctions(step.placed, storage=True, resident=True, skipped=step.skipped)
        program = index.programs[self.rank]
        own = []
        for v in program.inputs:
            assert isinstance(v, BlockArgument)
            own.append(args[v.index])
        runner = ChipRunner(step.module, program, own, step.placed, True, functions)
        wire = Wire(self.comm, self.mpi, list(index.sent))
        run_chip(runner, program, index, wire, None)
        wire.drain()
        mpi_wait.barrier(self.comm)  # rank 0 waits for the slowest chip without spinning
        gathered = self.comm.gather(runner.outputs, root=0)
        if self.rank != 0:
            return None
        assert gathered is not None
        finished = dict(enumerate(gathered))
        results = host_results(step.module, step.func, args, finished, functions=functions)
        return {
            step.outs[i].name: np.asarray(results[i], dtype=step.outs[i].numpy_dtype)
            for i in step.results
        }
