"""Host loading: named tensors from a checkpoint (or memory) onto chips, through the manifest.

A weight every use of which is a ``tp.shard`` (directly, or inside the chip programs it is
handed to) is never loaded whole: each chip's slice is read on its own (from a
``safetensors`` file, range by range, without reading the rest) and handed to the
interpreter as already placed; the full argument is bound to a zero-stride placeholder that
costs no memory. A slice several ``tp.shard`` ops cut alike (copies of one shard in
different chip programs) is read once and shared. Spine tensors (norm weights) are loaded
whole. The same weights are read at every stage of lowering, since the manifest is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.manifest import ChipLoad, read_manifest
from tp_dialect.analysis.values import uses_through_programs
from tp_dialect.ops import ShardOp
from tp_dialect.runtime.numpy_impls import slice_of
from tp_dialect.signature import BindError, Port, entry_function, ports

DECODE_INPUTS = ("hidden_states", "position", "past_key.", "past_value.")


def is_decode_input(name: str) -> bool:
    """Whether ``name`` is a per-step input (not a weight of the checkpoint)."""
    return name in DECODE_INPUTS[:2] or name.startswith(DECODE_INPUTS[2:])


class TensorSource(Protocol):
    """Where named host tensors come from: a checkpoint file or a dict in memory."""

    def shape(self, name: str) -> tuple[int, ...] | None: ...

    def whole(self, name: str) -> np.ndarray: ...

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray: ...


@dataclass
class MemorySource:
    """Host tensors already in memory, by name."""

    tensors: Mapping[str, np.ndarray]

    def shape(self, name: str) -> tuple[int, ...] | None:
        t = self.tensors.get(name)
        return None if t is None else tuple(np.shape(t))

    def whole(self, name: str) -> np.ndarray:
        return np.asarray(self.tensors[name])

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        return slice_of(np.asarray(self.tensors[name]), axis, list(ranges))


class SafetensorsSource:
    """Tensors of a ``.safetensors`` checkpoint, read lazily (a slice reads only its rows)."""

    def __init__(self, path: str | Path) -> None:
        from safetensors import safe_open

        import tp_dialect.dtypes  # noqa: F401 - registers bfloat16 with numpy via ml_dtypes

        try:
            self._file = safe_open(str(path), framework="numpy")
        except Exception as err:  # safetensors raises its own error types
            raise BindError(f"cannot open checkpoint '{path}': {err}") from None
        self._keys = set(self._file.keys())

    def shape(self, name: str) -> tuple[int, ...] | None:
        if name not in self._keys:
            return None
        return tuple(self._file.get_slice(name).get_shape())

    def whole(self, name: str) -> np.ndarray:
        return self._file.get_tensor(name)

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        view = self._file.get_slice(name)
        parts = [view[(slice(None),) * axis + (slice(s, s + n),)] for s, n in ranges]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)


@dataclass
class Placement:
    """What the host loaded: values to bind by name, and chip slices already placed."""

    values: dict[str, Any] = field(default_factory=dict[str, Any])
    placed: dict[ShardOp, np.ndarray] = field(default_factory=dict[ShardOp, np.ndarray])

    @property
    def placed_bytes(self) -> int:
        """Bytes held by the placed slices, a slice shared by several shards counted once."""
        return sum(a.nbytes for a in {id(a): a for a in self.placed.values()}.values())


def place_weights(module: ModuleOp, source: TensorSource) -> Placement:
    """Load every weight argument of ``module`` from ``source``, slicing through the manifest:
    a weight read only by ``tp.shard`` ops (seen through chip programs) is read slice by
    slice, each distinct slice once, and never whole.

    Raises BindError naming a missing tensor or one of the wrong shape (expected vs found).
    """
    func = entry_function(module)
    ins, _ = ports(func)
    loads_by_op = {ld.op: ld for ld in read_manifest(module).loads}
    placement = Placement()
    for port, arg in zip(ins, func.body.block.args, strict=True):
        if is_decode_input(port.name):
            continue
        _check_shape(port, source.shape(port.name))
        readers = [use.operation for use in uses_through_programs(arg)]
        loads = [loads_by_op[op] for op in readers if isinstance(op, ShardOp) and op in loads_by_op]
        if loads and len(loads) == len(readers):
            # Shards that cut the same slice (say, each chip's copy of a replicated weight)
            # share one array, read once. Safe: the interpreter never writes into a placed
            # slice (with in-place storage, tp.shard copies it into the chip's memory first).
            read: dict[tuple[int, tuple[tuple[int, int], ...]], np.ndarray] = {}
            for load in loads:
                key = (load.slice.axis_index, tuple(load.slice.ranges))
                if key not in read:
                    read[key] = _load_slice(source, load, port)
                placement.placed[load.op] = read[key]
            placement.values[port.name] = np.broadcast_to(
                np.zeros((), port.numpy_dtype), port.shape
            )
        else:
            placement.values[port.name] = np.asarray(
                source.whole(port.name), dtype=port.numpy_dtype
            )
    return placement


def _check_shape(port: Port, found: tuple[int, ...] | None) -> None:
    if found is None:
        raise BindError(
            f"checkpoint has no tensor '{port.name}' (expected {port.dtype} of shape "
            f"{list(port.shape)})"
        )
    if found != port.shape:
        raise BindError(
            f"checkpoint tensor '{port.name}': expected shape {list(port.shape)}, "
            f"found {list(found)}"
        )


def _load_slice(source: TensorSource, load: ChipLoad, port: Port) -> np.ndarray:
    data = source.ranges(load.tensor, load.slice.axis_index, load.slice.ranges)
    return np.ascontiguousarray(data, dtype=port.numpy_dtype)


def random_weights(module: ModuleOp, seed: int) -> dict[str, np.ndarray]:
    """Random weights for every weight argument of ``module``, at a scale that keeps a
    layer's activations O(1): norm weights near 1, projections ~ N(0, 1/in_features)."""
    rng = np.random.default_rng(seed)
    ins, _ = ports(entry_function(module))
    out = {}
    for port in ins:
        if is_decode_input(port.name):
            continue
        if port.name.endswith("norm.weight"):
            data = 1.0 + 0.1 * rng.standard_normal(port.shape)
        else:
            data = rng.standard_normal(port.shape) / np.sqrt(port.shape[-1])
        out[port.name] = data.astype(port.numpy_dtype)
    return out


def random_inputs(module: ModuleOp, seed: int, position: int) -> dict[str, np.ndarray]:
    """Random decode inputs: hidden states, ``position``, caches filled below ``position``."""
    rng = np.random.default_rng(seed)
    ins, _ = ports(entry_function(module))
    out: dict[str, np.ndarray] = {}
    for port in ins:
        if port.name == "position":
            out[port.name] = np.asarray(position, dtype=np.int64)
        elif port.name == "hidden_states":
            out[port.name] = rng.standard_normal(port.shape).astype(np.float32)
        elif port.name.startswith(("past_key.", "past_value.")):
            cache = np.zeros(port.shape, np.float32)
            if position > port.shape[2]:
                raise BindError(
                    f"position {position} is beyond the cache's {port.shape[2]} positions"
                )
            cache[:, :, :position] = rng.standard_normal((*port.shape[:2], position, port.shape[3]))
            out[port.name] = cache
    return out
