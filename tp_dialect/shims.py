"""Chip legality: op classes, what a chip allows (a `Shim`), and `TensorParallelShim`.

Every op of a program maps to one `OpClass`. A shim answers, for its chip and configuration:
``supports(class)`` — native, emulated or unsupported, for EVERY class (each shim answers by a
``match`` with no catch-all, and a test fails when a class is added that a shim does not
answer); ``fits(work)`` — whether the chip builds an op or a fusion as it stands (``None``, or
why not); ``activation(consumer, operand)`` — the quantized form the consumer reads that
operand in, or ``None``.

`TensorParallelShim` is the seed's wrapper: a fused op runs on one chip, so it refuses a fusion
whose members bind tensors of more than one chip (or a chip's tensor and the spine's), and a
fusion holding a collective's fold (which would lower an all-reduce as a sum on the spine);
every other question goes to the base shim. Two sections the lowering itself makes hold a
collective or a fold and are admitted, because neither hides a fold from the collective — each
*is* that collective, lowered (`TensorParallelShim.fits` says why). Where work lives it asks a
`Placement` (the analysis layer's `Provenance` is one): this module is IR level and imports no
analysis (the SN40L's SRAM is the machine description's, `tp_dialect.machine`, also IR level).

A generic is a matmul when it is a contraction and a reduction when it reduces otherwise, as
`tp_dialect.linalg_kinds` defines them (a sum of squares is a contraction), unless its ``doc``
is a tag a frontend writes (`tp_dialect.op_tags.OpTag`, defined there with `OpClass`): then it
is of the tag's class (a LayerNorm's or an RMSNorm's sum of squares is a norm).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import AnyFloat, TensorType
from xdsl.dialects.func import ReturnOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from tp_dialect.linalg_kinds import is_contraction, nbytes, reduced_size, reduces
from tp_dialect.machine import MACHINES
from tp_dialect.op_tags import OpClass, tag_of
from tp_dialect.ops import (
    AllReduceOp,
    BarrierOp,
    Collective,
    MaxLocOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.program_ops import (
    ChipProgramOp,
    CopyOp,
    FinishOp,
    LinkOp,
    RelayOp,
    RelayRepeatOp,
    RunToOp,
)


class Support(Enum):
    NATIVE = "native"
    EMULATED = "emulated"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class QuantFormat:
    """How an operand is read: element type and scaling granularity."""

    dtype: str  # e.g. "int8", "bf16"
    granularity: str  # "per-tensor" | "per-row" (a scale each), "none" (a float format)


BF16 = QuantFormat("bf16", "none")
"""bfloat16: f32's range in 16 bits, each value rounded to 8 bits of mantissa, no scale."""


Work = Operation | Sequence[Operation]  # one op, or the ops of a candidate fusion

# The lowering's structure: terminators, phase barriers, per-chip programs (whose statements
# are checked as a function's are) and the host's relay schedule.
_CONTROL = (
    ReturnOp,
    YieldOp,
    FinishOp,
    BarrierOp,
    ChipProgramOp,
    RelayOp,
    RelayRepeatOp,
    RunToOp,
)


def classify(op: Operation) -> OpClass:
    """The class of one op (a linalg.generic by its ``doc`` tag, `OpTag.op_class`, else by
    its structure)."""
    if isinstance(op, linalg.GenericOp):
        if (tag := tag_of(op)) is not None:
            return tag.op_class
        if not reduces(op):
            return OpClass.ELEMENTWISE
        return OpClass.MATMUL if is_contraction(op) else OpClass.REDUCTION
    if isinstance(op, Collective | TransferOp | LinkOp | CopyOp):
        return OpClass.COLLECTIVE  # tensors crossing between chips, over the chips' links
    if isinstance(op, ShardOp):
        return OpClass.LOAD
    if isinstance(op, UnshardOp):
        return OpClass.STORE
    if isinstance(op, tensor.InsertSliceOp):
        return OpClass.CACHE_SCATTER
    if isinstance(op, tensor.ExtractSliceOp | tensor.ExtractOp):
        return OpClass.GATHER
    if isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp | tensor.ReshapeOp):
        return OpClass.RESHAPE
    if isinstance(op, tensor.ConcatOp):
        return OpClass.CONCAT
    if isinstance(op, linalg.FillOp):
        return OpClass.FILL
    if isinstance(op, arith.ConstantOp | tensor.EmptyOp):
        return OpClass.CONSTANT
    if isinstance(op, _CONTROL):
        return OpClass.SCALAR  # control: nothing a chip computes (a program's work is inside)
    elementwise = (
        linalg.AddOp,
        linalg.MulOp,
        linalg.SubOp,
        arith.AddfOp,
        arith.SubfOp,
        arith.MulfOp,
        arith.DivfOp,
        arith.MaximumfOp,
        arith.NegfOp,
        arith.TruncFOp,  # a precision change (tp-narrow-wire's)
        arith.ExtFOp,
    )
    if isinstance(op, elementwise) or (
        op.dialect_name() == "math" and isinstance(op.results[0].type, TensorType)
    ):
        return OpClass.ELEMENTWISE
    if op.dialect_name() in ("arith", "math") and not any(
        isinstance(r.type, TensorType) for r in op.results
    ):
        return OpClass.SCALAR
    return OpClass.OTHER


