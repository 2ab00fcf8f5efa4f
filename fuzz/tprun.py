"""Mutated inputs for tp-run: ``.npz`` inputs, checkpoints, machine files, program files
and flags, built around programs that run (`fuzz.corpus.RunSeed`).

`tp_run_case` draws one kind and builds a `Case`:

* ``inputs`` — the ``--inputs`` ``.npz`` with an array's dtype changed (f64, f16, i32,
  int64, ...), its shape changed, ``position`` set to -1, 16, 2**40, 3.7, NaN ..., an entry
  dropped, renamed or added; weights sometimes in the same file;
* ``weights`` — a ``.safetensors`` checkpoint with a weight's dtype or shape changed;
* ``files`` — a truncated ``.npz`` or checkpoint, an empty or garbage file, a ``.npy`` given
  as ``--inputs``, a folder, a path that does not exist;
* ``program`` — a binary program file, an empty one, one with a text mutation;
* ``flags`` — ``--position`` -1, 16, 2**40, 3.7 ..., odd seeds, modes, algorithms, tolerances;
* ``machine`` — ``--dry-run --machine m.json`` with a field set to 0, a string, NaN,
  a negative or huge number, null, a list; a field dropped, unknown or a truncated file;
* ``outputs`` — ``--outputs``/``--report``/``--trace`` into a missing folder or onto a folder.
"""

from __future__ import annotations

import io
import json
import math
import random
from collections.abc import Callable

import numpy as np

from fuzz.case import Case
from fuzz.corpus import RunSeed
from fuzz.mutate import Vocabulary, mutate_text

DTYPES: tuple[str, ...] = ("float64", "float16", "int32", "int64", "uint8", "bool", "complex64")
POSITIONS: tuple[object, ...] = (-1, 15, 16, 17, 2**31, 2**40, 2**63 - 1, 3.7, math.nan, -0.0)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _safetensors(arrays: dict[str, np.ndarray]) -> bytes | None:
    from safetensors.numpy import save

    try:
        return save({k: np.ascontiguousarray(v) for k, v in arrays.items()})
    except Exception:  # noqa: BLE001 - a dtype safetensors cannot store: draw another
        return None


def mutate_array(rng: random.Random, a: np.ndarray, is_position: bool) -> tuple[np.ndarray, str]:
    """One array changed as a user's data would be wrong: its dtype, its shape (a dimension
    changed, dropped or added, empty, a scalar), or its values (NaN, inf, or, for a position,
    out of range or not whole)."""
    how = rng.choice(("dtype", "shape", "values", "position" if is_position else "dtype"))
    if how == "position":
        value = rng.choice(POSITIONS)
        dtype = np.float64 if isinstance(value, float) else np.int64
        if isinstance(value, int) and -(2**31) <= value < 2**31 and rng.random() < 0.5:
            dtype = a.dtype
        return np.full(a.shape, value, dtype=dtype), f"position = {value!r} ({np.dtype(dtype)})"
    if how == "dtype":
        dtype = rng.choice(DTYPES)
        with np.errstate(all="ignore"):
            return a.astype(dtype), f"dtype {a.dtype} -> {dtype}"
    if how == "shape":
        dims = list(a.shape)
        kind = rng.choice(("dim", "drop", "add", "empty", "scalar"))
        if kind == "dim" and dims:
            k = rng.randrange(len(dims))
            dims[k] = max(1, dims[k] + rng.choice((-1, 1, dims[k])))
        elif kind == "drop" and dims:
            dims.pop(rng.randrange(len(dims)))
        elif kind == "add":
            dims.insert(rng.randrange(len(dims) + 1), rng.choice((1, 2)))
        elif kind == "empty" and dims:
            dims[rng.randrange(len(dims))] = 0
        else:
            dims = []
        new = np.resize(a, dims) if math.prod(dims) else np.zeros(dims, a.dtype)
        return new, f"shape {list(a.shape)} -> {dims}"
    value = rng.choice((math.nan, math.inf, -math.inf, 1e30))
    if a.dtype.kind != "f":
        return a.astype(np.float32) * value, f"values {value} (as float32)"
    return np.full_like(a, value), f"values {value}"


def _mutate_arrays(
    rng: random.Random, arrays: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], str]:
    """``arrays`` with one entry mutated, dropped, renamed or added."""
    arrays = dict(arrays)
    if not arrays:
        arrays["extra"] = np.zeros(3, np.float32)
        return arrays, "extra entry"
    name = rng.choice(sorted(arrays))
    how = rng.choices(("array", "drop", "rename", "extra"), (0.8, 0.07, 0.07, 0.06))[0]
    if how == "drop":
        del arrays[name]
        return arrays, f"drop {name}"
    if how == "rename":
        arrays[name.upper() + "_"] = arrays.pop(name)
        return arrays, f"rename {name}"
    if how == "extra":
        arrays["unknown_argument"] = np.ones((2, 2), np.float32)
        return arrays, "extra entry"
    arrays[name], what = mutate_array(rng, arrays[name], name == "position")
    return arrays, f"{name}: {what}"


