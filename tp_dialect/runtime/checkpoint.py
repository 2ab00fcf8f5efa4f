"""Host loading: named tensors from a checkpoint (or memory) onto chips, through the manifest.

Before anything loads, every argument is checked against the checkpoint from its header
alone (`binding.check_arguments`: names with or without a Hugging Face prefix, shapes,
dtypes, a whole model's unread tensors; every problem in one error). Then a weight every
use of which is a ``tp.shard`` (directly, or inside the chip programs it is handed to) is
never loaded whole: each chip's slice is read on its own (from its ``safetensors`` shard,
range by range, without reading the rest) and handed to the interpreter as already placed;
the full argument is bound to a zero-stride placeholder that costs no memory. A slice
several ``tp.shard`` ops cut alike (copies of one shard in different chip programs, or a
tied embedding read by the embedding and the head) is read once and shared. Weights read
whole (a norm's scale) are loaded whole. The same weights are read at every stage of
lowering, since the manifest is. A tensor stored in a narrower dtype than its argument's
(bf16 into f32) is widened as it is read, exactly.

A serving layer opens a Hugging Face model directory with `open_model_dir` (a `ModelWeights`:
``check(*programs)`` before anything runs, ``read(name, slices)``, and a `TensorSource` for
`place_weights` and `Session`).

Nothing here knows a model: what is a weight, an input or a cache is the port's role, which
the program states (`tp_dialect.signature`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import BlockArgument, Operation
from xdsl.traits import SymbolTable

from tp_dialect.analysis.certify.manifest import ChipLoad, read_manifest
from tp_dialect.ops import ShardOp
from tp_dialect.program_ops import ChipProgramOp, uses_through_programs
from tp_dialect.runtime.binding import (
    CASTS,
    cast_problem,
    check_arguments,
    check_programs,
    describe_port,
    name_forms,
    shape_in_both,
)
from tp_dialect.runtime.missing import instead
from tp_dialect.runtime.tensor_files import MemorySource, SafetensorsSource, TensorSource
from tp_dialect.signature import BindError, Port, entry_function, ports

__all__ = [
    "CASTS",
    "MemorySource",
    "ModelWeights",
    "Placement",
    "SafetensorsSource",
    "TensorSource",
    "cast_problem",
    "check_arguments",
    "check_programs",
    "conform_inputs",
    "describe_port",
    "open_model_dir",
    "place_weights",
    "random_inputs",
    "random_weights",
]


class ModelWeights(SafetensorsSource):
    """A Hugging Face model directory's weights (or a ``.safetensors`` file's, or a sharded
    checkpoint index's): checked against programs before any tensor is read, then read by
    the programs' names, a chip's slice at a time. A `TensorSource` (for `place_weights` and
    `tp_dialect.runtime.session.Session`)."""

    def check(self, *modules: ModuleOp, casting: str = "safe") -> list[str]:
        """Every weight argument of ``modules`` bound from its header alone (name with or
        without the family's prefix, shape, dtype equal or widened; a whole model reading
        every tensor): the notes for conversions that may round (``casting="same_kind"``).
        Raises one BindError naming every problem."""
        return check_programs(modules, self, casting)

    def read(
        self,
        name: str,
        slices: tuple[int, Sequence[tuple[int, int]]] | None = None,
        dtype: np.dtype | str | None = None,
    ) -> np.ndarray:
        """The tensor a program names ``name`` (found as `name_forms` says): whole, or with
        ``slices = (axis, [(start, size), ...])`` only those index ranges along ``axis``,
        read without the rest; in the dtype stored, or converted to ``dtype``. BindError
        when the checkpoint holds no such tensor."""
        stored = [form for form in name_forms(name) if form in self.names()]
        if not stored:
            raise BindError(f"checkpoint has no tensor '{name}'; {instead(name, self.names())}")
        if len(stored) > 1:
            both = " and ".join(f"'{f}'" for f in stored)
            raise BindError(f"checkpoint holds both {both}, each a name of '{name}': keep one")
        key = stored[0]
        data = self.whole(key) if slices is None else self.ranges(key, slices[0], slices[1])
        return data if dtype is None else np.ascontiguousarray(data, dtype=np.dtype(dtype))


def open_model_dir(path: str | Path) -> ModelWeights:
    """The weights of the model directory ``path`` (its ``model.safetensors``, else its
    ``model.safetensors.index.json``; a ``.safetensors`` file or an index is taken too),
    opened: nothing but the index read yet. Raises BindError, one line, for a path that is
    no readable checkpoint."""
    return ModelWeights(path)


SliceKey = tuple[str, int, tuple[tuple[int, int], ...]]
"""A slice of an argument: its name, the axis cut and the ranges kept (as tp-export's
manifest names a shard port)."""


@dataclass
class Placement:
    """What the host loaded: values to bind by name, and chip slices already placed."""

    values: dict[str, Any] = field(default_factory=dict[str, Any])
    placed: dict[ShardOp, np.ndarray] = field(default_factory=dict[ShardOp, np.ndarray])
    sliced: dict[SliceKey, np.ndarray] = field(default_factory=dict[SliceKey, np.ndarray])
    """With ``through_calls``: the slices an outlined program's per-chip functions cut of an
    argument its calls hand them, by (argument, axis, ranges): one ``tp.shard`` op cuts a
    new layer's weight at every call, so a slice is known by what it cuts, not by its op."""

    @property
    def placed_bytes(self) -> int:
        """Bytes held by the placed slices, a slice shared by several shards counted once."""
        held = [*self.placed.values(), *self.sliced.values()]
        return sum(a.nbytes for a in {id(a): a for a in held}.values())


