"""Property tests of the lowering passes on random valid TP programs.

Programs come from `random_programs.programs` (N = 1..4 chips, 3..25 statements, small f32
tensors): shards, chip-local and spine elementwise ops, all-reduces spelled ``tp.allreduce`` or
as the seed's fold of adds, carried state updated in place, spine results and ``tp.unshard``.
The generator evaluates each program in plain numpy as it builds it.

Each runs with the seed's ``fold`` all-reduce and with ``ring``, which tp-transfers spells as
a reduce-scatter of rotated folds and an all-gather (where a tensor axis cuts into N slices):
its numbers are the source's to f32 rounding from then on, bitwise the same at every later
stage (per-chip programs included: the same adds in the same order).

Besides the project's interpreter and analyses, the tests use `ChipMachine`, an independent
model of the spatial program: N separate chip memories keyed by storage (an in-place update
writes its destination's storage), each entry tagged with the SSA value it holds, so a section
reading a value on a chip that does not hold that exact value (never written or transferred
there, or already overwritten in place) fails. It runs sections and transfers in program
order, or phase by phase with each phase's statements in reverse order (any hazard between two
statements of one phase then shows as a wrong value).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, check_ir, parse
from random_programs import Program, Val, programs, tensor_type
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.schedule.crossings import transfers
from tp_dialect.analysis.touch import SectionTouch, is_host_value, statements, touch
from tp_dialect.attrs import chip_of
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function, ports

ALGORITHMS = ("fold", "ring")
F32 = np.float32


def _pipeline(algorithm: str) -> list[str]:
    return [
        "tp-verify",
        "tp-raise-allreduce",
        f"tp-relocate{{allreduce={algorithm}}}",
        "tp-transfers",
        "tp-phase",
    ]


def lower(prog: Program, algorithm: str, upto: str = "tp-phase") -> ModuleOp:
    """``prog`` parsed and taken through the pipeline up to and including ``upto``."""
    module = parse(prog.text())
    for spec in _pipeline(algorithm):
        apply(module, spec)
        check_ir(module)
        if spec.startswith(upto):
            break
    return module


def assert_outputs(got: dict[str, np.ndarray], want: dict[str, np.ndarray], exact: bool) -> None:
    assert set(got) == set(want)
    for name in want:
        if exact:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
        else:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


def assert_rounded(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """The same outputs to f32 rounding: a sum added in another order (a ring's rotated
    folds) differs from the seed's by a few ulps of its summands, which may cancel, so the
    bound is relative to each output's largest magnitude too."""
    assert set(got) == set(want)
    for name, w in want.items():
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5 * scale, err_msg=name)


def expanded(module: ModuleOp) -> bool:
    """Whether no ring collective is left: tp-transfers spelled every ring out as rotated
    folds (or none was asked for)."""
    return not any(
        isinstance(op, AllReduceOp) and op.algorithm_name == "ring" for op in module.walk()
    )


def block_ops(module: ModuleOp) -> list[Operation]:
    return list(entry_function(module).body.block.ops)


def named_op(module: ModuleOp, name: str) -> Operation:
    """The op binding ``%name`` (unique in generated and injected programs)."""
    found = [op for op in module.walk() if op.results and op.results[0].name_hint == name]
    assert len(found) == 1, f"%{name} is bound by {len(found)} ops"
    return found[0]


def is_host(value: SSAValue) -> bool:
    """A function argument or a constant: independent of tp's `is_host_value`."""
    if isinstance(value, BlockArgument):
        return isinstance(value.owner.parent_op(), FuncOp)
    return isinstance(value.owner, arith.ConstantOp | tensor.EmptyOp)


# -- an independent model of the chips ------------------------------------------------------


def storage_of(value: SSAValue) -> SSAValue:
    """The buffer a value lives in: through section yields and in-place insert_slice."""
    while True:
        owner = value.owner
        if isinstance(owner, SectionOp):
            value = owner.body.block.last_op.operands[value.index]  # type: ignore[union-attr]
        elif isinstance(owner, tensor.InsertSliceOp):
            value = owner.dest
        else:
            return value


def _index(op: tensor.ExtractSliceOp | tensor.InsertSliceOp) -> tuple[slice, ...]:
    offsets = op.static_offsets.get_values()
    sizes = op.static_sizes.get_values()
    strides = op.static_strides.get_values()
    return tuple(slice(o, o + s * k, k) for o, s, k in zip(offsets, sizes, strides, strict=True))


def _positions(ranges: list[tuple[int, int]]) -> list[int]:
    return [i for s, n in ranges for i in range(s, s + n)]


