"""TpReject: why a tensor-parallel lowering refused — a closed set, each a clear diagnostic."""

from __future__ import annotations

from enum import Enum

from xdsl.ir import Operation

from tp_dialect.diagnostics import TpDiagnostic


class TpReject(Enum):
    """Every reason tp refuses a program; each message names the op, the value and chip."""

    LEAK_TO_SPINE = "leak-to-spine"
    """A spine (replicated) value computed from a chip's tensor other than by an all-reduce."""
    MIXED_CHIPS = "mixed-chips"
    """One statement reads or binds tensors of two different chips."""
    FOLD_NOT_ALLREDUCE = "fold-not-allreduce"
    """A fold of adds over partials that misses a chip, repeats one, or is out of order."""
    FOLD_MIXES_SPINE = "fold-mixes-spine"
    """A fold of chip partials that adds in spine data."""
    HOST_STORE_USED = "host-store-used"
    """A ``tp.unshard`` result (a host output) used by anything but the function's return."""
    SECTION_CHIP = "section-chip"
    """A value of chip c inside a section that does not run on chip c."""
    CHIP_RESULT = "chip-result"
    """A result of the entry function that is a chip's value: the host gets the spine (an
    all-reduce's sum) or a host store (``tp.unshard``), never one chip's data."""
    OPAQUE_CALL = "opaque-call"
    """A call the checker cannot see through: no body in the module, or recursion."""
    OPAQUE_OP = "opaque-op"
    """An op the checker cannot see through: it writes memory, or its effects are unknown."""
    SLICES_OVERLAP = "slices-overlap"
    """An all-reduce over contractions whose weight slices overlap on the contracted axis."""
    SLICES_GAP = "slices-gap"
    """An all-reduce over contractions whose weight slices leave part of the contracted axis
    out."""
    SLICES_MISALIGNED = "slices-misaligned"
    """An all-reduce over contractions whose operands, on one chip, hold different positions
    of the summed axis (or chips that pair or place them differently)."""
    NOT_PARTIAL_SUM = "not-partial-sum"
    """An all-reduce over reductions that are not sums from zero: a max, a body that does
    not add to its accumulator, or an accumulator that starts from something (the
    all-reduce would add it once per chip)."""
    NOT_ARGMAX = "not-argmax"
    """A ``tp.maxloc`` pair that is not the (largest value, index) of one argmax over the
    chip's run of the axis, started from ``-inf`` and a common index: the collective would
    not pick the argmax of the whole axis."""
    DUPLICATE_PROGRAM = "duplicate-program"
    """Two ``tp.chip_program`` ops for one chip."""
    LINK_TYPE = "link-type"
    """A buffer received as a type other than the one it was sent as."""
    DUPLICATE_SEND = "duplicate-send"
    """One buffer name sent twice (by two chips, or twice by one)."""
    SELF_COPY = "self-copy"
    """A chip that receives a buffer it sends itself, or a relay copy from a chip to itself."""
    NOT_SECTIONED = "not-sectioned"
    """A pass that needs sections (tp-transfers, tp-phase, ...) met a statement outside one."""
    NOT_LINKABLE = "not-linkable"
    """Per-chip programs cannot spell a collective's exchange (a ring all-reduce), or a
    chip's call reads a value its chip does not hold (a host output)."""
    CANNOT_SPLIT = "cannot-split"
    """tp-split: a cut value reaches an op that mixes along the cut, reads it otherwise than
    through one axis, or has no propagation rule; or the program is already split."""
    PLAN_MISMATCH = "plan-mismatch"
    """tp-split: a plan entry that matches no argument, or a tensor it cannot cut (its rank,
    or N not dividing the axis)."""
    ALIASED_ARGUMENTS = "aliased-arguments"
    """A lowered call hands one storage to two parameters of a callee that writes one of them
    in place: the callee's statements, ordered once for every call, take them for two."""
    NOT_EXPORTABLE = "not-exportable"
    """tp-export: a per-chip program it cannot write as plain MLIR (one calling a function
    that is not a per-chip function, or a tp op with no plain form); tp-to-mpi: programs it
    cannot write as one SPMD function (calls, a repeating relay, a receive nobody sends);
    tp-export-shard: a program that is not tp-split's output (later stages, chips running
    other programs, a value tp-split never writes), or whose un-split does not import back."""
    SHARD_UNSUPPORTED = "shard-unsupported"
    """tp-import-shard: a Shard annotation tp cannot honour (a grid not 1-D, halos, offsets,
    two split axes, a collective, an annotation contradicting propagation); tp-export-shard:
    a cut no Shard annotation states (an argument cut in runs other than N equal contiguous
    ones: a packed fused weight)."""
    SHARD_NOT_IMPORTED = "shard-not-imported"
    """tp-verify: a ``shard`` op left in the module, which the certificate would ignore."""
    DEADLOCK = "deadlock"
    """The relay: no chip can move before all have finished; each chip's halt is named."""

    def at(self, op: Operation | None, message: str) -> TpDiagnostic:
        """The diagnostic for this reason at ``op``: ``[tp-reject <reason>] message``."""
        return TpDiagnostic(op, f"{message} [{self.value}]")
