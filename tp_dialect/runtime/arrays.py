"""Array helpers shared by the host loader and the interpreter: what a TpSlice means on numpy.

This module imports nothing of the runtime, so the checkpoint loader and the interpreter's op
implementations can both use it without one depending on the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def slice_of(full: np.ndarray, axis: int, ranges: Sequence[tuple[int, int]]) -> np.ndarray:
    """The ranges of ``full`` along ``axis``, concatenated in order (a TpSlice's meaning).

    One range is a view, not a copy: under value semantics no op writes into its operands
    (under storage semantics ``tp.shard`` copies it).
    """
    parts = [full[(slice(None),) * axis + (slice(s, s + n),)] for s, n in ranges]
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)