def members(work: Work) -> list[Operation]:
    """The ops a piece of work consists of (a section's body, a fusion's ops, or the op)."""
    if isinstance(work, SectionOp):
        return [op for op in work.body.block.ops if not isinstance(op, YieldOp)]
    if isinstance(work, Operation):
        return [work]
    return list(work)


class Shim(Protocol):
    """What a chip allows."""

    def name(self) -> str: ...

    def supports(self, cls: OpClass) -> Support: ...

    def fits(self, work: Work) -> str | None: ...

    def activation(self, consumer: Operation, operand: int) -> QuantFormat | None: ...


class Fusion(Protocol):
    """A fusion grown one op at a time."""

    def admit(self, op: Operation) -> str | None:
        """Whether the ops so far with ``op`` fit as one fused op (``None``, or why not, as
        the shim's ``fits`` on them all says); ``op`` joins when they do."""
        ...


class _Whole:
    """A fusion asked of a shim's ``fits`` on all its ops each time."""

    def __init__(self, shim: Shim, first: Operation) -> None:
        self.shim, self.ops = shim, [first]

    def admit(self, op: Operation) -> str | None:
        reason = self.shim.fits([*self.ops, op])
        if reason is None:
            self.ops.append(op)
        return reason


def fusion(shim: Shim, first: Operation) -> Fusion:
    """A fusion starting at ``first``, asked of ``shim``: in time proportional to what each
    op adds where the shim knows how (`Sn40lShim`, `TensorParallelShim`, the reference),
    else by ``fits`` on the whole each time."""
    start = getattr(shim, "fusion", None)
    return start(first) if start is not None else _Whole(shim, first)


class _Fits:
    """A fusion that always fits (the reference shim's)."""

    def admit(self, op: Operation) -> str | None:
        return None


class ReferenceShim:
    """The permissive reference: everything native, everything fits, values read as is."""

    def name(self) -> str:
        return "reference:f32"

    def supports(self, cls: OpClass) -> Support:
        match cls:
            case (
                OpClass.MATMUL
                | OpClass.ELEMENTWISE
                | OpClass.REDUCTION
                | OpClass.NORM
                | OpClass.SOFTMAX
                | OpClass.ROPE
                | OpClass.CACHE_SCATTER
                | OpClass.GATHER
                | OpClass.RESHAPE
                | OpClass.CONCAT
                | OpClass.FILL
                | OpClass.LOAD
                | OpClass.STORE
                | OpClass.COLLECTIVE
                | OpClass.SCALAR
                | OpClass.CONSTANT
            ):
                return Support.NATIVE
            case OpClass.OTHER:
                return Support.EMULATED  # numpy runs anything the interpreter knows

    def fits(self, work: Work) -> str | None:
        return None

    def fusion(self, first: Operation) -> Fusion:
        return _Fits()

    def activation(self, consumer: Operation, operand: int) -> QuantFormat | None:
        return None


