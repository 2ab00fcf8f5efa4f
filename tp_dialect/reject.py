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
    NOT_SECTIONED = "not-sectioned"
    """A pass that needs sections (tp-transfers, tp-phase, ...) met a statement outside one."""
    NOT_LINKABLE = "not-linkable"
    """Per-chip programs cannot spell a collective's exchange (a ring all-reduce)."""
    DEADLOCK = "deadlock"
    """The relay: no chip can move before all have finished; each chip's halt is named."""

    def at(self, op: Operation | None, message: str) -> TpDiagnostic:
        """The diagnostic for this reason at ``op``: ``[tp-reject <reason>] message``."""
        return TpDiagnostic(op, f"{message} [{self.value}]")
