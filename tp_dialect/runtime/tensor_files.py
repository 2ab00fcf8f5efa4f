"""Named host tensors: in memory, or in a checkpoint as Hugging Face ships it.

A checkpoint is one of:

- a model directory, read through the file ``save_pretrained`` writes in it: its
  ``model.safetensors``, else its ``model.safetensors.index.json`` (a sharded checkpoint),
  as transformers looks for them; a directory holding neither is refused;
- a sharded checkpoint's index (a ``.json`` file): its ``weight_map`` names the shard file
  of each tensor, a plain file name in the index's own directory;
- a ``.safetensors`` file.

Reading is lazy and bounded. A shard is opened (safetensors' ``safe_open``: its header read,
the file memory-mapped) the first time a tensor in it is asked about, so a run opens only
the shards holding tensors it binds; a tensor's data is read only when asked for, a slice
reading only its rows. Every problem with a file is a `BindError` naming it (and, for a
shard, the tensor the index maps to it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tp_dialect.dtypes import bf16
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.files import not_regular
from tp_dialect.runtime.progress import tick
from tp_dialect.signature import BindError


class TensorSource(Protocol):
    """Where named host tensors come from: a checkpoint or a dict in memory. ``names`` says
    what it holds without reading anything; ``shape`` is None for a name it does not hold."""

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


SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
INDEX_LIMIT = 64 << 20
"""The largest index read, in bytes (a model of a trillion parameters indexes its tensors in
a few MB)."""

GIVE = f"give a .safetensors file, a model directory or its {INDEX_FILE}"


class SafetensorsSource:
    """The tensors of a checkpoint (a model directory, a sharded checkpoint's index, or a
    ``.safetensors`` file), each read lazily from its shard, in the dtype stored."""

    def __init__(self, path: str | Path) -> None:
        bf16()  # registers the name "bfloat16" with numpy (ml_dtypes), for BF16 tensors

        self.path = Path(path)
        kind = _kind(self.path)
        self._index: Path | None = None
        if kind == "directory":
            kind, self.path = _in_directory(self.path)
        self._shards: dict[str, _Shard] = {}
        if kind == "index":
            self._index = self.path
            self._map = _weight_map(self.path)
            for shard in sorted(set(self._map.values())):
                self._shards[shard] = _Shard(self.path.parent / shard, self.path)
        else:
            single = _Shard(self.path, None)
            single.open(None)  # a file that is not a checkpoint is said at once
            self._shards[""] = single
            self._map = dict.fromkeys(single.keys(), "")

    def shape(self, name: str) -> tuple[int, ...] | None:
        if name not in self._map:
            return None
        return tuple(self._shard_of(name).slice(name).get_shape())

    def dtype(self, name: str) -> np.dtype:
        stored = self._shard_of(name).slice(name).get_dtype()
        found = SAFETENSORS_DTYPES.get(stored)
        if found is None:
            raise BindError(
                f"checkpoint tensor '{name}' is {stored}, a dtype tp does not read (it reads "
                f"{', '.join(SAFETENSORS_DTYPES)})"
            )
        return np.dtype(found)

    def whole(self, name: str) -> np.ndarray:
        tensor = self._shard_of(name).opened.get_tensor(name)
        tick(loaded=tensor.nbytes)
        return tensor

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        view = self._shard_of(name).slice(name)
        parts = [view[(slice(None),) * axis + (slice(s, s + n),)] for s, n in ranges]
        tick(loaded=sum(p.nbytes for p in parts))
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)

    def names(self) -> Collection[str]:
        return self._map.keys()

    def opened_shards(self) -> list[Path]:
        """The files opened so far (a shard no bound tensor lives in is never opened)."""
        return [s.path for s in self._shards.values() if s.handle is not None]

    def _shard_of(self, name: str) -> _Shard:
        shard = self._shards[self._map[name]]
        fresh = shard.handle is None
        shard.open(name)
        if fresh and self._index is not None:
            self._check_shard(shard)
        if name not in shard.keys():
            raise BindError(
                f"checkpoint index '{self._index}' maps tensor '{name}' to shard "
                f"'{shard.path.name}', which does not hold it"
            )
        return shard

    def _check_shard(self, shard: _Shard) -> None:
        """BindError when ``shard`` holds a tensor its index maps elsewhere or not at all:
        which copy is meant is not said (a shard lacking a tensor mapped to it is said when
        that tensor is asked for)."""
        for held in sorted(shard.keys()):
            mapped = self._map.get(held)
            if mapped != shard.path.name:
                where = "maps nowhere" if mapped is None else f"maps to shard '{mapped}'"
                raise BindError(
                    f"checkpoint shard '{shard.path.name}' holds tensor '{held}', which its "
                    f"index '{self._index}' {where}"
                )


# safetensors' dtype names (its header's ``dtype``) as numpy dtypes (bf16 via ml_dtypes).
# Weights are F32, BF16 or F16; the rest binds arguments of those types (an f64 program, an
# integer input). Any other (F8_*, I4, complex) is refused by name.
SAFETENSORS_DTYPES: dict[str, str] = {
    "F32": "float32",
    "BF16": "bfloat16",
    "F16": "float16",
    "F64": "float64",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}

# How safetensors begins the error for a file whose header it cannot read.
_BAD_HEADER = "Error while deserializing header:"


class _Shard:
    """One ``.safetensors`` file, opened on first use; an open that failed fails alike on
    every later use (so a missing shard is one problem, not one per tensor in it)."""

    def __init__(self, path: Path, index: Path | None) -> None:
        self.path = path
        self.index = index  # the index naming this shard; None for a lone file
        self.handle: Any = None
        self._keys: frozenset[str] = frozenset()
        self._failed: str | None = None

    def open(self, wanted: str | None) -> None:
        """Open the file if not yet; BindError naming it (and, for a shard, the index and
        ``wanted``, the tensor it was opened for) when it cannot be."""
        if self.handle is not None:
            return
        if self._failed is None:
            why = self._try_open()
            if why is None:
                return
            if self.index is None:
                self._failed = f"cannot open checkpoint '{self.path}': {why}"
            else:
                self._failed = (
                    f"checkpoint index '{self.index}' maps tensor '{wanted}' to shard "
                    f"'{self.path.name}', which cannot be read: {why}"
                )
        raise BindError(self._failed)

    def _try_open(self) -> str | None:
        """Open the file (header read, data mapped); why it cannot be, or None."""
        from safetensors import safe_open

        try:
            problem = not_regular(self.path)  # safetensors maps it: a directory says ENODEV
        except OSError as err:
            return str(err.strerror or err)
        if problem:
            return f"{problem}; {GIVE}" if self.index is None else problem
        try:
            self.handle = safe_open(str(self.path), framework="numpy")
        except Exception as err:  # safetensors raises its own error types
            text = str(err)
            if text.startswith(_BAD_HEADER):
                text = f"not a safetensors file ({text[len(_BAD_HEADER) :].strip()})"
            return text
        self._keys = frozenset(self.handle.keys())
        return None

    def keys(self) -> frozenset[str]:
        return self._keys

    @property
    def opened(self) -> Any:
        assert self.handle is not None, "opened before use"
        return self.handle

    def slice(self, name: str) -> Any:
        return self.opened.get_slice(name)


def _kind(path: Path) -> str:
    """``directory``, ``index`` (a ``.json``) or ``file``; BindError when ``path`` is none."""
    try:
        os.stat(path)
    except OSError as err:
        raise BindError(f"cannot open checkpoint '{path}': {err.strerror or err}") from None
    if path.is_dir():
        return "directory"
    return "index" if path.suffix == ".json" else "file"


def _in_directory(directory: Path) -> tuple[str, Path]:
    """The checkpoint a model directory holds: its single file, else its index (the order
    transformers' ``from_pretrained`` looks for them in)."""
    index, single = directory / INDEX_FILE, directory / SINGLE_FILE
    try:
        held = set(os.listdir(directory))  # one that cannot be listed is said as such
    except OSError as err:
        raise BindError(f"cannot open checkpoint '{directory}': {err.strerror or err}") from None
    has_index, has_single = INDEX_FILE in held, SINGLE_FILE in held
    if not (has_index or has_single):
        raise BindError(
            f"cannot open checkpoint '{directory}': a directory holding neither {SINGLE_FILE} "
            f"nor {INDEX_FILE} (tp reads safetensors checkpoints)"
        )
    return ("file", single) if has_single else ("index", index)


def _weight_map(index: Path) -> dict[str, str]:
    """The ``weight_map`` of a sharded checkpoint's index: tensor name to shard file name."""

    def bad(why: str) -> BindError:
        return BindError(f"cannot open checkpoint '{index}': {why}")

    try:
        problem = not_regular(index)
        if problem:
            raise bad(f"{problem}; {GIVE}")
        size = os.path.getsize(index)
        if size > INDEX_LIMIT:
            raise bad(f"an index of {size} bytes, beyond the {INDEX_LIMIT} bytes tp reads")
        text = index.read_bytes()
    except OSError as err:
        raise bad(str(err.strerror or err)) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise bad(f"not a JSON index ({err})") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise bad("not a sharded checkpoint's index: no 'weight_map' object")
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or Path(shard).name != shard or shard in ("", ".", ".."):
            raise bad(
                f"weight_map maps '{name}' to {json.dumps(shard)}, not the name of a file in "
                "the index's directory"
            )
    return weight_map