@dataclass(frozen=True)
class Sn40lShim:
    """An SN40L chip: dataflow kernels natively, host-side ops emulated; a fusion must keep
    its intermediates in on-chip SRAM; with ``int8_activations`` a matmul reads its
    activation operand as per-tensor int8."""

    sram_bytes: float = MACHINES["sn40l"].sram_bytes  # the machine description's, stated once
    int8_activations: bool = False

    def name(self) -> str:
        return "sn40l:int8-act" if self.int8_activations else "sn40l:bf16"

    def supports(self, cls: OpClass) -> Support:
        match cls:
            case (
                OpClass.MATMUL
                | OpClass.ELEMENTWISE
                | OpClass.REDUCTION
                | OpClass.NORM
                | OpClass.SOFTMAX
                | OpClass.ROPE
                | OpClass.CACHE_SCATTER
                | OpClass.GATHER
                | OpClass.RESHAPE
                | OpClass.CONCAT
                | OpClass.FILL
                | OpClass.LOAD
                | OpClass.COLLECTIVE
                | OpClass.CONSTANT
            ):
                return Support.NATIVE
            case OpClass.SCALAR | OpClass.STORE:
                return Support.EMULATED  # the host computes scalars and stores outputs
            case OpClass.OTHER:
                return Support.UNSUPPORTED  # no dataflow kernel for an op tp does not know

    def fits(self, work: Work) -> str | None:
        ops = members(work)
        # Intermediates of a fusion stay on chip: those used only inside must fit in SRAM.
        staged = sum(
            sum(nbytes(r.type) for r in op.results)
            for op in ops
            if op.results and all(u.operation in ops for r in op.results for u in r.uses)
        )
        if len(ops) > 1 and staged > self.sram_bytes:
            return self._too_big(staged)
        for op in ops:
            if (reason := self._refuses(op)) is not None:
                return reason
        return None

    def fusion(self, first: Operation) -> Fusion:
        return _Sn40lFusion(self, first)

    def _too_big(self, staged: int) -> str:
        return (
            f"its intermediates need {staged / 1e6:.1f} MB of SRAM, the chip has "
            f"{self.sram_bytes / 1e6:.0f} MB"
        )

    def _refuses(self, op: Operation) -> str | None:
        """Why the chip builds no ``op`` (in a fusion or alone), or ``None``."""
        if self.supports(classify(op)) is Support.UNSUPPORTED:
            return f"'{op.name}' ({classify(op).value}) is not supported"
        if any(
            isinstance(v.type, TensorType) and str(v.type.element_type) == "f64"
            for v in (*op.operands, *op.results)
        ):
            return f"'{op.name}' computes in f64, which the chip has no datapath for"
        if classify(op) is OpClass.MATMUL and isinstance(op, linalg.GenericOp):
            k = reduced_size(op)
            if k % 8:
                return (
                    f"'{op.name}' contracts over {k} elements; the chip's tiles need a "
                    "multiple of 8"
                )
        return None

    def activation(self, consumer: Operation, operand: int) -> QuantFormat | None:
        if self.int8_activations and classify(consumer) is OpClass.MATMUL and operand == 0:
            return QuantFormat("int8", "per-tensor")
        # Its kernels take activations as bf16 (f32 accumulation inside): any op it builds
        # reads a float tensor operand in bf16, but a linalg op's accumulator (its ``outs``)
        # stays f32; the host (a store, a return) reads what it gets whole.
        read = consumer.operands[operand].type
        accumulator = isinstance(consumer, linalg.LinalgStructuredOperation) and operand >= len(
            consumer.inputs
        )
        if (
            self.supports(classify(consumer)) is Support.NATIVE
            and not accumulator
            and isinstance(read, TensorType)
            and isinstance(read.element_type, AnyFloat)
        ):
            return BF16
        return None


class _Sn40lFusion:
    """`Sn40lShim.fits` of a growing fusion, each op's share computed once: how many uses
    of each member's results are outside the fusion (staged in SRAM when none is), the
    bytes staged, and whether the first member is checked yet (a fusion of one is not)."""

    def __init__(self, shim: Sn40lShim, first: Operation) -> None:
        self.shim = shim
        self.outside: dict[Operation, int] = {}  # each member's uses outside the fusion
        self.staged = 0
        self.unchecked: Operation | None = first
        self.staged = self._join(first)

    def _join(self, op: Operation) -> int:
        """The bytes staged with ``op`` in, recording its uses outside."""
        self.outside[op] = n = sum(
            1
            for r in op.results
            for u in r.uses
            if u.operation is not op and u.operation not in self.outside
        )
        own = sum(nbytes(r.type) for r in op.results) if op.results and not n else 0
        return self.staged + own

    def admit(self, op: Operation) -> str | None:
        used: dict[Operation, int] = {}  # member -> the uses of its results ``op`` makes
        for v in op.operands:
            if isinstance(owner := v.owner, Operation) and owner in self.outside:
                used[owner] = used.get(owner, 0) + 1
        freed = sum(
            nbytes(r.type) for m, k in used.items() if self.outside[m] == k for r in m.results
        )
        outside = sum(
            1
            for r in op.results
            for u in r.uses
            if u.operation is not op and u.operation not in self.outside
        )
        staged = self.staged + freed
        staged += sum(nbytes(r.type) for r in op.results) if op.results and not outside else 0
        if staged > self.shim.sram_bytes:
            return self.shim._too_big(staged)
        for o in (self.unchecked, op):
            if o is not None and (reason := self.shim._refuses(o)) is not None:
                return reason
        self.unchecked = None
        for m, k in used.items():
            self.outside[m] -= k
        self.outside[op] = outside
        self.staged = staged
        return None


