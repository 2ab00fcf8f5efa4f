"""tp-run's data in and out: weights and inputs checked against the ports, a run of the
reference interpreter, the check against the unsharded program, outputs written whole."""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.linalg import ops as linalg

from tp_dialect import certificate
from tp_dialect.analysis.values import count_run
from tp_dialect.collectives import WIRE_ATTR
from tp_dialect.frontend.families import unsharded_text
from tp_dialect.passes.import_shard import without_annotations
from tp_dialect.runtime.checkpoint import (
    MemorySource,
    TensorSource,
    check_arguments,
    conform_inputs,
    open_model_dir,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.files import not_regular
from tp_dialect.runtime.host_memory import check_fits, run_needs
from tp_dialect.runtime.progress import reporting
from tp_dialect.runtime.spmd import is_spmd
from tp_dialect.signature import entry_function, ports
from tp_dialect.tools.common import (
    UserError,
    write_atomically,
)
from tp_dialect.tools.source import load_program, parse_module
from tp_dialect.universe import tp_context


@dataclass(frozen=True)
class Comparison:
    """One output of the checked program against the reference's."""

    name: str
    max_abs: float
    max_rel: float  # max |a - b| / max |b|
    ok: bool


def compare(
    got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], rtol: float, atol: float
) -> list[Comparison]:
    """Every output of ``want`` compared with ``got``: max abs and relative error."""
    rows = []
    for name, ref in want.items():
        if name not in got:
            raise UserError(f"the checked program has no output '{name}'")
        a, b = np.asarray(got[name], np.float64), np.asarray(ref, np.float64)
        if a.shape != b.shape:
            raise UserError(f"output '{name}': shape {list(a.shape)} vs {list(b.shape)}")
        err = float(np.max(np.abs(a - b))) if a.size else 0.0
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        rows.append(
            Comparison(name, err, err / scale if scale else err, err <= atol + rtol * scale)
        )
    return rows


def source_of(args: argparse.Namespace, module: ModuleOp) -> TensorSource:
    """The weights asked for: ``--weights`` (a model directory, a ``.safetensors`` file or
    a sharded checkpoint's index: opened, nothing read but what says which file holds
    what) or ``--random-weights``; empty when neither is given."""
    if args.weights:
        return open_model_dir(args.weights)
    if args.random_weights is not None:
        return MemorySource(random_weights(module, args.random_weights))
    return MemorySource({})


def check_sources(
    args: argparse.Namespace,
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
    say: bool = True,
) -> None:
    """Every argument checked against ``source`` and ``inputs`` before anything loads
    (names, shapes, dtypes by ``--cast``; every problem in one error); ``say``: a note on
    stderr for each conversion that may round."""
    _, notes = check_arguments(module, source, inputs, args.cast)
    if say:
        note(notes)


DEFAULT_POSITION = 3
"""The step's position ``--random-inputs`` writes unless ``--position`` says."""


def check_position(args: argparse.Namespace) -> None:
    """Refuse ``--position`` where it would be ignored: it is the position
    ``--random-inputs`` writes (and fills the caches up to); an ``--inputs`` file holds the
    position together with the caches written up to it, so the flag cannot change one
    without the other."""
    if args.position is None or args.random_inputs is not None:
        return
    if args.inputs is not None:
        raise UserError(
            f"--position {args.position} with --inputs: the inputs file holds the step's "
            "position, with the caches filled up to it; set it there (--position is for "
            "--random-inputs)"
        )
    raise UserError(f"--position {args.position} is for --random-inputs, which is not given")


def inputs_of(
    args: argparse.Namespace, module: ModuleOp, source: TensorSource | None = None
) -> dict[str, np.ndarray]:
    """The inputs asked for, each checked against its port (shape; dtype by ``--cast``)
    and against ``source``'s copy, if it has one."""
    if args.inputs is None:
        if args.random_inputs is None:
            return {}
        position = DEFAULT_POSITION if args.position is None else args.position
        return random_inputs(module, args.random_inputs, position)
    ins, _ = ports(entry_function(module))
    shapes = {key: port.shape for port in ins for key in (port.name, port.alias) if key}
    given, notes = conform_inputs(module, read_npz(args.inputs, shapes), args.cast, source)
    note(notes)
    return given


