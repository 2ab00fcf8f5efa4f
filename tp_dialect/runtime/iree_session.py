"""A serving session whose chips run IREE's native code and keep their state on its device.

`IreeSession` is `Session` (weights read once, caches allocated once, the caches' host stores
never run) with every step's per-chip programs exported (tp-export) and compiled by IREE
(`iree_exec.ModuleCache`: a second session compiles nothing):

- every weight slice (and weight read whole) is placed on IREE's device once, shared by every
  program of the session that reads it alike (keyed as tp-export's manifest names it: the
  input, and for a slice its axis and ranges);
- every cache slice is a device buffer, zeros at first; a step's chip hands its updated slice
  back as one of its outputs, which becomes the slice's buffer for the next step, so a cache
  never leaves the device (IREE writes the donated buffer in place, or returns a new one:
  either way the session holds the update);
- ``@host`` computes only the step's other outputs: the caches' host stores are dropped from
  it before it is compiled, so no step assembles a whole cache.

A step's numbers are those of the interpreter's session to f32 rounding
(``tests/test_iree_session.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.transforms.dead_code_elimination import region_dce

from tp_dialect.analysis.touch import storage
from tp_dialect.ops import ShardOp, UnshardOp
from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.program_ops import ChipProgramOp, FinishOp
from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.checkpoint import TensorSource
from tp_dialect.runtime.iree_exec import (
    RESIDENT,
    Device,
    IreeError,
    ModuleCache,
    compile_entries,
    default_cache_dir,
    entry_caller,
    input_slices,
    iree,
    resident_key,
)
from tp_dialect.runtime.iree_mpi import gather_outputs, run_rank
from tp_dialect.runtime.launch import threads_per_rank
from tp_dialect.runtime.segments import run_host, run_segments
from tp_dialect.runtime.session import Session, Step

Key = tuple[Any, ...]
"""A placed port's identity: ``(input,)`` or ``(input, axis, ranges)`` (`resident_key`)."""


@dataclass
class IreeStep:
    """A step made ready on IREE: the interpreter session's `Step` (its ports and host
    buffers), the export's manifest with its compiled functions, the cache buffer each chip
    output updates, and how many arguments read each placed port."""

    step: Step
    manifest: dict[str, Any]
    functions: dict[str, Any]
    updates: dict[tuple[int, int], Key]
    reads: Counter[Key]