def _inputs(rng: random.Random, seed: RunSeed) -> Case:
    inputs = dict(seed.inputs)
    with_weights = rng.random() < 0.3
    if with_weights:
        inputs.update(seed.weights)
    mutated, what = _mutate_arrays(rng, inputs)
    argv = ["@{program.mlir}", "--inputs", "@{inputs.npz}"]
    if not with_weights:
        argv += ["--random-weights", "0"]
    if rng.random() < 0.15:
        argv.append("--check")
    files = {"program.mlir": seed.text.encode(), "inputs.npz": _npz(mutated)}
    return Case("tp-run", tuple(argv), files, seed.name, (f"inputs: {what}",))


def _weights(rng: random.Random, seed: RunSeed) -> Case | None:
    if not seed.weights:
        return None
    for _ in range(5):
        mutated, what = _mutate_arrays(rng, seed.weights)
        data = _safetensors(mutated)
        if data is not None:
            break
    else:
        return None
    argv = ["@{program.mlir}", "--weights", "@{weights.safetensors}"]
    argv += ["--random-inputs", "1"] if seed.inputs else []
    files = {"program.mlir": seed.text.encode(), "weights.safetensors": data}
    return Case("tp-run", tuple(argv), files, seed.name, (f"weights: {what}",))


def _files(rng: random.Random, seed: RunSeed) -> Case:
    valid_npz = _npz({**seed.inputs})
    how = rng.choice(
        (
            "truncated-npz",
            "truncated-npz",
            "truncated-safetensors",
            "empty",
            "garbage",
            "npy",
            "folder",
            "missing",
            "program-as-inputs",
            "npz-as-weights",
        )
    )
    files: dict[str, bytes] = {"program.mlir": seed.text.encode()}
    flag, name = "--inputs", "inputs.npz"
    extra = ["--random-weights", "0"]
    if how == "truncated-npz":
        files[name] = valid_npz[: rng.randrange(max(len(valid_npz), 1))]
    elif how == "truncated-safetensors":
        data = _safetensors(dict(seed.weights)) or b""
        flag, name, extra = "--weights", "weights.safetensors", ["--random-inputs", "1"]
        files[name] = data[: rng.randrange(max(len(data), 1))]
    elif how == "empty":
        files[name] = b""
    elif how == "garbage":
        files[name] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 10, 100, 1000))))
    elif how == "npy":
        buffer = io.BytesIO()
        first = next(iter(seed.inputs.values()), np.zeros(3, np.float32))
        np.save(buffer, first)
        name = "inputs.npy"
        files[name] = buffer.getvalue()
    elif how == "folder":
        name = "folder.npz"
        files["folder.npz/keep"] = b""
    elif how == "missing":
        name = "no/such/inputs.npz"
    elif how == "program-as-inputs":
        name = "program.mlir"
    else:
        flag, name, extra = "--weights", "inputs.npz", ["--random-inputs", "1"]
        files[name] = valid_npz
    argv = ("@{program.mlir}", flag, "@{" + name + "}", *extra)
    return Case("tp-run", argv, files, seed.name, (f"files: {how}",))


def _program(rng: random.Random, seed: RunSeed) -> Case:
    how = rng.choice(("binary", "npz", "empty", "text", "text", "text", "latin1"))
    if how == "binary":
        data = bytes(rng.randrange(256) for _ in range(rng.choice((16, 200, 2000))))
    elif how == "npz":
        data = _npz(dict(seed.inputs) or {"a": np.zeros(1)})
    elif how == "empty":
        data = b""
    elif how == "latin1":
        data = seed.text.replace("tp.shard", "tp.shard\xe9", 1).encode("latin-1", "replace")
    else:
        text, what = mutate_text(rng, seed.text, Vocabulary())
        data = text.encode()
        how = "text; " + "; ".join(what)
    argv = ["@{program.mlir}"]
    if rng.random() < 0.3:
        argv += ["--dry-run"]
    else:
        argv += ["--random-weights", "0", "--random-inputs", "1"]
        if seed.max_positions:
            argv += ["--position", str(seed.position)]
    return Case("tp-run", tuple(argv), {"program.mlir": data}, seed.name, (f"program: {how}",))


