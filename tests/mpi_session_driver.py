"""Run under ``mpiexec -n N``: a tiny Qwen3 decode step (N chips, per-chip programs) run for
several steps on an `MpiSession` (rank c is chip c, each keeping its caches); rank 0 writes
the steps' outputs to the .npz named by argv[1]. Driven by tests/test_session.py. A fifth
argument ``fail-rank0`` injects a fault: rank 0's chip fails as the second step starts, while
the other ranks wait on its links."""

from __future__ import annotations

import sys

import numpy as np
from helpers import program, tiny

from tp_dialect.passes.universe import lowered
from tp_dialect.runtime import mpi_session
from tp_dialect.runtime.checkpoint import MemorySource, random_weights
from tp_dialect.runtime.mpi_session import MpiSession
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

CACHES = ("present_key.0", "present_value.0", "present_key.1", "present_value.1")
PIPELINE = "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay"


def main() -> None:
    out, chips, steps, outline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    source_program = program(tiny(chips=chips, layers=2))
    if outline == "outline":
        from tp_dialect.frontend.qwen3 import generate

        text = generate(tiny(chips=chips, layers=2), outline=True)
        source_program = parse_module(tp_context(), text, "<outlined>")[0]
    module = lowered(source_program, PIPELINE)
    weights = random_weights(module, 0)
    session = MpiSession(
        lambda text: parse_module(tp_context(), text, "<step>")[0],
        lambda: MemorySource(weights),
        CACHES,
    )
    if session.rank != 0:
        session.serve()
        return
    if sys.argv[5:] == ["fail-rank0"]:
        runs = []
        run_chip = mpi_session.run_chip

        def failing(*args: object) -> None:
            runs.append(1)
            if len(runs) == 2:
                raise RuntimeError("injected fault")
            run_chip(*args)  # type: ignore[arg-type]

        mpi_session.run_chip = failing  # type: ignore[assignment]
    step = session.prepare(module)
    got = {}
    for position in range(steps):
        x = np.random.default_rng(100 + position).standard_normal((1, 64)).astype(np.float32)
        got[f"hidden_{position}"] = session.run(
            step, {"hidden_states": x, "position": np.int64(position)}
        )["hidden_states"]
    session.close()
    np.savez(out, **got)


if __name__ == "__main__":
    main()