def read_npz(path: str, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The named arrays of the ``.npz`` at ``path``; a UserError naming the file when it is
    not one (a lone ``.npy``, a truncated or damaged archive, pickled objects). An array is
    read only when ``shapes`` names it in the shape its header states, of a numeric dtype
    (what a port binds: as large as the port); any other is a stand-in of its stated shape
    and dtype that costs no memory — bound to nothing, or refused by its shape or dtype —
    never decompressed (a 4 MB file can state 4 GB of zeros)."""
    try:
        problem = not_regular(path)  # a FIFO is never opened: it would wait for a writer
    except OSError as err:
        raise UserError(f"cannot read inputs '{path}': {err.strerror or err}") from None
    if problem:
        raise UserError(f"cannot read inputs '{path}': {problem}; give an .npz file")
    try:
        data = np.load(path, allow_pickle=False)
    except OSError as err:
        raise UserError(f"cannot read inputs '{path}': {err.strerror or err}") from None
    except Exception as err:  # numpy's reader raises what its format parsers raise
        raise UserError(f"cannot read inputs '{path}': not an .npz of arrays ({err})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UserError(
            f"cannot read inputs '{path}': a single array (.npy); give an .npz of named "
            "arrays (numpy.savez)"
        )
    try:
        with data:
            names = [n[: -len(".npy")] for n in data.zip.namelist() if n.endswith(".npy")]
            return {name: _member(data, name, shapes.get(name)) for name in names}
    except _Outsized as err:
        raise UserError(f"cannot read inputs '{path}': {err}") from None
    except Exception as err:  # a damaged member: zipfile, zlib and the .npy parser's errors
        raise UserError(f"cannot read inputs '{path}': a damaged .npz ({err})") from None


def _member(data: np.lib.npyio.NpzFile, name: str, want: tuple[int, ...] | None) -> np.ndarray:
    """Member ``name`` of ``data``: read when its header states the shape ``want`` and a
    numeric dtype, else a zero-stride stand-in of the shape and dtype it states (its header
    alone is read)."""
    fmt = np.lib.format
    with data.zip.open(f"{name}.npy") as f:
        version = fmt.read_magic(f)
        header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = header(f)
    if dtype.itemsize > _LARGEST_ELEMENT:  # even the stand-in's one element would be large
        raise _Outsized(
            f"'{name}' holds {dtype}, {dtype.itemsize} bytes an element: an input is numbers"
        )
    if shape == want and dtype.kind in "biufc":
        return data[name]  # as large as the port, 16 bytes an element at most
    return np.broadcast_to(np.zeros((), dtype), shape)


_LARGEST_ELEMENT = 16
"""The largest element of a numeric dtype numpy has (complex128, a long double)."""


class _Outsized(Exception):
    """An .npz member whose element is larger than any number's."""


def note(notes: Sequence[str]) -> None:
    for line in notes:
        print(f"tp-run: note: {line}", file=sys.stderr)


def _unannotated(module: ModuleOp) -> ModuleOp:
    """``module`` with its MLIR Shard annotations taken out, if it has any: the unsharded
    program they annotate."""
    if any(op.dialect_name() == "shard" for op in module.walk()):
        return without_annotations(module)
    return module


def reference_of(args: argparse.Namespace, module: ModuleOp) -> ModuleOp:
    ctx = tp_context()
    if args.against:
        return _unannotated(load_program(ctx, args.against))
    if "tp.config" not in module.attributes and args.program != "-":
        # A program annotated with MLIR Shard (run through tp-import-shard) is its own
        # unsharded reference once its annotations are taken out.
        given = load_program(ctx, args.program)
        if any(op.dialect_name() == "shard" for op in given.walk()):
            return without_annotations(given)
    if "tp.config" not in module.attributes:
        raise UserError("--check needs --against FILE: the program records no tp.config")
    reference, _ = parse_module(ctx, unsharded_text(module.attributes["tp.config"]), "<unsharded>")
    return reference


def execute(
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
    storage: bool = False,
    casting: str = "safe",
) -> tuple[dict[str, np.ndarray], float, float]:
    """Bind every argument from ``source`` or ``inputs`` (what ``source`` holds sliced through
    the manifest, converted by ``casting``), run (with ``storage``: under storage
    semantics); the results, load time and run time."""
    # What the run executes: the entry function, each callee once per call (a function's
    # own ops are not run where they are defined).
    total_ops = count_run(entry_function(module), linalg.GenericOp)
    with reporting(sys.stderr, total_ops):  # on a terminal, after 2 s: bytes, ops run
        t0 = time.perf_counter()
        placement = place_weights(module, source, inputs, casting=casting)
        t1 = time.perf_counter()
        from tp_dialect.runtime.reference import run_program  # the interpreter: when it runs

        outputs = run_program(module, placement.values, placement.placed, storage)
    return outputs, t1 - t0, time.perf_counter() - t1


def warn_certificate(path: str, module: ModuleOp) -> None:
    """Say when the shard obligation was never checked, or checked on another program."""
    state = certificate.status(module)
    if state == "missing" and is_spmd(entry_function(module)):
        print(
            f"tp-run: note: {path} is an SPMD function over mpi (tp-to-mpi's), which tp-verify "
            "does not read: its certificate is the per-chip programs' it came from",
            file=sys.stderr,
        )
    elif state == "missing":
        print(
            f"tp-run: warning: {path} carries no shard-obligation certificate "
            "(run tp-opt --tp-verify on it)",
            file=sys.stderr,
        )
    elif state == "stale":
        print(
            f"tp-run: warning: {path}'s shard-obligation certificate is stale: the program "
            "changed since tp-verify checked it",
            file=sys.stderr,
        )


def write_outputs(args: argparse.Namespace, outputs: Mapping[str, np.ndarray]) -> None:
    """``--outputs``: the results by name, written whole or not at all."""
    if args.outputs:
        buffer = io.BytesIO()
        np.savez(buffer, **outputs)
        write_atomically(args.outputs, buffer.getvalue())
        print(f"wrote {len(outputs)} output(s) to {args.outputs}")


F32_RTOL = 1e-4
"""--check's relative tolerance (of each output's largest magnitude) by default."""
WIRE_RTOL = {"bf16": 1e-2, "int8": 2e-2}
"""--check's default where collectives carry a narrow format (tp-narrow-wire): bf16's 8-bit
mantissa rounds each partial and each add by up to 2^-9 of the value; an int8 all-gather
rounds each element by up to half a step, 1/254 of its block's largest (measured on tiny
Qwen3 and GPT-2 prefills, N = 2 and 4: logits within 7.3e-3, bf16's within 6.0e-3)."""


def narrow_wire(module: ModuleOp) -> str | None:
    """The narrow format the program's all-reduces carry (``tp.wire``), or None."""
    wire = module.attributes.get(WIRE_ATTR)
    return wire.data if isinstance(wire, StringAttr) else None


def check_outputs(
    args: argparse.Namespace,
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
) -> int:
    """``--check``/``--against``: 0 when every output is within tolerance of the unsharded
    program's (run here on the same weights and inputs), 1 otherwise; 0 when not asked."""
    if not (args.check or args.against):
        return 0
    reference = reference_of(args, module)
    check_fits(run_needs(reference), "the check's run of the unsharded program")
    want, _, _ = execute(reference, source, inputs, casting=args.cast)
    rtol, wire = args.rtol, narrow_wire(module)
    if rtol is None:  # the bf16 wire's own rounding, else f32's
        rtol = WIRE_RTOL.get(wire, WIRE_RTOL["bf16"]) if wire else F32_RTOL
    rows = compare(outputs, want, rtol, args.atol)
    width = max(len(r.name) for r in rows)
    on_wire = f"; all-reduces carry {wire}" if wire else ""
    print(f"check against the unsharded program (rtol {rtol:g}, atol {args.atol:g}{on_wire}):")
    for r in rows:
        verdict = "ok" if r.ok else "FAIL"
        print(f"  {r.name:<{width}}  max abs {r.max_abs:.3e}  max rel {r.max_rel:.3e}  {verdict}")
    failed = [r.name for r in rows if not r.ok]
    if failed:
        print(
            f"tp-run: error: check failed: {', '.join(failed)} beyond tolerance of the "
            "unsharded program",
            file=sys.stderr,
        )
    return 1 if failed else 0
