"""Host loading: named tensors from a checkpoint (or memory) onto chips, through the manifest.

A weight every use of which is a ``tp.shard`` (directly, or inside the chip programs it is
handed to) is never loaded whole: each chip's slice is read on its own (from a
``safetensors`` file, range by range, without reading the rest) and handed to the
interpreter as already placed; the full argument is bound to a zero-stride placeholder that
costs no memory. A slice several ``tp.shard`` ops cut alike (copies of one shard in
different chip programs) is read once and shared. Weights read whole (a norm's scale) are
loaded whole. The same weights are read at every stage of lowering, since the manifest is.

Nothing here knows a model: what is a weight, an input or a cache is the port's role, which
the program states (`tp_dialect.signature`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tp_dialect.analysis.manifest import ChipLoad, read_manifest
from tp_dialect.analysis.values import uses_through_programs
from tp_dialect.ops import ShardOp
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.files import not_regular
from tp_dialect.runtime.missing import instead
from tp_dialect.runtime.progress import tick
from tp_dialect.signature import BindError, Port, entry_function, ports


class TensorSource(Protocol):
    """Where named host tensors come from: a checkpoint file or a dict in memory."""

    def shape(self, name: str) -> tuple[int, ...] | None: ...

    def dtype(self, name: str) -> np.dtype: ...

    def whole(self, name: str) -> np.ndarray: ...

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray: ...

    def names(self) -> Collection[str]: ...


@dataclass
class MemorySource:
    """Host tensors already in memory, by name."""

    tensors: Mapping[str, np.ndarray]

    def shape(self, name: str) -> tuple[int, ...] | None:
        t = self.tensors.get(name)
        return None if t is None else tuple(np.shape(t))

    def dtype(self, name: str) -> np.dtype:
        return np.asarray(self.tensors[name]).dtype

    def whole(self, name: str) -> np.ndarray:
        return np.asarray(self.tensors[name])

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        return slice_of(np.asarray(self.tensors[name]), axis, list(ranges))

    def names(self) -> Collection[str]:
        return self.tensors.keys()


class SafetensorsSource:
    """Tensors of a ``.safetensors`` checkpoint, read lazily (a slice reads only its rows)."""

    def __init__(self, path: str | Path) -> None:
        from safetensors import safe_open

        import tp_dialect.dtypes  # noqa: F401 - registers bfloat16 with numpy via ml_dtypes

        try:
            problem = not_regular(path)  # safetensors maps the file: a directory says ENODEV
        except OSError as err:
            raise BindError(f"cannot open checkpoint '{path}': {err.strerror}") from None
        if problem:
            raise BindError(f"cannot open checkpoint '{path}': {problem}; give a .safetensors file")
        try:
            self._file = safe_open(str(path), framework="numpy")
        except Exception as err:  # safetensors raises its own error types
            text = str(err)
            if text.startswith(_BAD_HEADER):
                text = f"not a safetensors file ({text[len(_BAD_HEADER) :].strip()})"
            raise BindError(f"cannot open checkpoint '{path}': {text}") from None
        self._keys = set(self._file.keys())

    def shape(self, name: str) -> tuple[int, ...] | None:
        if name not in self._keys:
            return None
        return tuple(self._file.get_slice(name).get_shape())

    def dtype(self, name: str) -> np.dtype:
        stored = self._file.get_slice(name).get_dtype()
        found = _SAFETENSORS_DTYPES.get(stored)
        if found is None:
            raise BindError(f"checkpoint tensor '{name}' is {stored}: tp reads no such dtype")
        return np.dtype(found)

    def whole(self, name: str) -> np.ndarray:
        tensor = self._file.get_tensor(name)
        tick(loaded=tensor.nbytes)
        return tensor

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        view = self._file.get_slice(name)
        parts = [view[(slice(None),) * axis + (slice(s, s + n),)] for s, n in ranges]
        tick(loaded=sum(p.nbytes for p in parts))
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)

    def names(self) -> Collection[str]:
        return self._keys


# How safetensors begins the error for a file whose header it cannot read.
_BAD_HEADER = "Error while deserializing header:"


# safetensors' dtype names (its header's ``dtype``) as numpy dtypes (bf16 via ml_dtypes).
_SAFETENSORS_DTYPES: dict[str, str] = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}


@dataclass
class Placement:
    """What the host loaded: values to bind by name, and chip slices already placed."""

    values: dict[str, Any] = field(default_factory=dict[str, Any])
    placed: dict[ShardOp, np.ndarray] = field(default_factory=dict[ShardOp, np.ndarray])

    @property
    def placed_bytes(self) -> int:
        """Bytes held by the placed slices, a slice shared by several shards counted once."""
        return sum(a.nbytes for a in {id(a): a for a in self.placed.values()}.values())


def place_weights(
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, Any] | None = None,
    chip: int | None = None,
) -> Placement:
    """Load the arguments of ``module``, slicing what comes from ``source`` through the
    manifest: an argument read only by ``tp.shard`` ops (seen through chip programs) is read
    slice by slice, each distinct slice once, and never whole.

    Without ``inputs``, every weight argument (by role) comes from ``source`` and the rest is
    left to the caller. With ``inputs``, every argument comes from either ``source`` or
    ``inputs`` (an input found in both, alike in shape, is taken from ``inputs``), and
    `Placement.values` binds them all. A port is looked up by its name, then its alias.

    With ``chip`` (per-chip programs, one process per chip), only what chip ``chip`` reads
    is loaded: its own ``tp.shard`` slices and the arguments its program (or, for chip 0,
    which runs the host's statements, a host statement) reads; every other argument from
    ``source`` is bound to a zero-stride placeholder, never read nor looked up. Without it
    (the default) every chip's share is loaded.

    Raises BindError naming an argument found nowhere, one of the wrong shape in the
    checkpoint (expected vs found), or one in both with different shapes.
    """
    func = entry_function(module)
    ins, _ = ports(func)
    loads_by_op = {ld.op: ld for ld in read_manifest(module).loads}
    placement = Placement()
    for port, arg in zip(ins, func.body.block.args, strict=True):
        readers = [use.operation for use in uses_through_programs(arg)]
        if chip is not None:
            readers = [op for op in readers if reads_for(op, chip)]
            given = None if inputs is None else port.key_in(inputs)
            if not readers and given is None:
                placement.values[port.name] = _placeholder(port)
                continue
        key = _key_in_source(port, source)
        if inputs is None:
            if port.role != "weight":
                continue
            _check_shape(port, source, None if key is None else source.shape(key))
        else:
            given = port.key_in(inputs)
            if given is not None:
                _check_both(port, source, key, np.shape(inputs[given]))
                placement.values[port.name] = inputs[given]
                continue
            if key is None:
                raise BindError(_nowhere(port, source, inputs))
            _check_shape(port, source, source.shape(key))
        assert key is not None
        loads = [loads_by_op[op] for op in readers if isinstance(op, ShardOp) and op in loads_by_op]
        if loads and len(loads) == len(readers):
            # Shards that cut the same slice (say, each chip's copy of a replicated weight)
            # share one array, read once. Safe: the interpreter never writes into a placed
            # slice (with in-place storage, tp.shard copies it into the chip's memory first).
            read: dict[tuple[int, tuple[tuple[int, int], ...]], np.ndarray] = {}
            for load in loads:
                cut = (load.slice.axis_index, tuple(load.slice.ranges))
                if cut not in read:
                    read[cut] = _load_slice(source, key, load, port)
                placement.placed[load.op] = read[cut]
            placement.values[port.name] = _placeholder(port)
        else:
            placement.values[port.name] = np.asarray(source.whole(key), dtype=port.numpy_dtype)
    return placement


def _placeholder(port: Port) -> np.ndarray:
    """A zero-stride stand-in for an argument never read whole: it costs no memory."""
    return np.broadcast_to(np.zeros((), port.numpy_dtype), port.shape)


def _reader_chip(op: Operation) -> int | None:
    """The chip whose program ``op`` is in; None for a host statement."""
    current: Operation | None = op
    while current is not None:
        if isinstance(current, ChipProgramOp):
            return current.chip_index
        current = current.parent_op()
    return None


def reads_for(op: Operation, chip: int) -> bool:
    """Whether ``op`` is read on chip ``chip``'s behalf (host statements: chip 0's)."""
    owner = _reader_chip(op)
    return owner == chip or (owner is None and chip == 0)


def _key_in_source(port: Port, source: TensorSource) -> str | None:
    for key in (port.name, port.alias):
        if key is not None and source.shape(key) is not None:
            return key
    return None


def describe_port(port: Port) -> str:
    """``f32 of shape [4, 8]``: what a port expects, as errors say it."""
    return f"{port.dtype} of shape {list(port.shape)}" if port.shape else port.dtype


def _looked_for(port: Port) -> str:
    """The names ``port`` was looked up by, and what it expects: ``'x' or 'arg0' (expected
    f32 of shape [2, 3])``."""
    alias = f" or '{port.alias}'" if port.alias else ""
    return f"'{port.name}'{alias} (expected {describe_port(port)})"


def _nowhere(port: Port, source: TensorSource, inputs: Mapping[str, Any]) -> str:
    """The error for ``port`` found in neither file, naming first where its role says it
    lives, then what that file holds instead (the other file's names if it holds none)."""
    files = [(source.names(), "the checkpoint"), (inputs.keys(), "the inputs")]
    if port.role == "weight":
        said = f"checkpoint has no tensor {_looked_for(port)}, nor do the inputs"
    else:
        said = f"the inputs have no tensor {_looked_for(port)}, nor does the checkpoint"
        files.reverse()
    for names, what in files:
        if names:
            return f"{said}; {instead(port.name, names, what)}"
    return said


def _check_both(port: Port, source: TensorSource, key: str | None, given: tuple[int, ...]) -> None:
    if key is None:
        return
    found = source.shape(key)
    if found is not None and tuple(found) != tuple(given):
        raise BindError(
            f"argument '{port.name}' is in both the checkpoint (shape {list(found)}) and the "
            f"inputs (shape {list(given)}): give it once"
        )


def _check_shape(port: Port, source: TensorSource, found: tuple[int, ...] | None) -> None:
    if found is None:
        raise BindError(
            f"checkpoint has no tensor {_looked_for(port)}; {instead(port.name, source.names())}"
        )
    if found != port.shape:
        raise BindError(
            f"checkpoint tensor '{port.name}': expected shape {list(port.shape)}, "
            f"found {list(found)}"
        )


def _load_slice(source: TensorSource, key: str, load: ChipLoad, port: Port) -> np.ndarray:
    data = source.ranges(key, load.slice.axis_index, load.slice.ranges)
    return np.ascontiguousarray(data, dtype=port.numpy_dtype)


CASTS: tuple[str, ...] = ("no", "safe", "same_kind")
"""How a tensor whose dtype is not its port's is treated (numpy's casting rules): ``no``
refuses it; ``safe`` converts only where every value is kept exactly (bf16 or f16 to f32,
f32 to f64, a narrower integer to a wider one); ``same_kind`` converts within a kind too,
rounding (f64 to f32, int to float). An integer *input* converts to another integer
dtype whenever each of its values fits, whatever the rule; a float never becomes an
integer (a position of 3.7 is refused, not run as 3)."""


def cast_problem(
    port: Port, found: np.dtype, casting: str, values: np.ndarray | None = None
) -> str | None:
    """Why a tensor of dtype ``found`` (``values``, when in memory) cannot be bound to
    ``port`` under ``casting`` (`CASTS`), or None."""
    want = port.numpy_dtype
    if found == want or (casting != "no" and np.can_cast(found, want, casting)):
        return None
    if values is not None and found.kind in "iub" and want.kind in "iu":
        info = np.iinfo(want)
        if values.size == 0 or (info.min <= values.min() and values.max() <= info.max):
            return None
        return f"has values outside {port.dtype}'s range"
    hint = " (--cast same_kind converts, rounding)" if np.can_cast(found, want, "same_kind") else ""
    return f"is {found}, not {want}{hint}"


def conform_inputs(
    module: ModuleOp,
    inputs: Mapping[str, Any],
    casting: str,
    source: TensorSource | None = None,
) -> tuple[dict[str, np.ndarray], list[str]]:
    """``inputs`` checked against the ports they are bound to (shape, and dtype under
    ``casting``) and converted to their dtypes; what does not name a port is kept as is.
    Also a note for each conversion that may round. Raises BindError naming the input (and,
    for one ``source`` also holds in another shape, both shapes)."""
    ins, _ = ports(entry_function(module))
    out = dict(inputs)
    notes: list[str] = []
    for port in ins:
        key = port.key_in(inputs)
        if key is None:
            continue
        value = np.asarray(inputs[key])
        if source is not None:
            _check_both(port, source, _key_in_source(port, source), value.shape)
        if value.shape != port.shape:
            raise BindError(
                f"argument '{key}': expected shape {list(port.shape)}, found {list(value.shape)}"
            )
        problem = cast_problem(port, value.dtype, casting, value)
        if problem:
            raise BindError(f"argument '{key}' {problem}")
        if value.dtype != port.numpy_dtype:
            if not np.can_cast(value.dtype, port.numpy_dtype, "safe"):
                notes.append(f"argument '{key}' converted from {value.dtype} to {port.dtype}")
            value = value.astype(port.numpy_dtype)
        out[key] = value
    return out, notes


def check_source(module: ModuleOp, source: TensorSource, casting: str) -> list[str]:
    """Check the dtype of every tensor of ``source`` bound to a port (from its header: nothing
    is read) under ``casting``; a note for each conversion that may round. Raises
    BindError naming the tensor."""
    ins, _ = ports(entry_function(module))
    notes: list[str] = []
    for port in ins:
        key = _key_in_source(port, source)
        if key is None:
            continue
        found = source.dtype(key)
        problem = cast_problem(port, found, casting)
        if problem:
            raise BindError(f"checkpoint tensor '{key}' {problem}")
        if not np.can_cast(found, port.numpy_dtype, "safe"):
            notes.append(f"checkpoint tensor '{key}' converted from {found} to {port.dtype}")
    return notes


def random_weights(module: ModuleOp, seed: int) -> dict[str, np.ndarray]:
    """Random values for every weight argument of ``module`` (by role), at a scale that keeps
    a layer's activations O(1): a weight of rank 0 or 1 is taken for a norm's scale (near 1),
    a matrix for a projection (~ N(0, 1/in_features), its last axis the input)."""
    rng = np.random.default_rng(seed)
    ins, _ = ports(entry_function(module))
    out = {}
    for port in ins:
        if port.role != "weight":
            continue
        if len(port.shape) <= 1:
            data = 1.0 + 0.1 * rng.standard_normal(port.shape)
        else:
            data = rng.standard_normal(port.shape) / np.sqrt(port.shape[-1])
        out[port.name] = data.astype(port.numpy_dtype)
    return out


def random_inputs(module: ModuleOp, seed: int, position: int) -> dict[str, np.ndarray]:
    """Random per-step values for every input and cache argument of ``module`` (by role): an
    integer input is the step's ``position``; a float input ~ N(0, 1); a cache holds
    N(0, 1) entries below ``position`` along its sequence axis and zeros from there on (all
    zeros when it states no axis). Raises BindError, before making anything, when
    ``position`` is beyond a cache or does not fit an integer input's dtype."""
    ins, _ = ports(entry_function(module))
    for port in ins:  # every refusal before anything is made
        axis = port.cache_axis if port.role == "cache" else None
        if axis is not None and position >= port.shape[axis]:
            raise BindError(
                f"position {position} is beyond the cache's {port.shape[axis]} "
                f"positions (0..{port.shape[axis] - 1})"
            )
        if port.role == "input" and port.numpy_dtype.kind in "iu":
            top = int(np.iinfo(port.numpy_dtype).max)
            if not 0 <= position <= top:
                raise BindError(
                    f"position {position} does not fit argument '{port.name}' "
                    f"({port.dtype}: 0..{top})"
                )
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for port in ins:
        if port.role == "input":
            if port.numpy_dtype.kind in "iu":
                out[port.name] = np.full(port.shape, position, dtype=port.numpy_dtype)
            else:
                out[port.name] = rng.standard_normal(port.shape).astype(port.numpy_dtype)
        elif port.role == "cache":
            cache = np.zeros(port.shape, port.numpy_dtype)
            axis = port.cache_axis
            if axis is not None:
                filled = (*port.shape[:axis], position, *port.shape[axis + 1 :])
                cache[(slice(None),) * axis + (slice(0, position),)] = rng.standard_normal(filled)
            out[port.name] = cache
    return out