def evaluate(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """One op of a generated program on numpy values (written apart from tp's interpreter)."""
    if isinstance(op, linalg.AddOp):
        return [np.asarray(args[0] + args[1], F32)]
    if isinstance(op, arith.AddfOp):
        return [np.asarray(args[0] + args[1], F32)]
    if isinstance(op, arith.SubfOp):
        return [np.asarray(args[0] - args[1], F32)]
    if isinstance(op, arith.MulfOp):
        return [np.asarray(args[0] * args[1], F32)]
    if isinstance(op, ShardOp):
        sl = op.slice
        return [np.take(args[0], _positions(sl.ranges), axis=sl.axis_index)]
    if isinstance(op, UnshardOp):
        shape = tuple(op.result.type.get_shape())  # type: ignore[attr-defined]
        full = np.full(shape, np.nan, F32)
        for part, sl in zip(args, op.slices.data, strict=True):
            index: list[object] = [slice(None)] * len(shape)
            index[sl.axis_index] = _positions(sl.ranges)
            full[tuple(index)] = part
        assert not np.isnan(full).any(), "tp.unshard left part of its result unwritten"
        return [full]
    if isinstance(op, AllReduceOp):
        total = args[0]
        for partial in args[1:]:
            total = np.asarray(total + partial, F32)
        return [total]
    if isinstance(op, tensor.ExtractSliceOp):
        return [args[0][_index(op)].copy()]
    if isinstance(op, tensor.ConcatOp):  # a ring's or two-shot's all-gather
        return [np.concatenate(args, axis=op.dim.value.data)]
    if isinstance(op, tensor.InsertSliceOp):
        out = args[1].copy()
        out[_index(op)] = args[0]
        return [out]
    if isinstance(op, arith.ConstantOp):
        attr = op.value
        assert isinstance(attr, DenseIntOrFPElementsAttr)
        shape = tuple(attr.type.get_shape())
        return [np.full(shape, attr.get_values()[0], F32)]
    if isinstance(op, tensor.EmptyOp):
        return [np.zeros(tuple(op.tensor.type.get_shape()), F32)]  # type: ignore[attr-defined]
    raise NotImplementedError(op.name)


@dataclass
class ChipMachine:
    """N chip memories: storage -> (the SSA value it holds, its array). Host values (arguments
    and constants) are on every chip."""

    n: int
    host: dict[SSAValue, np.ndarray]
    mem: list[dict[SSAValue, tuple[SSAValue, np.ndarray]]] = field(default_factory=list)
    reads: list[tuple[int, SSAValue, int]] = field(default_factory=list)  # (step, value, chip)
    step: int = 0

    def __post_init__(self) -> None:
        self.mem = [{} for _ in range(self.n)]

    def read(self, value: SSAValue, chip: int) -> np.ndarray:
        if value in self.host:
            return self.host[value]
        if is_host(value):
            return evaluate(value.owner, [])[0]  # type: ignore[arg-type]
        held = self.mem[chip].get(storage_of(value))
        assert held is not None and held[0] is value, (
            f"chip {chip} reads %{value.name_hint}, but holds "
            f"{'nothing there' if held is None else '%' + str(held[0].name_hint)}"
        )
        self.reads.append((self.step, value, chip))
        return held[1]

    def write(self, chip: int, value: SSAValue, array: np.ndarray) -> None:
        self.mem[chip][storage_of(value)] = (value, array)

    def run_block(self, section: SectionOp, chip: int) -> list[np.ndarray]:
        local: dict[SSAValue, np.ndarray] = {}

        def get(v: SSAValue) -> np.ndarray:
            return local[v] if v in local else self.read(v, chip)

        for op in section.body.block.ops:
            if isinstance(op, YieldOp):
                return [get(v) for v in op.operands]
            local.update(zip(op.results, evaluate(op, [get(v) for v in op.operands]), strict=True))
        raise AssertionError("section without tp.yield")

    def run(self, op: Operation) -> None:
        """One statement: a transfer copies, a section computes where it runs."""
        self.step += 1
        if isinstance(op, TransferOp):
            assert not is_host(op.input), f"host value %{op.input.name_hint} transferred"
            self.write(op.dst, op.input, self.read(op.input, op.src).copy())
            return
        assert isinstance(op, SectionOp), f"statement '{op.name}' outside a section"
        inner = [o for o in op.body.block.ops if not isinstance(o, YieldOp)]
        if len(inner) == 1 and isinstance(inner[0], AllReduceOp):
            coll = inner[0]
            ring = coll.algorithm is not None and coll.algorithm.data == "ring"
            # fold: every partial read on chip 0, the sum stored there; ring: partial c
            # read on chip c, the sum stored on every chip.
            parts = [self.read(p, c if ring else 0) for c, p in enumerate(coll.partials)]
            (total,) = evaluate(coll, parts)
            for c in op.chip_list if ring else (0,):
                self.write(c, op.outs[0], total)
            return
        if len(inner) == 1 and isinstance(inner[0], UnshardOp):
            coll = inner[0]
            parts = [self.read(p, chip_of(p.type)) for p in coll.parts]  # type: ignore[arg-type]
            (full,) = evaluate(coll, parts)
            for c in op.chip_list:
                self.write(c, op.outs[0], full)
            return
        for c in op.chip_list:
            for out, array in zip(op.outs, self.run_block(op, c), strict=True):
                self.write(c, out, array)

    def returned(self, ret: ReturnOp) -> list[np.ndarray]:
        out = []
        for v in ret.operands:
            if is_host(v):
                out.append(self.read(v, 0))
                continue
            holders = [c for c in range(self.n) if self.mem[c].get(storage_of(v), (None,))[0] is v]
            assert holders, f"returned %{v.name_hint} is held by no chip"
            out.append(self.read(v, holders[0]))
        return out


def simulate(
    module: ModuleOp, prog: Program, reverse_phases: bool = False
) -> tuple[dict[str, np.ndarray], ChipMachine]:
    """Run ``module`` (sections, transfers, barriers) on a `ChipMachine`: in program order, or
    phase by phase (barrier to barrier) with each phase's statements in reverse order."""
    func = entry_function(module)
    ins, outs = ports(func)
    host = {
        arg: np.asarray(prog.inputs[p.name], F32) for arg, p in zip(func.args, ins, strict=True)
    }
    machine = ChipMachine(prog.n, host)
    groups: list[list[Operation]] = [[]]
    ret: ReturnOp | None = None
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            ret = op
        elif isinstance(op, BarrierOp):
            groups.append([])
        elif not isinstance(op, arith.ConstantOp | tensor.EmptyOp):
            groups[-1].append(op)
    for group in groups:
        for op in reversed(group) if reverse_phases else group:
            machine.run(op)
    assert ret is not None
    values = machine.returned(ret)
    return {p.name: v for p, v in zip(outs, values, strict=True)}, machine


def _sums_chips_to_spine(op: Operation) -> bool:
    """A `linalg.add` of chip values into the spine: a step of a fold of adds."""
    return (
        isinstance(op, linalg.AddOp)
        and chip_of(op.results[0].type) is None
        and any(chip_of(v.type) is not None for v in op.inputs)
    )


def assert_defined_before_use(module: ModuleOp) -> None:
    """Every operand is defined before its use (xDSL's verifier does not check dominance)."""
    seen: set[SSAValue] = set()
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                seen.update(block.args)
        for v in op.operands:
            assert v in seen, f"'{op.name}' uses %{v.name_hint} before it is defined"
        seen.update(op.results)


# -- 1. every pass keeps the numbers ----------------------------------------------------------


@settings(max_examples=40, **SETTINGS)
@given(programs())
def test_every_pipeline_prefix_preserves_outputs(prog: Program) -> None:
    """Invariant: the program's outputs (by name) are those of the numpy model, and stay exactly
    the same after every prefix of tp-verify, tp-raise-allreduce, tp-relocate (fold and ring),
    tp-transfers, tp-phase — but once tp-transfers spells a ring out, within f32 rounding of
    the source and then exactly the same at every later stage; the IR verifies (ops and chip
    indices) after each pass, and tp-raise-allreduce leaves one tp.allreduce per all-reduce
    and no fold of adds."""
    original = run_program(parse(prog.text()), prog.inputs)
    assert_outputs(original, prog.expected, exact=False)
    for algorithm in ALGORITHMS:
        module = parse(prog.text())
        rounded: dict[str, np.ndarray] | None = None  # the ring's sums, once spelled out
        for spec in _pipeline(algorithm):
            apply(module, spec)
            check_ir(module)
            got = run_program(module, prog.inputs)
            if algorithm == "ring" and spec == "tp-transfers" and prog.n_allreduce:
                assert_rounded(got, original)
                rounded = got
            assert_outputs(got, original if rounded is None else rounded, exact=True)
            if spec == "tp-raise-allreduce":
                raised = [op for op in module.walk() if isinstance(op, AllReduceOp)]
                assert len(raised) == prog.n_allreduce
                assert not any(_sums_chips_to_spine(op) for op in module.walk())


# -- 2. phases --------------------------------------------------------------------------------


def _conflict(a: SectionTouch, b: SectionTouch) -> bool:
    """Read-after-write, write-after-read or write-after-write on a (storage, chip) key."""
    return bool(a.writes & (b.reads | b.writes) or b.writes & a.reads)


def _storage_conflict(a: SectionTouch, b: SectionTouch) -> bool:
    """The same at the level of storage, whatever the chip."""
    aw, bw = {s for s, _ in a.writes}, {s for s, _ in b.writes}
    ar, br = {s for s, _ in a.reads}, {s for s, _ in b.reads}
    return bool(aw & (br | bw) or bw & ar)


@settings(max_examples=40, **SETTINGS)
@given(programs(), st.sampled_from(ALGORITHMS))
def test_phases_are_hazard_free_and_separated_by_barriers(prog: Program, algorithm: str) -> None:
    """Invariant after tp-phase: constants come first; statements then run in phases, each
    closed by `tp.barrier phase k`, with `tp.phase = k` on every statement, k increasing
    through the program; no two statements of a phase share a chip or touch (read or write) a
    (storage, chip) key — nor even a storage — that the other writes; every dependency
    (RAW/WAR/WAW on a key) of a statement is in a strictly earlier phase; and the chips,
    running phase by phase with each phase's statements in reverse order, compute the
    program's outputs."""
    module = lower(prog, algorithm, upto="tp-transfers")
    n = prog.n
    before = statements(entry_function(module))
    touches = {op: touch(op, n) for op in before}  # type: ignore[arg-type]
    apply(module, "tp-phase")
    check_ir(module)
    assert_defined_before_use(module)

    ops = block_ops(module)
    assert isinstance(ops[-1], ReturnOp)
    stmts = [op for op in ops if isinstance(op, SectionOp | TransferOp)]
    assert set(stmts) == set(before) and len(stmts) == len(before)
    consts = [i for i, op in enumerate(ops) if isinstance(op, arith.ConstantOp | tensor.EmptyOp)]
    first_stmt = min((ops.index(op) for op in stmts), default=len(ops))
    assert all(i < first_stmt for i in consts), "a constant after the first statement"
    assert all(
        isinstance(op, SectionOp | TransferOp | BarrierOp | ReturnOp) for op in ops[first_stmt:]
    )

    phase: dict[Operation, int] = {}
    for op in stmts:
        attr = op.attributes.get("tp.phase")
        assert isinstance(attr, IntegerAttr), f"'{op.name}' has no tp.phase"
        phase[op] = attr.value.data
    # Barriers: each closes a non-empty run of statements of its phase; phases increase.
    group: list[Operation] = []
    last = -1
    for op in ops[first_stmt:-1]:
        if isinstance(op, BarrierOp):
            assert group, "a barrier closing an empty phase"
            assert op.phase is not None
            k = op.phase.value.data
            assert {phase[s] for s in group} == {k}
            assert k > last
            last, group = k, []
        else:
            group.append(op)
    assert not group, "statements after the last barrier"

    by_phase: dict[int, list[Operation]] = {}
    for op in stmts:
        by_phase.setdefault(phase[op], []).append(op)
    for members in by_phase.values():
        for a, b in combinations(members, 2):
            ta, tb = touches[a], touches[b]
            assert not ta.chips & tb.chips, f"phase {phase[a]}: two statements share a chip"
            assert not _conflict(ta, tb), f"phase {phase[a]}: two statements conflict on a key"
            assert not _storage_conflict(ta, tb), f"phase {phase[a]}: a storage conflict"
    for i, j in combinations(range(len(before)), 2):
        a, b = before[i], before[j]
        if _conflict(touches[a], touches[b]):
            assert phase[a] < phase[b], f"statement {j} depends on {i} but is not later"

    for reverse in (False, True):
        got, _ = simulate(module, prog, reverse_phases=reverse)
        assert_rounded(got, prog.expected)


# -- 3. transfers -----------------------------------------------------------------------------


@settings(max_examples=40, **SETTINGS)
@given(programs(), st.sampled_from(ALGORITHMS))
def test_transfers_are_unique_sufficient_and_idempotent(prog: Program, algorithm: str) -> None:
    """Invariant after tp-transfers: each (value, destination) is transferred at most once and
    no host value (argument, constant) is transferred; replaying the program in order on
    separate chip memories, every non-host value a section reads on chip c was written on c by
    an earlier section or sent to c by an earlier tp.transfer (and is still the value held
    there), every transfer's value is read later on its destination, and the outputs are the
    program's; running tp-transfers again adds nothing."""
    module = lower(prog, algorithm, upto="tp-transfers")
    func = entry_function(module)
    moves = [op for op in statements(func) if isinstance(op, TransferOp)]
    pairs = [(op.input, op.dst) for op in moves]
    assert len(pairs) == len(set(pairs)), "a (value, chip) pair transferred twice"
    for op in moves:
        assert not is_host(op.input) and not is_host_value(op.input)
        assert op.src != op.dst

    got, machine = simulate(module, prog)
    assert_rounded(got, prog.expected)
    # Every transfer is for a later read of that value on its destination.
    steps = {op: k + 1 for k, op in enumerate(s for s in statements(func))}
    for op in moves:
        assert any(
            step > steps[op] and value is op.input and chip == op.dst
            for step, value, chip in machine.reads
        ), f"%{op.input.name_hint} sent to chip {op.dst} but never read there"

    assert transfers(func, prog.n) == []
    text = str(module)
    apply(module, "tp-transfers")
    assert str(module) == text


# -- 4. tp-verify: accepts valid programs, rejects leaks ------------------------------------


@settings(max_examples=150, **SETTINGS)
@given(programs(fold_hazards=True))
def test_verify_accepts_valid_programs_and_stamps_a_certificate(prog: Program) -> None:
    """Invariant: tp-verify accepts every valid program — including folds of adds whose first
    partial is an add's result and fold sums used as the left operand of a later add — and
    leaves a valid certificate."""
    module = parse(prog.text())
    assert status(module) == "missing"
    apply(module, "tp-verify")
    assert status(module) == "valid"


_T = "tensor<2x3xf32"
_PROLOGUE = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%w: tensor<2x6xf32> {tp.name = "w"}, %x: tensor<2x3xf32> {tp.name = "x"})
      -> (tensor<2x3xf32> {tp.name = "out"}) {
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 3)], full = [2, 6]>
        : tensor<2x6xf32> -> tensor<2x3xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(3, 3)], full = [2, 6]>
        : tensor<2x6xf32> -> tensor<2x3xf32, #tp.chip<1>>
    %e = tensor.empty() : tensor<2x3xf32>
