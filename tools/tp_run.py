"""tp-run: run a tp program on the reference interpreter, binding arguments by name.

``tp-run layer.mlir --weights ckpt.safetensors --inputs in.npz --outputs out.npz [--check]``

Every argument is bound by name (its ``tp.name``, else its SSA name in the text, else
``arg0`` ...) from either file: the checkpoint or the ``.npz`` of inputs, whichever holds it
(both, alike in shape: the inputs' copy). Weights are sliced onto chips through the
manifest as the host would load them; ``--check`` also runs the unsharded program
(regenerated from the module's ``tp.config``, or ``--against FILE``) on the same weights
and inputs and fails above tolerance. ``--storage`` runs the program with in-place updates
overwriting their caches' storage (as a chip would); the program checked against still
runs with value semantics, the reference meaning.

``tp-run layer.mlir --dry-run [--machine M] [--mode phase,relay,dataflow|all]`` models the
step instead (`tp_dialect.runtime.model`). The model runs a program at the stage it is given;
lowering is this tool's: when a mode needs a later stage (sections for sequential and phase,
per-chip programs for relay and dataflow) a copy is lowered first — a source program with
``--allreduce``'s algorithm — and stderr says which passes ran.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.schedule.stats import format_stats, pipeline_stats
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.qwen3 import GenError
from tp_dialect.grid import CHIPS_ATTR
from tp_dialect.machine import MachineError
from tp_dialect.runtime import mpi_exec
from tp_dialect.runtime.checkpoint import (
    CASTS,
)
from tp_dialect.runtime.host_memory import NotEnoughMemory, check_fits, run_needs
from tp_dialect.runtime.iree_exec import TARGETS as IREE_TARGETS
from tp_dialect.runtime.iree_exec import IreeError
from tp_dialect.runtime.model import (
    ModelError,
)
from tp_dialect.runtime.spmd import SpmdError
from tp_dialect.signature import BindError
from tp_dialect.tools.common import (
    LocatedError,
    ToolParser,
    UserError,
    at_least,
    check_writable,
    run_tool,
)
from tp_dialect.tools.run_io import (
    DEFAULT_POSITION,
    check_outputs,
    check_position,
    check_sources,
    execute,
    inputs_of,
    source_of,
    warn_certificate,
    write_outputs,
)
from tp_dialect.tools.run_iree import check_iree_flags, describe, execute_iree, iree_target
from tp_dialect.tools.run_model import check_formats, imported, model_step
from tp_dialect.tools.run_mpi import launch, main_mpi
from tp_dialect.tools.source import SourceMap, load_program_mapped, located
from tp_dialect.universe import tp_context


def parser() -> argparse.ArgumentParser:
    p = ToolParser(prog="tp-run", description="Run a tp program on numpy.")
    p.add_argument("program", help="the .mlir program (e.g. from tp-gen or tp-opt; - reads stdin)")
    w = p.add_mutually_exclusive_group()
    w.add_argument(
        "--weights",
        metavar="CHECKPOINT",
        help="named tensors (any argument, by name): a Hugging Face model directory "
        "(model.safetensors or a sharded model.safetensors.index.json), an index, or a "
        ".safetensors file",
    )
    w.add_argument("--random-weights", type=at_least(0, int), metavar="SEED", help="random weights")
    i = p.add_mutually_exclusive_group()
    i.add_argument("--inputs", help="an .npz of named tensors (any argument, by name)")
    i.add_argument(
        "--random-inputs",
        type=at_least(0, int),
        metavar="SEED",
        help="random inputs and caches",
    )
    p.add_argument(
        "--position",
        type=at_least(0, int),
        default=None,
        help=f"the step's position for --random-inputs (default {DEFAULT_POSITION}); with "
        "--inputs the file holds it",
    )
    p.add_argument(
        "--cast",
        choices=CASTS,
        default="safe",
        help="a tensor whose dtype is not its argument's: no: refused; safe (default): "
        "converted only when exact (bf16 to f32); same_kind: converted, rounding (f64 to "
        "f32), said on stderr. A float never becomes an integer",
    )
    p.add_argument("--outputs", help="write the results by name to this .npz")
    p.add_argument(
        "--check",
        action="store_true",
        help="also run the unsharded program and compare every output",
    )
    p.add_argument("--against", help="the unsharded program to check against (a file)")
    p.add_argument(
        "--storage",
        action="store_true",
        help="storage semantics: an in-place update (a KV cache write) overwrites its storage",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print per-layer sections, phases, transfers and bytes moved",
    )
    m = p.add_argument_group("the multi-RDU model (modelled time, memory, trace)")
    m.add_argument(
        "--machine",
        help="model the step on this machine: a preset (sn40l, "
        "generic) or a JSON file of its fields",
    )
    m.add_argument(
        "--mode",
        help="how the chips are driven: sequential, phase, relay, dataflow, several "
        "comma-separated (side by side), or all (default: from the program's stage)",
    )
    m.add_argument(
        "--allreduce",
        default="fold",
        help="the all-reduce algorithm when a source program is lowered for the model: "
        "fold (default), ring, oneshot, twoshot or auto (per all-reduce, by the machine)",
    )
    m.add_argument("--report", help="write the modelled figures here (JSON)")
    m.add_argument("--trace", help="write a Chrome trace here (opens in Perfetto)")
    m.add_argument("--timeline", help="write a Gantt chart here (PNG)")
    m.add_argument(
        "--dry-run",
        action="store_true",
        help="model time from shapes alone: no weights, no inputs, no numerics",
    )
    r = p.add_argument_group("several processes (MPI: one rank per chip)")
    r.add_argument(
        "--mpi",
        type=int,
        metavar="N",
        help="start N ranks (one per chip) with the installed mpiexec and run on them",
    )
    r.add_argument(
        "--backend",
        choices=("interp", "mpi", "iree"),
        default="interp",
        help="interp (default): one process; mpi: this process is one rank of an MPI world "
        "(mpiexec -n N tp-run PROGRAM --backend mpi ...); iree: the per-chip programs "
        "compiled by IREE to native code, in one process or, with --mpi N, on N ranks "
        "(pip install 'tp-dialect[iree]')",
    )
    r.add_argument(
        "--engine",
        choices=("interp", "iree"),
        default="interp",
        help="with --backend mpi: what runs a rank's chip: interp (default), or iree "
        "(what tp-run --mpi N --backend iree starts)",
    )
    r.add_argument(
        "--iree-cache",
        metavar="DIR",
        help="with IREE: keep compiled modules here (default $TP_IREE_CACHE, else "
        "~/.cache/tp/iree)",
    )
    r.add_argument(
        "--iree-target",
        choices=tuple(IREE_TARGETS),
        help="with --backend iree: what IREE compiles for, llvm-cpu (default: this CPU), cuda "
        "(NVIDIA GPU), rocm (AMD GPU) or vulkan-spirv (a Vulkan GPU)",
    )
    r.add_argument(
        "--iree-target-arch",
        metavar="ARCH",
        help="with a GPU --iree-target: the GPU's architecture (cuda: sm_80 by default; rocm: "
        "gfx942 by default; vulkan-spirv: IREE's baseline by default, or e.g. ampere, rdna3)",
    )
    r.add_argument(
        "--relay",
        choices=mpi_exec.RELAYS,
        default="direct",
        help="on MPI: direct (default): a chip sends each buffer straight to its receivers; "
        "host: one more rank (the host) performs the relay's copies",
    )
    r.add_argument(
        "--timeout",
        type=at_least(0, float, strict=True),
        default=600.0,
        metavar="SECONDS",
        help="with --mpi: stop the ranks after this long (default 600)",
    )
    p.add_argument(
        "--rtol",
        type=at_least(0, float),
        default=None,
        help="relative tolerance of --check (default 1e-4; 1e-2 where all-reduces carry bf16)",
    )
    p.add_argument(
        "--atol", type=at_least(0, float), default=1e-5, help="absolute tolerance of --check"
    )
    return p


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    check_position(args)
    check_formats(args)
    check_iree_flags(args)
    if args.mpi is not None:
        return launch(args, list(sys.argv[1:] if argv is None else argv))
    if args.backend == "mpi":
        return main_mpi(args)
    module, source_map = load_program_mapped(tp_context(), args.program)
    check_writable(args.outputs, args.report, args.trace, args.timeline)
    try:
        return _run(args, module, source_map)
    except TpDiagnostic as err:  # a refusal at an op (say, a slice out of range): there
        where = source_map.locate(err.op)
        name = "stdin" if args.program == "-" else args.program  # as the parser says it
        raise LocatedError(located(name, where, err.message)) from None


def _run(args: argparse.Namespace, module: ModuleOp, source_map: SourceMap) -> int:
    """Model and/or run ``module`` as ``args`` ask: the exit code (an error at an op of a
    copy lowered for the model is located at the op it was copied from)."""
    module = imported(module, True, source_map.adopt)
    warn_certificate(args.program, module)
    if args.machine or args.dry_run or args.report or args.trace or args.timeline:
        model_step(args, module, source_map.adopt)
        if args.dry_run:
            return 0
    given = (args.weights, args.random_weights, args.inputs, args.random_inputs)
    if all(g is None for g in given):
        raise UserError(
            "give the arguments: --weights CKPT or --random-weights SEED, and/or "
            "--inputs IN.npz or --random-inputs SEED (or --dry-run)"
        )
    random = (args.random_weights is not None, args.random_inputs is not None)
    check_fits(run_needs(module, args.storage, *random), f"running {args.program}")
    source = source_of(args, module)
    inputs = inputs_of(args, module, source)
    check_sources(args, module, source, inputs)
    chips = module.attributes.get(CHIPS_ATTR)
    where = f"{args.program} ({chips.value.data if chips else 1} chip(s)"
    if args.backend == "iree":
        outputs, load_s, run = execute_iree(args, module, source, inputs)
        print(f"ran {where} on {describe(run, iree_target(args))}): load {load_s * 1e3:.1f} ms")
    else:
        outputs, load_s, run_s = execute(module, source, inputs, args.storage, args.cast)
        print(
            f"ran {where}{', storage semantics' if args.storage else ''}): "
            f"load {load_s * 1e3:.1f} ms, run {run_s * 1e3:.1f} ms"
        )
    if args.stats:
        print(format_stats(pipeline_stats(module)))
    write_outputs(args, outputs)
    return check_outputs(args, module, source, inputs, outputs)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success (and a passing check), 1 otherwise, never a traceback."""
    return run_tool(
        "tp-run",
        _main,
        argv,
        (
            BindError,
            GenError,
            MachineError,
            ModelError,
            NotEnoughMemory,
            TpDiagnostic,
            mpi_exec.MpiError,
            SpmdError,
            IreeError,
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