def place_weights(
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, Any] | None = None,
    chip: int | None = None,
    casting: str = "safe",
    through_calls: bool = False,
) -> Placement:
    """Load the arguments of ``module``, slicing what comes from ``source`` through the
    manifest: an argument read only by ``tp.shard`` ops (seen through chip programs) is read
    slice by slice, each distinct slice once, and never whole. Nothing is read before every
    argument is checked (`check_arguments`, under ``casting``): a BindError lists every
    argument found nowhere, misshaped, of a dtype refused, named ambiguously, and a whole
    model's unread tensors.

    Without ``inputs``, every weight argument (by role) comes from ``source`` and the rest is
    left to the caller. With ``inputs``, every argument comes from either ``source`` or
    ``inputs`` (an input found in both, alike in shape, is taken from ``inputs``), and
    `Placement.values` binds them all. A port binds the tensor its name (with or without a
    Hugging Face prefix: `binding.resolve`), else its alias, names; a tensor is converted to
    its port's dtype as it is read (bf16 to f32: exactly).

    With ``chip`` (per-chip programs, one process per chip), only what chip ``chip`` reads
    is loaded: its own ``tp.shard`` slices and the arguments its program (or, for chip 0,
    which runs the host's statements, a host statement) reads; every other argument is
    bound to a zero-stride placeholder, never read (its header is checked, as every rank
    checks every argument, so a bad checkpoint fails alike on each). Without it (the
    default) every chip's share is loaded.

    With ``through_calls`` (a runner that cuts each call's slices itself: IREE's), an
    argument read by calls to an outlined program's per-chip functions, and otherwise only
    by ``tp.shard``, is read slice by slice too — the slices the manifest follows those calls
    to (`Placement.sliced`) — and bound to a placeholder; without it, such an argument is
    read whole (the interpreter runs the calls on the values bound).
    """
    keys, _ = check_arguments(module, source, inputs, casting)
    func = entry_function(module)
    ins, _ = ports(func)
    manifest = read_manifest(module)
    loads_by_op = {ld.op: ld for ld in manifest.loads}
    by_tensor: dict[str, list[ChipLoad]] = {}
    for ld in manifest.loads:
        if chip is None or ld.chip == chip:
            by_tensor.setdefault(ld.tensor, []).append(ld)
    placement = Placement()
    for port, arg in zip(ins, func.body.block.args, strict=True):
        given = None if inputs is None else port.key_in(inputs)
        if given is not None:
            assert inputs is not None
            placement.values[port.name] = inputs[given]
            continue
        key = keys.get(port.name)
        if key is None:  # not the checkpoint's to bind: an input left to the caller
            continue
        uses = [
            u for u in uses_through_programs(arg) if chip is None or reads_for(u.operation, chip)
        ]
        readers = [u.operation for u in uses]
        if chip is not None and not readers:
            placement.values[port.name] = _placeholder(port)
            continue
        loads = [loads_by_op[op] for op in readers if isinstance(op, ShardOp) and op in loads_by_op]
        calls = [
            u.operation
            for u in uses
            if through_calls
            and isinstance(u.operation, CallOp)
            and _cut_only(module, u.operation, u.index)
        ]
        followed = by_tensor.get(port.name, [])  # the slices the manifest follows calls to
        if (
            calls
            and len(loads) + len(calls) == len(readers)
            and not any(_whole_slice(ld) for ld in followed)  # a whole axis: read whole
        ):
            for load in followed:
                cut = (port.name, load.slice.axis_index, tuple(load.slice.ranges))
                if cut not in placement.sliced:
                    placement.sliced[cut] = _load_slice(source, key, load, port)
            for load in loads:
                cut = (port.name, load.slice.axis_index, tuple(load.slice.ranges))
                placement.placed[load.op] = placement.sliced[cut]
            placement.values[port.name] = _placeholder(port)
        elif loads and len(loads) == len(readers):
            # Shards that cut the same slice (say, each chip's copy of a replicated weight,
            # or a tied table's rows read by the embedding and the head) share one array,
            # read once. Safe: the interpreter never writes into a placed slice (with
            # in-place storage, tp.shard copies it into the chip's memory first).
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