"""
_C0, _C1, _SP = f"{_T}, #tp.chip<0>>", f"{_T}, #tp.chip<1>>", f"{_T}>"


def test_verify_accepts_a_fold_whose_first_partial_is_an_add() -> None:
    """Invariant (minimal case of the property above): `%p0 = arith.addf %w0, %w0` on chip 0,
    then the 2-chip fold `%s = linalg.add ins(%p0, %w1) outs(%e : spine)`, is a valid
    all-reduce; tp-verify accepts it and tp-raise-allreduce makes it one tp.allreduce."""
    text = (
        _PROLOGUE
        + f"""    %p0 = arith.addf %w0, %w0 : {_C0}
    %s = linalg.add ins(%p0, %w1 : {_C0}, {_C1}) outs(%e : {_SP}) -> {_SP}
    func.return %s : {_SP}
  }}
}}
"""
    )
    module = parse(text)
    apply(module, "tp-verify,tp-raise-allreduce")
    assert [op.name for op in block_ops(module)].count("tp.allreduce") == 1


def test_verify_accepts_a_fold_sum_as_left_operand_of_a_spine_add() -> None:
    """Invariant (minimal case of the property above): the Megatron residual after a 2-chip
    fold, `%out = arith.addf %s, %x` with the fold's sum `%s` on the left, is valid; tp-verify
    accepts it and tp-raise-allreduce raises the fold (not the residual add with it)."""
    text = (
        _PROLOGUE
        + f"""    %s = linalg.add ins(%w0, %w1 : {_C0}, {_C1}) outs(%e : {_SP}) -> {_SP}
    %out = arith.addf %s, %x : {_SP}
    func.return %out : {_SP}
  }}
}}
"""
    )
    module = parse(text)
    apply(module, "tp-verify,tp-raise-allreduce")
    names = [op.name for op in block_ops(module)]
    assert names.count("tp.allreduce") == 1 and names.count("arith.addf") == 1


@dataclass(frozen=True)
class Injected:
    """A valid program with one violation spliced in before statement ``position``."""

    prog: Program
    text: str
    op_name: str  # the SSA name the offending op binds
    reason: str
    named: tuple[str, ...]  # values (and phrases) the message must mention

    def __repr__(self) -> str:
        return f"Injected({self.reason} at %{self.op_name}):\n{self.text}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _chip_value(
    draw: st.DrawFn,
    prog: Program,
    position: int,
    chip: int,
    lines: list[str],
    tag: str,
    avoid: Collection[str] = (),
) -> str:
    """A value on ``chip`` bound before ``position`` (not in ``avoid``), or a new shard of the
    first spine input added to ``lines``."""
    pool = [v for v in prog.defined_before(position) if v.chip == chip and v.name not in avoid]
    if pool and draw(st.integers(0, 3)) > 0:
        return draw(st.sampled_from(pool[::-1])).name
    r, c = prog.shape
    x = prog.args[0][0]
    sl = f"#tp.slice<axis = 0, ranges = [(0, {r})], full = [{r}, {c}]>"
    name = f"{tag}{len(lines)}"
    lines.append(
        f"%{name} = tp.shard %{x} at {sl} : {tensor_type(prog.shape, None)} -> "
        f"{tensor_type(prog.shape, chip)}"
    )
    return name


@st.composite
def leaks(draw: st.DrawFn) -> Injected:
    """A spine value computed from a chip value: `linalg.add` of a chip value and a spine value
    into a spine init, or a row of a chip value extracted as a spine tensor."""
    prog = draw(programs(max_statements=15))
    position = draw(st.integers(0, len(prog.stmts)))
    chip = draw(st.integers(0, prog.n - 1))
    lines: list[str] = []
    src = _chip_value(draw, prog, position, chip, lines, "leaksrc")
    t, spine = tensor_type(prog.shape, chip), tensor_type(prog.shape, None)
    if draw(st.booleans()):
        other: Val = draw(
            st.sampled_from([v for v in prog.defined_before(position) if v.chip is None])
        )
        lines.append(f"%leak_e = tensor.empty() : {spine}")
        lines.append(
            f"%leak = linalg.add ins(%{src}, %{other.name} : {t}, {spine}) "
            f"outs(%leak_e : {spine}) -> {spine}"
        )
    else:
        c = prog.shape[1]
        lines.append(
            f"%leak = tensor.extract_slice %{src}[0, 0] [1, {c}] [1, 1] : {t} to "
            f"{tensor_type(prog.shape, None, rows=1)}"
        )
    text = prog.text({position: lines})
    return Injected(prog, text, "leak", "leak-to-spine", (f"%{src}", "%leak"))


def _runs(chips: list[int]) -> str:
    """Sorted chips as the refusal spells them: consecutive ones as ``a..b``."""
    groups: list[list[int]] = []
    for c in chips:
        if groups and groups[-1][-1] == c - 1:
            groups[-1].append(c)
        else:
            groups.append([c])
    return ", ".join(str(g[0]) if len(g) == 1 else f"{g[0]}..{g[-1]}" for g in groups)


def is_rotation(chips: list[int], n: int) -> bool:
    """Whether ``chips`` is 0..n-1 in chip order or a cyclic rotation of it (by rotating)."""
    return any(chips == [(r + k) % n for k in range(n)] for r in range(n))


@st.composite
def bad_folds(draw: st.DrawFn) -> Injected:
    """A fold of adds into the spine over chip partials that misses a chip (N >= 3), repeats
    one, or is in neither chip order nor a cyclic rotation of it (N >= 3: over two chips
    every order is a rotation)."""
    prog = draw(programs(max_statements=15))
    n = prog.n
    kinds = ["repeats"] + (["order", "misses"] if n >= 3 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "misses":
        chips = sorted(draw(st.sets(st.integers(0, n - 1), min_size=2, max_size=n - 1)))
        missing = sorted(set(range(n)) - set(chips))
        phrase = f"misses chip {_runs(missing)}"
    elif kind == "repeats":
        dup = draw(st.integers(0, n - 1))
        chips = sorted([*range(n), dup])
        phrase = f"repeats chip {dup}"
    else:
        chips = list(draw(st.permutations(range(n))))
        if is_rotation(chips, n):
            # Two neighbours swapped: a rotation no more once there are three chips.
            chips[0], chips[1] = chips[1], chips[0]
        assert not is_rotation(chips, n)
        phrase = "out of chip order"
    position = draw(st.integers(0, len(prog.stmts)))
    lines: list[str] = []
    # The first partial is not an add's result (a known ambiguity, tested on its own above).
    partials = [
        _chip_value(draw, prog, position, c, lines, "bfp", prog.add_results if k == 0 else set())
        for k, c in enumerate(chips)
    ]
    spine = tensor_type(prog.shape, None)
    lines.append(f"%bf_e = tensor.empty() : {spine}")
    acc = partials[0]
    for k, (c, p) in enumerate(zip(chips[1:], partials[1:], strict=True), start=1):
        out = "badfold" if k == len(chips) - 1 else f"bf{k}"
        acc_t = tensor_type(prog.shape, chips[0] if k == 1 else None)
        lines.append(
            f"%{out} = linalg.add ins(%{acc}, %{p} : {acc_t}, {tensor_type(prog.shape, c)}) "
            f"outs(%bf_e : {spine}) -> {spine}"
        )
        acc = out
    text = prog.text({position: lines})
    return Injected(prog, text, "badfold", "fold-not-allreduce", ("%badfold", phrase))


@st.composite
def mixes(draw: st.DrawFn) -> Injected:
    """A statement mixing two chips' values: `linalg.add` of chip a and chip b values into a
    chip init, or a row of a chip-b value inserted into a chip-a buffer."""
    prog = draw(programs(chips=st.integers(2, 4), max_statements=15))
    a, b = draw(st.lists(st.integers(0, prog.n - 1), min_size=2, max_size=2, unique=True))
    position = draw(st.integers(0, len(prog.stmts)))
    lines: list[str] = []
    va = _chip_value(draw, prog, position, a, lines, "mxa")
    vb = _chip_value(draw, prog, position, b, lines, "mxb")
    ta, tb = tensor_type(prog.shape, a), tensor_type(prog.shape, b)
    if draw(st.booleans()):
        tr = draw(st.sampled_from([ta, tb]))
        lines.append(f"%mixed_e = tensor.empty() : {tr}")
        lines.append(
            f"%mixed = linalg.add ins(%{va}, %{vb} : {ta}, {tb}) outs(%mixed_e : {tr}) -> {tr}"
        )
        named = (f"%{va}", f"%{vb}")
    else:
        c = prog.shape[1]
        row = tensor_type(prog.shape, b, rows=1)
        lines.append(f"%mixrow = tensor.extract_slice %{vb}[0, 0] [1, {c}] [1, 1] : {tb} to {row}")
        lines.append(
            f"%mixed = tensor.insert_slice %mixrow into %{va}[0, 0] [1, {c}] [1, 1] : "
            f"{row} into {ta}"
        )
        named = ("%mixrow", f"%{va}")
    text = prog.text({position: lines})
    return Injected(prog, text, "mixed", "mixed-chips", named)


def _assert_rejected(case: Injected) -> None:
    # The program without the injection is accepted...
    apply(parse(case.prog.text()), "tp-verify")
    # ...and with it, refused at the injected op with the injected reason.
    module = parse(case.text)
    try:
        apply(module, "tp-verify")
    except TpDiagnostic as diag:
        assert diag.message.endswith(f"[{case.reason}]"), diag.message
        assert diag.op is named_op(module, case.op_name), diag.message
        for name in case.named:
            assert name in diag.message, (name, diag.message)
        assert status(module) == "missing"
    else:
        raise AssertionError(f"tp-verify accepted a program with {case.reason}")


@settings(max_examples=25, **SETTINGS)
@given(leaks())
def test_verify_rejects_chip_data_leaking_to_the_spine(case: Injected) -> None:
    """Invariant: a spine value computed from a chip value other than by an all-reduce is
    refused as leak-to-spine, at that op, naming the chip value and the spine value."""
    _assert_rejected(case)


@settings(max_examples=25, **SETTINGS)
@given(bad_folds())
def test_verify_rejects_folds_that_are_not_allreduces(case: Injected) -> None:
    """Invariant: a fold of adds that misses a chip, repeats one or is in neither chip order
    nor a cyclic rotation of it is refused as fold-not-allreduce, at its last add, naming its
    sum and what is wrong."""
    _assert_rejected(case)


@settings(max_examples=25, **SETTINGS)
@given(mixes())
def test_verify_rejects_statements_mixing_chips(case: Injected) -> None:
    """Invariant: a statement reading or binding two chips' tensors is refused as
    mixed-chips, at that op, naming a value of each chip."""
    _assert_rejected(case)


# -- 5. relocate, then verify -----------------------------------------------------------------


def _relocated_statements(module: ModuleOp) -> Iterator[SectionOp]:
    for op in block_ops(module):
        if isinstance(op, ReturnOp | arith.ConstantOp | tensor.EmptyOp):
            continue
        assert isinstance(op, SectionOp), f"'{op.name}' left outside a section"
        yield op


@settings(max_examples=30, **SETTINGS)
@given(programs(), st.sampled_from(ALGORITHMS))
def test_relocate_keeps_the_certificate_by_checking_again(prog: Program, algorithm: str) -> None:
    """Invariant: a certificate stamped by tp-verify survives tp-raise-allreduce; tp-relocate
    puts every statement in a section on its chips (a chip-local one on its chip, spine work
    and all-reduces on all chips, a tp.unshard on its parts' chips; constants outside) and
    checks the certified program again, stamping it anew; tp-verify accepts the relocated
    program too, and tp-transfers and tp-phase keep that certificate valid."""
    module = parse(prog.text())
    apply(module, "tp-verify")
    assert status(module) == "valid"
    apply(module, "tp-raise-allreduce")
    assert status(module) == "valid"
    apply(module, f"tp-relocate{{allreduce={algorithm}}}")
    check_ir(module)
    assert status(module) == "valid"
    everywhere = tuple(range(prog.n))
    for section in _relocated_statements(module):
        inner = [op for op in section.body.block.ops if not isinstance(op, YieldOp)]
        assert len(inner) == 1
        (op,) = inner
        if isinstance(op, AllReduceOp):
            assert section.chip_list == everywhere
            assert op.algorithm is not None and op.algorithm.data == algorithm
        elif isinstance(op, UnshardOp):
            assert section.chip_list == tuple(sorted({chip_of(p.type) for p in op.parts}))
        else:
            chip = chip_of(op.results[0].type)
            assert section.chip_list == (everywhere if chip is None else (chip,))
    apply(module, "tp-verify")
    assert status(module) == "valid"
    for spec in ("tp-transfers", "tp-phase"):
        apply(module, spec)
        assert status(module) == "valid"


@settings(max_examples=30, **SETTINGS)
@given(programs(), st.sampled_from(ALGORITHMS))
def test_verify_accepts_relocated_folds_without_raising_them(prog: Program, algorithm: str) -> None:
    """Invariant: tp-relocate keeps what every statement computes, so a valid program stays
    valid: tp-verify accepts it relocated straight after tp-verify (the Makefile's
    `--tp-verify --tp-relocate ... --tp-verify`, no tp-raise-allreduce), folds of adds and
    all, and the outputs are unchanged."""
    module = parse(prog.text())
    apply(module, "tp-verify")
    apply(module, f"tp-relocate{{allreduce={algorithm}}}")
    apply(module, "tp-verify")
    assert status(module) == "valid"
    assert_outputs(run_program(module, prog.inputs), prog.expected, exact=False)


def test_verify_accepts_a_relocated_three_chip_fold() -> None:
    """Invariant (minimal case of the property above): the seed's fold over 3 chips, each add
    in its own section after tp-relocate, is still a valid all-reduce to tp-verify."""
    t = "tensor<2x3xf32"
    c0, c1, c2, sp = f"{t}, #tp.chip<0>>", f"{t}, #tp.chip<1>>", f"{t}, #tp.chip<2>>", f"{t}>"
    shard = "tp.shard %w at #tp.slice<axis = 1, ranges = [({}, 3)], full = [2, 9]>"
    text = f"""builtin.module attributes {{tp.chips = 3 : i64}} {{
  func.func @decode(%w: tensor<2x9xf32> {{tp.name = "w"}}) -> ({sp} {{tp.name = "out"}}) {{
    %p0 = {shard.format(0)} : tensor<2x9xf32> -> {c0}
    %p1 = {shard.format(3)} : tensor<2x9xf32> -> {c1}
    %p2 = {shard.format(6)} : tensor<2x9xf32> -> {c2}
    %e = tensor.empty() : {sp}
    %s1 = linalg.add ins(%p0, %p1 : {c0}, {c1}) outs(%e : {sp}) -> {sp}
    %s = linalg.add ins(%s1, %p2 : {sp}, {c2}) outs(%e : {sp}) -> {sp}
    func.return %s : {sp}
  }}
}}
"""
    module = parse(text)
    apply(module, "tp-verify,tp-relocate")
    apply(module, "tp-verify")
    assert status(module) == "valid"


@settings(max_examples=100, **SETTINGS)
@given(programs())
def test_phase_straight_after_relocate_defines_values_before_use(prog: Program) -> None:
    """Invariant: tp-phase run straight after tp-relocate (README's `tp-opt layer.mlir
    --tp-relocate --tp-phase`, no tp-transfers; the seed's fold all-reduce) still defines every
    value before its use, and the program computes the same outputs."""
    module = parse(prog.text())
    apply(module, "tp-raise-allreduce,tp-relocate{allreduce=fold},tp-phase")
    check_ir(module)
    assert_defined_before_use(module)
    assert_outputs(run_program(module, prog.inputs), prog.expected, exact=False)


def test_phase_straight_after_relocate_keeps_a_fold_sum_before_its_reader() -> None:
    """Invariant (minimal case of the property above): with the seed's fold all-reduce (sum
    stored on chip 0), a chip-1 section reading the sum stays after the all-reduce's section
    when tp-phase runs without tp-transfers."""
    text = (
        _PROLOGUE
        + f"""    %a = arith.mulf %w0, %w0 : {_C0}
    %b = arith.mulf %a, %a : {_C0}
    %s = tp.allreduce %b, %w1 : {_C0}, {_C1} -> {_SP}
    %e1 = tensor.empty() : {_C1}
    %y = linalg.add ins(%s, %x : {_SP}, {_SP}) outs(%e1 : {_C1}) -> {_C1}
    %t = tp.allreduce %b, %y : {_C0}, {_C1} -> {_SP}
    func.return %t : {_SP}
  }}
}}
"""
    )
    module = parse(text)
    apply(module, "tp-relocate,tp-phase")
    assert_defined_before_use(module)


# -- 6. the ring, spelled out, down to per-chip programs --------------------------------------


@settings(max_examples=60, **SETTINGS)
@given(programs(chips=st.integers(2, 4)))
def test_the_ring_reaches_per_chip_programs_at_every_stage(prog: Program) -> None:
    """Invariant: with ``allreduce=ring``, once tp-transfers has spelled the ring out (every
    all-reduce's tensor has an axis of N elements to cut), each later stage — tp-phase, then
    per-chip programs under the relay — verifies, is certified, and computes under value and
    storage semantics the source's outputs to f32 rounding, and bitwise what the sectioned
    ring computed (the same adds in the same order on every chip); where no axis cuts, the
    ring stays one collective and tp-link-points refuses it (not-linkable), naming the axis."""
    original = run_program(parse(prog.text()), prog.inputs)
    module = lower(prog, "ring", upto="tp-transfers")
    event(f"N={prog.n}, all-reduces={min(prog.n_allreduce, 2)}, spelled out={expanded(module)}")
    if not expanded(module):
        with pytest.raises(TpDiagnostic, match=r"needs an axis of at least .*\[not-linkable\]"):
            apply(module, "tp-phase,tp-link-points")
        return
    sectioned = run_program(module, prog.inputs)
    assert_rounded(sectioned, original)
    for spec in ("tp-phase", "tp-link-points,tp-relay"):
        apply(module, spec)
        check_ir(module)
        check_obligation(module)
        assert_outputs(run_program(module, prog.inputs), sectioned, exact=True)
        assert_outputs(run_program(module, prog.inputs, storage=True), sectioned, exact=True)
