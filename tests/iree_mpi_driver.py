"""Run under ``mpiexec -n N``: tiny Qwen3's per-chip programs (N chips, ``allreduce``)
exported, each rank running chip c's segments by `iree_mpi.run_rank` with the reference
interpreter as ``call`` (no IREE: the rank loop alone); rank 0 gathers the outputs, runs
``@host`` and writes the results to the .npz named by argv[1]. Driven by
tests/test_iree_mpi.py."""

from __future__ import annotations

import sys

import numpy as np
from exported_runner import interpreted
from helpers import program, tiny

from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.iree_mpi import gather_outputs, run_rank
from tp_dialect.runtime.segments import run_host
from tp_dialect.signature import entry_function, ports

PIPELINE = "tp-relocate{{allreduce={}}},tp-transfers,tp-phase,tp-link-points,tp-relay"


def main() -> None:
    from mpi4py import MPI  # here: the test importing PIPELINE must not start MPI

    out, chips, allreduce = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    module = lowered(program(tiny(chips=chips, layers=2)), PIPELINE.format(allreduce))
    values = {**random_weights(module, 0), **random_inputs(module, 1, 5)}
    exported = module.clone()
    export_module(exported)
    manifest = manifest_of(exported)
    host_input, call = interpreted(exported, values)

    comm = MPI.COMM_WORLD
    finished = run_rank(manifest, comm.Get_rank(), comm, host_input, call)
    everything = gather_outputs(comm, finished, np.asarray)
    if comm.Get_rank() == 0:
        results = run_host(manifest, everything, host_input, call)
        _, outs = ports(entry_function(module))
        np.savez(out, **{p.name: np.asarray(r) for p, r in zip(outs, results, strict=True)})


if __name__ == "__main__":
    main()