class Folded(Protocol):
    """A fold of adds, as `Placement.fold_of` maps each of its adds to it."""

    @property
    def ops(self) -> Sequence[Operation]:
        """Its adds, in order."""
        ...


class Placement(Protocol):
    """Where a tensor-parallel program's work lives, as `TensorParallelShim` asks it
    (`tp_dialect.analysis.certify.provenance.Provenance` answers it)."""

    @property
    def fold_of(self) -> Mapping[Operation, Folded]:
        """Each op that is part of a collective's fold of adds, with its fold."""
        ...

    def home(self, value: SSAValue) -> frozenset[int]:
        """The chips ``value`` lives on (empty: the spine, on every chip)."""
        ...


_HOST_STORE = "it would hold a host store: the host stores chip outputs, no chip does"
_FOLD = (
    "it would hold a collective's fold: the all-reduce over every chip would be lowered as a "
    "sum on the spine"
)
_MAXLOC = (
    "it would hold a maxloc: the collective over every chip would be lowered as spine work, "
    "hiding it from the runtime"
)


def _two_chips(owned: list[int]) -> str:
    return f"it would fuse work of chips {owned}: a fused op runs on one chip"


def _with_spine(chip: int) -> str:
    return (
        f"it would fuse chip {chip}'s work with the spine's: a fused op runs where what it "
        "binds lives, and the spine lives on every chip"
    )