class IreeSession(Session):
    """Step programs run by IREE on chips that keep their state (see the module docstring).
    ``modules``: where compiled segments are kept (`default_cache_dir` if not given)."""

    donate = True
    """Whether a cache slice is handed to its step without a copy (IREE then writes it in
    place). Without, every written argument is copied and the session holds only what the
    step returns: the same numbers, at a cache copy a step (the tests run both)."""

    def __init__(
        self,
        source: TensorSource,
        cache_outputs: Iterable[str] = (),
        modules: ModuleCache | None = None,
        comm: Any = None,
    ) -> None:
        super().__init__(source, cache_outputs)
        _, runtime = iree()
        self.modules = modules or ModuleCache(default_cache_dir())
        self.comm = comm
        self.rank: int | None = None if comm is None else comm.Get_rank()
        target = self.modules.target
        if comm is not None and target.driver == "local-task":
            # A rank's share of the cores is one: IREE's worker pool would only contend
            # with the other ranks (as tp-run's IREE ranks choose, `iree_mpi`).
            if threads_per_rank(comm.Get_size()) == 1:
                target = replace(target, driver="local-sync")
        self.device = Device(runtime, target=target)
        self._compiled: dict[str, Any] = {}  # compiled functions by segment text
        self.resident: dict[Key, Any] = {}  # weights on the device, each once
        self.device_caches: dict[Key, Any] = {}  # cache buffers on the device

    @property
    def cache_bytes(self) -> int:
        """The bytes the session's cache buffers hold on the device."""
        return sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in self.device_caches.values())

    def prepare(self, module: ModuleOp, chip: int | None = None) -> IreeStep:  # type: ignore[override]
        """``module`` (per-chip programs) exported and compiled, its weights and caches placed
        on the device (those a step prepared before placed stay, shared); on a rank (a
        session given ``comm``), only chip ``chip``'s (the rank's) and, on rank 0, the
        host's."""
        if chip != self.rank:
            raise IreeError(
                "an IREE session runs every chip in this process"
                if self.rank is None
                else f"rank {self.rank} runs chip {self.rank}, not {chip}"
            )
        step = super().prepare(module, chip)
        exported = module.clone()
        export_module(exported)
        manifest = manifest_of(exported)
        funcs = {f.sym_name.data: f for f in exported.ops if isinstance(f, FuncOp)}
        _drop_results(funcs["host"], manifest["host"], self.cache_outputs)
        entries = [s for s in manifest["segments"] if chip is None or s["chip"] == chip]
        entries += [manifest["host"]] if chip in (None, 0) else []
        functions = compile_entries(funcs, entries, self.modules, self.device, self._compiled)
        updates = _cache_updates(module, step, self.cache_outputs)
        roles = {p.name: p.role for p in step.ins}
        shards = input_slices(module)
        reads: Counter[Key] = Counter()
        for entry in entries:
            for port in entry["arguments"]:
                if port["kind"] not in RESIDENT or roles.get(port["name"]) == "input":
                    continue
                key = resident_key(port)
                reads[key] += 1
                if roles[port["name"]] == "cache":
                    if key not in self.device_caches:
                        shape = _shape(step, port, shards)
                        zeros = np.zeros(shape, step.ins[_index(step, port["name"])].numpy_dtype)
                        self.device_caches[key] = self.device.place(zeros)
                elif key not in self.resident:
                    data = (
                        step.bound[port["name"]]
                        if port["kind"] == "input"
                        else step.placed[shards[key]]
                    )
                    self.resident[key] = self.device.place(data)
        for key in list(self.caches):  # the device holds the caches: drop the host copies
            held = self.caches[key]
            self.caches[key] = np.broadcast_to(np.zeros((), held.dtype), held.shape)
        return IreeStep(step, manifest, functions, updates, reads)

    def run(self, step: IreeStep, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:  # type: ignore[override]
        """One run of ``step`` on ``inputs``: its outputs but the caches, which are updated
        on the device."""
        plain = step.step
        args = self.arguments(plain, inputs)
        given = {p.name: a for p, a in zip(plain.ins, args, strict=True) if p.role == "input"}
        per_step: dict[Key, Any] = {}

        def host_port(port: dict[str, Any]) -> Any:
            name = port["name"]
            key = resident_key(port)
            if name in given:  # a step's input, whole or a chip's slice of it
                if key not in per_step:
                    data = np.asarray(given[name])
                    if port["kind"] == "shard":
                        data = slice_of(data, port["axis"], key[2])
                    per_step[key] = self.device.place(data)
                return per_step[key]
            return self.device_caches[key] if key in self.device_caches else self.resident[key]

        def donated(port: dict[str, Any]) -> bool:
            # A cache slice read once this step: its buffer is the chip's own, updated in
            # place. Weights are shared by every step: never handed over to be written.
            if not self.donate or port["kind"] not in RESIDENT:
                return False
            key = resident_key(port)
            return key in self.device_caches and step.reads[key] == 1

        call = entry_caller(step.functions, self.device, donated)

        finished: dict[tuple[int, int], Any] = {}
        if self.comm is None:
            results = run_segments(step.manifest, host_port, call, finished)
        else:
            finished = run_rank(
                step.manifest, self.rank, self.comm, host_port, call, self.device.place
            )  # type: ignore[arg-type]
        for output, key in step.updates.items():
            if output in finished:
                self.device_caches[key] = finished[output]
        if self.comm is not None:
            wanted = {
                (p["chip"], p["index"])
                for p in step.manifest["host"]["arguments"]
                if p["kind"] == "output"
            }
            shown = {k: v for k, v in finished.items() if k in wanted}
            everything = gather_outputs(self.comm, shown, self.device.place)
            if self.rank != 0:
                return {}
            results = run_host(step.manifest, everything, host_port, call)
        names = [r["name"] for r in step.manifest["host"]["results"]]
        dtypes = {p.name: p.numpy_dtype for p in plain.outs}
        return {
            name: np.asarray(r.to_host(), dtype=dtypes[name])
            for name, r in zip(names, results, strict=True)
        }


def _index(step: Step, name: str) -> int:
    return next(i for i, p in enumerate(step.ins) if p.name == name)


def _shape(step: Step, port: dict[str, Any], shards: Mapping[Key, ShardOp]) -> tuple[int, ...]:
    """The shape of a cache port's buffer: its slice's, or the whole port's."""
    if port["kind"] == "input":
        return tuple(step.ins[_index(step, port["name"])].shape)
    held = step.placed[shards[resident_key(port)]]
    return tuple(held.shape)


def _drop_results(host: FuncOp, entry: dict[str, Any], names: frozenset[str]) -> None:
    """``@host`` without the results named in ``names`` (the caches' host stores), and
    without the ops only they needed."""
    ret = host.body.block.last_op
    assert isinstance(ret, ReturnOp)
    keep = [i for i, r in enumerate(entry["results"]) if r["name"] not in names]
    values = [ret.operands[i] for i in keep]
    ret.detach()
    ret.erase()
    host.body.block.add_op(ReturnOp(*values))
    host.function_type = FunctionType.from_lists(
        host.function_type.inputs.data, [v.type for v in values]
    )
    host.res_attrs = None
    region_dce(host.body)
    entry["results"] = [entry["results"][i] for i in keep]
    block = host.body.block
    used = [i for i, a in enumerate(block.args) if a.uses]
    for i in reversed(range(len(block.args))):  # the chips' caches: no longer handed over
        if i not in used:
            block.erase_arg(block.args[i])
    host.function_type = FunctionType.from_lists(
        [a.type for a in block.args], host.function_type.outputs.data
    )
    host.arg_attrs = None
    entry["arguments"] = [entry["arguments"][i] for i in used]
    for r in entry["results"]:  # an argument handed back unchanged: by its new index
        if "argument" in r:
            r["argument"] = used.index(r["argument"])


def _cache_updates(
    module: ModuleOp, step: Step, cache_outputs: frozenset[str]
) -> dict[tuple[int, int], Key]:
    """The cache buffer each chip output updates: for every cache output the program
    returns, each chip's part of it, by ``(chip, output index)``, to the placed port (a cache
    slice, or a cache read whole) whose storage it was written in."""
    func = step.func
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    names = {arg: p.name for arg, p in zip(func.body.block.args, step.ins, strict=True)}
    keys = {op: key for key, op in input_slices(module).items()}
    out: dict[tuple[int, int], Key] = {}
    for port, value in zip(step.outs, ret.operands, strict=True):
        if port.name not in cache_outputs:
            continue
        parts: list[SSAValue] = (
            list(value.owner.parts) if isinstance(value.owner, UnshardOp) else [value]
        )
        for part in parts:
            program = part.owner
            if not isinstance(program, ChipProgramOp):
                raise IreeError(f"cache output '{port.name}' is not a chip's output")
            finish = program.body.block.last_op
            assert isinstance(finish, FinishOp)
            held = storage(finish.operands[part.index])  # type: ignore[union-attr]
            if isinstance(held.owner, ShardOp) and held.owner in keys:
                key: Key = keys[held.owner]
            elif isinstance(held, BlockArgument) and held.owner is program.body.block:
                key = (names[program.inputs[held.index]],)  # type: ignore[index]
            else:
                raise IreeError(f"cache output '{port.name}' is not written in a cache's buffer")
            out[(program.chip_index, part.index)] = key  # type: ignore[union-attr]
    return out
