"""What tp-gen can write: the bounds every model family's config is held to, checked before
any IR is written (`check_config`; Qwen3 and GPT-2 alike).

- **Sizes** (every dim, the layers, the chips, the batch, the cache's positions) are at least
  1 and fit an i64: a tensor type's dims and the recorded ``tp.config`` are i64, and a size
  beyond it makes a program nothing can parse.
- **Tensors**: every tensor the step holds (each weight, cache, activation and attention's
  scores, unsharded: a chip's slice is no larger) is at most `MAX_TENSOR_BYTES` at 4 bytes an
  element (activations are f32, and bf16 weights are computed in f32): numpy's arrays and
  the tools' byte counts are i64.
- **Work**: tp-gen writes every layer, and every chip's slice of each layer, out in full, so
  its time and output grow with layers × chips. At most `MAX_LAYERS` layers, `MAX_CHIPS`
  chips (the most the lowering passes write work for: `MAX_LOWERED_CHIPS`) and
  `MAX_CHIP_LAYERS` chip-layers (layers × chips: 256 layers over 8 chips, 2 over 1024), for
  the flat program and the outlined alike, since the flat program is what an outlined one
  stands for (``tp-opt --tp-inline``, MPI ranks and ``tp-run --check`` build it). The
  deepest published decoders have about 128 layers.
- **Constants written value by value** (Qwen3's RoPE inverse frequencies: head_dim / 2 of
  them) hold at most `MAX_WRITTEN_VALUES` values, so head_dim is at most 8192 for Qwen3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from tp_dialect.frontend.blocks import GenError
from tp_dialect.grid import MAX_LOWERED_CHIPS

I64_MAX = 2**63 - 1
MAX_TENSOR_BYTES = I64_MAX
"""The largest tensor, in bytes at 4 bytes an element (i64 sizes: numpy's and the tools')."""
MAX_LAYERS = 256
"""The most layers tp-gen writes (twice the deepest published decoders, about 128)."""
MAX_CHIPS = MAX_LOWERED_CHIPS
"""The most chips tp-gen splits over: tp-relocate and tp-link-points lower no more."""
MAX_CHIP_LAYERS = 2048
"""The most layers × chips tp-gen writes out (its flat program holds each chip's slice of
each layer: about 40 MB of text, and 40 s and 570 MB to parse, split and print the unsharded
program through xDSL, at qwen3-8b dims, 256 layers over 8 chips)."""
MAX_WRITTEN_VALUES = 4096
"""The most values of one constant tp-gen writes out one by one (Qwen3's RoPE table)."""
ELEMENT_BYTES = 4  # f32: every activation, and what a bf16 weight is computed in


def positive(name: str, value: int) -> None:
    """Nothing when size ``name`` is at least 1 and fits an i64; else GenError naming it."""
    if value <= 0:
        raise GenError(f"{name} must be positive, got {value}")
    if value > I64_MAX:
        raise GenError(
            f"{name} {value} does not fit an i64 (at most {I64_MAX}): tp's tensor dims and "
            "tp.config are i64"
        )


def check_config(
    sizes: Mapping[str, int],
    tensors: Callable[[], Mapping[str, Sequence[int]]],
    written: Callable[[], Mapping[str, int]] = dict,
) -> None:
    """Nothing when a config is within every bound of the module docstring; else GenError
    naming the first it breaks. ``sizes``: every size the config states, by name (``layers``
    and, when it splits, ``chips`` among them); ``tensors``: the shape of every tensor the
    step holds, unsharded, by name; ``written``: how many values each constant written out
    value by value holds. The last two are called only once every size is positive."""
    for name, value in sizes.items():
        positive(name, value)
    layers, chips = sizes["layers"], sizes.get("chips", 1)
    if layers > MAX_LAYERS:
        raise GenError(
            f"layers {layers} is above {MAX_LAYERS}: a generated program writes every layer "
            f"out, and holds at most {MAX_LAYERS}"
        )
    if chips > MAX_CHIPS:
        raise GenError(
            f"chips {chips} is above {MAX_CHIPS}: a generated program writes every chip's work "
            f"out, and the passes lower at most {MAX_CHIPS} chips"
        )
    if layers * chips > MAX_CHIP_LAYERS:
        raise GenError(
            f"{layers} layers over {chips} chips is {layers * chips} chip-layers, above "
            f"{MAX_CHIP_LAYERS}: the flat program writes every chip's slice of every layer "
            f"out (over {chips} chips, at most {MAX_CHIP_LAYERS // chips} layers)"
        )
    for name, shape in tensors().items():
        elements = 1
        for dim in shape:
            elements *= dim
        if elements * ELEMENT_BYTES > MAX_TENSOR_BYTES:
            raise GenError(
                f"tensor '{name}' of shape {list(shape)} is {elements * ELEMENT_BYTES} bytes "
                f"in f32, above {MAX_TENSOR_BYTES} (2**63 - 1): tp's sizes are i64"
            )
    for name, count in written().items():
        if count > MAX_WRITTEN_VALUES:
            raise GenError(
                f"{name} holds {count} values, written out one by one: above {MAX_WRITTEN_VALUES}"
            )
