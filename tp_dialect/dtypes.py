"""Element types of the IR as numpy dtypes (bf16 through ml_dtypes, imported on first use:
it costs more than half a tool's start-up, and most runs never meet a bf16)."""

from __future__ import annotations

import functools

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute


@functools.cache
def bf16() -> np.dtype:
    """numpy's bfloat16 (ml_dtypes'); importing it also registers the name ``"bfloat16"``
    with numpy, which reading a checkpoint's BF16 tensors by name needs."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def numpy_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype holding values of element type ``t``."""
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, BFloat16Type):
        return bf16()
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType):
        width = t.width.data
        return np.dtype(np.bool_) if width == 1 else np.dtype(f"int{max(8, width)}")
    raise TypeError(f"no numpy dtype for element type {t}")


def dtype_name(t: Attribute) -> str:
    """A short name for an element type as used in manifests: f32, bf16, i64, ..."""
    return "bf16" if isinstance(t, BFloat16Type) else str(t)