class TensorParallelShim:
    """What a chip allows of a tensor-parallel program: what ``base`` allows, less a fused op
    over more than one chip (or a chip's data with the spine), less a fusion holding a
    collective, a fold of adds or a host store — unless the fusion is a section that *is* the
    collective, lowered (`fits`). Which chip a member's work is on is where its results live
    (`Placement.home`): scalars and indices by the chips they derive from, so a spine scalar
    is never fused with one chip's in-place cache write."""

    def __init__(self, base: Shim, provenance: Placement) -> None:
        self.base = base
        self.provenance = provenance

    def name(self) -> str:
        return f"tp({self.base.name()})"

    def supports(self, cls: OpClass) -> Support:
        return self.base.supports(cls)

    def fits(self, work: Work) -> str | None:
        """Whether ``work`` runs as one fused op on one chip: ``None``, or why not.

        The seed refuses a fusion holding a collective's fold because a fold is summed across
        chips: fused into one op, it would be lowered as a sum on the spine, hiding from the
        runtime the all-reduce the program means. Two sections the lowering makes hold one and
        hide nothing, so they are admitted:

        - a section headed by a ``tp.allreduce`` (tp-relocate's: one per all-reduce, on every
          chip, or one chip's share of it in a per-chip program) is that collective: the
          runtime lowers its all-reduce by its algorithm. The ops after it are its fused
          epilogue, answered by `fits_epilogue`, the rule tp-relocate grew it by;
        - a section on ONE chip holding exactly the adds of one fold and nothing else (a
          twoshot's reduce-scatter step ``label.rs{k}``, written by tp-transfers) is that
          fold reduced onto that chip: tp-transfers brings every partial there, so the sum
          is formed where the section runs, and no collective is left to hide it from.

        A section holding a ``tp.maxloc`` alone (tp-relocate's) is one op, answered by the
        base shim like any collective. A fold, an all-reduce or a maxloc anywhere else in a
        fusion — in a candidate group of tp-fuse, among other work, on the spine — is
        refused as before (a maxloc never carries an epilogue).
        """
        ops = members(work)
        if len(ops) <= 1:
            return self.base.fits(work)
        if any(isinstance(op, UnshardOp) for op in ops):
            return _HOST_STORE
        if isinstance(work, SectionOp):
            if isinstance(ops[0], AllReduceOp):
                return self.fits_epilogue(ops)
            if self._reduced_onto_one_chip(work, ops):
                return self.base.fits(work)
        if any(isinstance(op, AllReduceOp) or op in self.provenance.fold_of for op in ops):
            return _FOLD
        if any(isinstance(op, MaxLocOp) for op in ops):
            return _MAXLOC
        home = self.provenance.home
        placed = [frozenset(c for r in op.results for c in home(r)) for op in ops]
        owned = sorted(set().union(*placed))
        if len(owned) > 1:
            return _two_chips(owned)
        if owned and any(not chips for chips in placed):
            return _with_spine(owned[0])
        return self.base.fits(work)

    def fusion(self, first: Operation) -> Fusion:
        """`fits` asked of a growing tp-fuse candidate, each op's share examined once (a
        candidate is a list of statements, never a section: the sections' admissions above do
        not arise)."""
        return _TpFusion(self, first)

    def _reduced_onto_one_chip(self, section: SectionOp, ops: Sequence[Operation]) -> bool:
        """Whether ``section`` runs on one chip and holds exactly one fold's adds, in order."""
        fold = self.provenance.fold_of.get(ops[0])
        return len(section.chip_list) == 1 and fold is not None and list(fold.ops) == list(ops)

    def fits_epilogue(self, ops: Sequence[Operation]) -> str | None:
        """Whether an all-reduce (``ops[0]``) may carry the spine work after it on every
        chip: its sum lands on every chip (not the seed's ``fold``, which sums on chip 0),
        the rest is spine work (no collective, no fold, nothing on one chip's data) and the
        base shim builds the whole as one fused op."""
        reduce, rest = ops[0], list(ops[1:])
        if not isinstance(reduce, AllReduceOp):
            return "an epilogue follows an all-reduce"
        # One chip is every chip (tp-transfers writes a one-chip ring or twoshot as a fold).
        if rest and not reduce.sums_on_every_chip and len(reduce.partials) > 1:
            return (
                f"an epilogue needs the sum on every chip; a '{reduce.algorithm_name}' "
                "all-reduce sums on chip 0"
            )
        if any(
            isinstance(op, Collective | UnshardOp) or op in self.provenance.fold_of for op in rest
        ):
            return "an epilogue holds no collective and no host store"
        if any(self.provenance.home(r) for op in rest for r in op.results):
            return "an epilogue is spine work: it runs on every chip, on the sum"
        return self.base.fits(list(ops))

    def activation(self, consumer: Operation, operand: int) -> QuantFormat | None:
        return self.base.activation(consumer, operand)


class _TpFusion:
    """`TensorParallelShim.fits` of a growing fusion: what its members hold (a host store,
    a collective's fold) and the chips they place work on, kept as ops join."""

    def __init__(self, tp: TensorParallelShim, first: Operation) -> None:
        self.tp = tp
        self.base = fusion(tp.base, first)
        self.store = isinstance(first, UnshardOp)
        self.fold = isinstance(first, AllReduceOp) or first in tp.provenance.fold_of
        self.maxloc = isinstance(first, MaxLocOp)
        placed = self._placed(first)
        self.owned, self.spine = set(placed), not placed

    def _placed(self, op: Operation) -> frozenset[int]:
        home = self.tp.provenance.home
        return frozenset(c for r in op.results for c in home(r))

    def admit(self, op: Operation) -> str | None:
        if self.store or isinstance(op, UnshardOp):
            return _HOST_STORE
        if self.fold or isinstance(op, AllReduceOp) or op in self.tp.provenance.fold_of:
            return _FOLD
        if self.maxloc or isinstance(op, MaxLocOp):
            return _MAXLOC
        placed = self._placed(op)
        owned = sorted(self.owned | placed)
        if len(owned) > 1:
            return _two_chips(owned)
        if owned and (self.spine or not placed):
            return _with_spine(owned[0])
        reason = self.base.admit(op)
        if reason is None:  # the spine joins only the spine: ``spine`` stays as it was
            self.owned |= placed
        return reason


SHIMS: dict[str, Shim] = {
    "reference": ReferenceShim(),
    "sn40l": Sn40lShim(),
    "sn40l-int8": Sn40lShim(int8_activations=True),
}


def shim_named(name: str) -> Shim:
    """A base shim by name (``reference``, ``sn40l``, ``sn40l-int8``)."""
    if name not in SHIMS:
        raise KeyError(f"no shim '{name}' (known: {', '.join(SHIMS)})")
    return SHIMS[name]