def _flags(rng: random.Random, seed: RunSeed) -> Case:
    choices: list[tuple[str, ...]] = [
        ("--position", str(rng.choice(POSITIONS))),
        ("--position", rng.choice(("-1", "16", "17", str(2**40), "3.7", "x", "1e3", "0x10"))),
        ("--random-inputs", rng.choice(("-1", str(2**64), "x"))),
        ("--random-weights", rng.choice(("-5", str(2**70), "1.5"))),
        ("--mode", rng.choice(("bogus", "all", "phase,bogus", "", "relay"))),
        ("--allreduce", rng.choice(("tree", "auto", "", "ring"))),
        ("--rtol", rng.choice(("nan", "-1", "inf", "x"))),
        ("--atol", rng.choice(("nan", "-1"))),
        ("--stats",),
        ("--storage",),
        ("--check",),
        ("--against", "@{program.mlir}"),
        ("--against", "@{missing.mlir}"),
        ("--timeout", rng.choice(("0", "-1", "nan"))),
        ("--machine", rng.choice(("sn40l", "generic", "nosuch", ""))),
    ]
    picked = rng.sample(choices, rng.choice((1, 1, 2, 3)))
    argv = ["@{program.mlir}", "--random-weights", "0", "--random-inputs", "1"]
    if rng.random() < 0.2:
        argv = ["@{program.mlir}", "--dry-run"]
    for flags in picked:
        argv += flags
    what = " ".join(" ".join(f) for f in picked)
    files = {"program.mlir": seed.text.encode()}
    return Case("tp-run", tuple(argv), files, seed.name, (f"flags: {what}",))


def machine_json(rng: random.Random) -> tuple[bytes, str]:
    """A machine description a user might write, wrong in one way: a field 0, a string,
    NaN, infinite, negative, huge, null, a list, an object or a boolean; a field unknown or
    dropped; a bad topology or base; not an object; truncated. Also used for tp-opt's
    ``machine=`` option."""
    from dataclasses import asdict

    from tp_dialect.machine import MACHINES

    fields = {k: v for k, v in asdict(MACHINES["sn40l"]).items() if k != "name"}
    keys = sorted(fields)
    data: object
    how = rng.choice(("field", "field", "field", "unknown", "topology", "base", "shape", "cut"))
    if how == "field":
        name = rng.choice(keys)
        value = rng.choice(
            (0, 0.0, -1, -1e-9, "fast", "1e9", math.nan, math.inf, 1e308, 2**64, None, [], {}, True)
        )
        chosen = {n: fields[n] for n in rng.sample(keys, rng.randrange(len(keys)))}
        chosen[name] = value
        data, what = chosen, f"{name} = {json.dumps(value)}"
    elif how == "unknown":
        data, what = {**fields, "warp_speed": 9}, "unknown field"
    elif how == "topology":
        top = rng.choice(("torus", "", 3, None, "ring"))
        data, what = {"topology": top, "max_chips": rng.choice((1, 2, 8))}, f"topology {top!r}"
    elif how == "base":
        base = rng.choice(("nosuch", "generic", 1, None))
        data, what = {"base": base}, f"base {base!r}"
    elif how == "shape":
        data = rng.choice(([1, 2], 3, "sn40l", None, [fields]))
        what = f"top level {json.dumps(data)[:30]}"
    else:
        text = json.dumps(fields, indent=1)
        cut = rng.randrange(len(text))
        return text[:cut].encode(), f"truncated at {cut}"
    return json.dumps(data, indent=1).encode(), what


def _machine(rng: random.Random, seed: RunSeed) -> Case:
    data, what = machine_json(rng)
    argv = ["@{program.mlir}", "--dry-run", "--machine", "@{machine.json}"]
    extra = rng.choice(
        (
            (),
            ("--mode", "all"),
            ("--mode", "phase"),
            ("--mode", "relay,dataflow"),
            ("--allreduce", "auto"),
            ("--mode", "all", "--allreduce", "auto"),
        )
    )
    files = {"program.mlir": seed.text.encode(), "machine.json": data}
    return Case("tp-run", (*argv, *extra), files, seed.name, (f"machine: {what}",))


def _outputs(rng: random.Random, seed: RunSeed) -> Case:
    where = rng.choice(("@{missing/dir/out.npz}", "@{folder}", "@{out.npz}", ""))
    flag = rng.choice(("--outputs", "--report", "--trace"))
    argv = ["@{program.mlir}", flag, where]
    if flag == "--outputs":
        argv += ["--random-weights", "0", "--random-inputs", "1"]
    else:
        argv += ["--dry-run"]
    files = {"program.mlir": seed.text.encode(), "folder/keep": b""}
    return Case("tp-run", tuple(argv), files, seed.name, (f"outputs: {flag} {where}",))


KINDS: dict[str, tuple[Callable[[random.Random, RunSeed], Case | None], float]] = {
    "inputs": (_inputs, 4.0),
    "weights": (_weights, 1.5),
    "files": (_files, 1.5),
    "program": (_program, 1.5),
    "flags": (_flags, 2.0),
    "machine": (_machine, 2.0),
    "outputs": (_outputs, 0.5),
}


def tp_run_case(rng: random.Random, seeds: tuple[RunSeed, ...]) -> Case:
    """Guarantees one tp-run case over one of ``seeds`` (drawn by weight), of one kind drawn
    by weight from `KINDS`; deterministic in ``rng``'s state."""
    names = list(KINDS)
    weights = [KINDS[n][1] for n in names]
    while True:
        seed = rng.choices(seeds, [s.weight for s in seeds])[0]
        kind = rng.choices(names, weights)[0]
        case = KINDS[kind][0](rng, seed)
        if case is not None:
            return case