def _whole_slice(load: ChipLoad) -> bool:
    """Whether ``load`` keeps its axis whole (a chip's copy of a replicated tensor)."""
    full = load.slice.full_shape[load.slice.axis_index]
    return [tuple(r) for r in load.slice.ranges] == [(0, full)]


def _cut_only(module: ModuleOp, call: CallOp, index: int) -> bool:
    """Whether the function ``call`` calls reads its argument ``index`` only by
    ``tp.shard``, and every call of it beside ``call`` hands that place an argument of their
    block: tp-export's rule for a slice the host places (a call handing it anything else
    makes the exported segments read the argument whole, `export_cut`)."""
    callee = SymbolTable.lookup_symbol(module, call.callee)
    if not isinstance(callee, FuncOp) or not callee.body.blocks:
        return False
    if not all(isinstance(u.operation, ShardOp) for u in callee.body.block.args[index].uses):
        return False
    block = call.parent_block()
    if block is None:
        return False
    siblings = [op for op in block.ops if isinstance(op, CallOp) and op.callee == call.callee]
    return all(
        isinstance(handed := op.arguments[index], BlockArgument) and handed.owner is block
        for op in siblings
    )


def is_placeholder(value: Any) -> bool:
    """Whether ``value`` is the zero-stride stand-in `_placeholder` binds for a tensor never
    read: whatever computes on it computes on zeros."""
    return isinstance(value, np.ndarray) and value.ndim > 0 and not any(value.strides)


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


def _load_slice(source: TensorSource, key: str, load: ChipLoad, port: Port) -> np.ndarray:
    data = source.ranges(key, load.slice.axis_index, load.slice.ranges)
    return np.ascontiguousarray(data, dtype=port.numpy_dtype)


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
            shape_in_both(port, source, value.shape)
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
