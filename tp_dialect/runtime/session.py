"""Step programs run one after another on chips that keep their state.

Serving runs two programs over and over — a prefill, then one decode step per token — on the
same weights and the same KV cache. A `Session` gives every chip its state once and keeps it:

- every weight slice (and weight read whole) is read from the checkpoint once, shared by every
  program of the session that cuts it alike, and never copied again (weights are only read);
- every cache slice (a ``tp.shard`` of a cache port, keyed by port, axis and ranges) is one
  chip buffer, allocated once (zeros), shared by every program that cuts it alike, and
  written in place by the programs' cache updates (storage semantics: an in-place
  ``tensor.insert_slice`` overwrites it); a cache read whole (an unsharded program) is one
  host buffer likewise;
- a program's host stores of its caches (``tp.unshard`` into ``present_*``) are never run:
  the caches stay where the chips hold them, so no step copies a cache to the host.

So a step allocates only its activations, and memory does not grow with tokens. A step's
results are its other outputs (the next ids, logits). The same numbers as running each step
on its own with the caches round-tripped through the host (`tests/test_session.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.ops import ShardOp, UnshardOp
from tp_dialect.program_ops import ChipProgramOp, uses_through_programs
from tp_dialect.runtime.checkpoint import TensorSource, place_weights, reads_for
from tp_dialect.runtime.numpy_impls import LocatingInterpreter, NumpyFunctions
from tp_dialect.runtime.reference import bind
from tp_dialect.runtime.relay_exec import run_linked
from tp_dialect.signature import BindError, Port, entry_function, ports
from tp_dialect.xdsl_compat import func_functions

Cut = tuple[str, int, tuple[tuple[int, int], ...]]  # (port, axis, ranges)


class _Remembered:
    """A tensor source that reads each slice (and each whole tensor) once: the programs of a
    session share what they cut alike."""

    def __init__(self, source: TensorSource) -> None:
        self.source = source
        self.read: dict[object, np.ndarray] = {}

    def shape(self, name: str) -> tuple[int, ...] | None:
        return self.source.shape(name)

    def dtype(self, name: str) -> np.dtype:
        return self.source.dtype(name)

    def names(self) -> Any:
        return self.source.names()

    def whole(self, name: str) -> np.ndarray:
        key = ("whole", name)
        if key not in self.read:
            self.read[key] = self.source.whole(name)
        return self.read[key]

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        key = ("ranges", name, axis, tuple(map(tuple, ranges)))
        if key not in self.read:
            self.read[key] = self.source.ranges(name, axis, key[3])  # type: ignore[arg-type]
        return self.read[key]


@dataclass
class Step:
    """One program made ready to run in a session: its entry, ports, the slices placed on its
    chips (the session's buffers), the values bound whole, and the host stores skipped."""

    module: ModuleOp
    func: FuncOp
    ins: list[Port]
    outs: list[Port]
    placed: dict[ShardOp, np.ndarray]
    bound: dict[str, Any]
    skipped: set[UnshardOp] = field(default_factory=set[UnshardOp])
    results: list[int] = field(default_factory=list[int])  # the outputs a step hands back


class Session:
    """Programs run step after step on the same chip state (see the module docstring).
    ``cache_outputs``: the names of the outputs that hand a cache back (skipped)."""

    def __init__(self, source: TensorSource, cache_outputs: Iterable[str] = ()) -> None:
        self.source = _Remembered(source)
        self.caches: dict[Cut | str, np.ndarray] = {}  # slices by cut, whole caches by port
        self.cache_outputs = frozenset(cache_outputs)

    @property
    def cache_bytes(self) -> int:
        """The bytes the session's caches hold (allocated once, whatever the steps run)."""
        return sum(a.nbytes for a in self.caches.values())

    @property
    def weight_bytes(self) -> int:
        """The bytes of weights the session read (each slice once)."""
        return sum(a.nbytes for a in self.source.read.values())

    def prepare(self, module: ModuleOp, chip: int | None = None) -> Step:
        """``module`` made ready: weights placed from the session's reads, caches bound to the
        session's buffers; with ``chip`` (one MPI rank), only what chip ``chip`` reads. Raises
        BindError for a weight the checkpoint lacks or misshapes."""
        func = entry_function(module)
        ins, outs = ports(func)
        placement = place_weights(module, self.source, chip=chip)
        placed = dict(placement.placed)
        bound: dict[str, Any] = dict(placement.values)
        loads = {ld.op: ld for ld in read_manifest(module).loads}
        for port, arg in zip(ins, func.body.block.args, strict=True):
            if port.role != "cache":
                continue
            readers = [use.operation for use in uses_through_programs(arg)]
            shards = [op for op in readers if isinstance(op, ShardOp) and op in loads]
            placeholder = np.broadcast_to(np.zeros((), port.numpy_dtype), port.shape)
            if readers and len(shards) == len(readers):
                for op in shards:
                    if chip is not None and not reads_for(op, chip):
                        continue  # another rank's slice
                    sl = loads[op].slice
                    cut = (port.name, sl.axis_index, tuple(sl.ranges))
                    if cut not in self.caches:
                        shape = list(port.shape)
                        shape[sl.axis_index] = sum(n for _, n in sl.ranges)
                        self.caches[cut] = np.zeros(shape, port.numpy_dtype)
                    placed[op] = self.caches[cut]
                bound[port.name] = placeholder
            elif chip is not None and not any(reads_for(op, chip) for op in readers):
                bound[port.name] = placeholder
            else:
                if port.name not in self.caches:
                    self.caches[port.name] = np.zeros(port.shape, port.numpy_dtype)
                bound[port.name] = self.caches[port.name]
        ret = func.body.block.last_op
        assert isinstance(ret, ReturnOp)
        skipped: set[UnshardOp] = set()
        results = []
        for i, (port, value) in enumerate(zip(outs, ret.operands, strict=True)):
            if port.name not in self.cache_outputs:
                results.append(i)
            elif isinstance(value.owner, UnshardOp):
                skipped.add(value.owner)
        return Step(module, func, ins, outs, placed, bound, skipped, results)

    def arguments(self, step: Step, inputs: Mapping[str, Any]) -> list[Any]:
        """``step``'s arguments for one run: its per-step ``inputs`` by name, checked, and
        the session's buffers for its weights and caches (never copied)."""
        values = dict(step.bound)
        for port in step.ins:
            if port.role == "input":
                key = port.key_in(inputs)
                if key is None:
                    raise BindError(f"missing input '{port.name}'")
                values[port.name] = inputs[key]
        args = bind(step.ins, values)
        for i, port in enumerate(step.ins):  # bind() may convert: keep the session's buffers
            if port.role != "input":
                args[i] = values[port.name]
        return args

    def run(self, step: Step, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """One run of ``step`` on ``inputs`` (its per-step inputs by name): its outputs but the
        caches it hands back. The caches are updated where the chips hold them."""
        args = self.arguments(step, inputs)
        functions = NumpyFunctions(step.placed, storage=True, resident=True, skipped=step.skipped)
        if any(isinstance(op, ChipProgramOp) for op in step.func.body.block.ops):
            results = run_linked(step.module, step.func, args, functions=functions)
        else:
            interpreter = LocatingInterpreter(step.module)
            interpreter.register_implementations(func_functions())
            interpreter.register_implementations(functions)
            results = interpreter.call_op(step.func, tuple(args))
        return {
            step.outs[i].name: np.asarray(results[i], dtype=step.outs[i].numpy_dtype)
            for i in step.results
        }
