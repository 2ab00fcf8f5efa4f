"""The tp IR from Python: slices, chip ownership, op construction and verifiers."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tp_dialect import CHIPS_ATTR, ChipAttr, SliceAttr, check_chip_indices, chip_of, on_chip
from tp_dialect.ops import AllReduceOp, SectionOp, ShardOp, TransferOp, YieldOp


def test_slice_shape_and_indices_match_numpy_slicing() -> None:
    sl = SliceAttr(axis=1, ranges=[(4, 2), (0, 3)], full=[5, 8])
    full = np.arange(40).reshape(5, 8)
    picked = np.take(full, sl.indices(), axis=sl.axis_index)
    expected = np.concatenate([full[:, 4:6], full[:, 0:3]], axis=1)
    assert sl.shape == (5, 5)
    np.testing.assert_array_equal(picked, expected)


@pytest.mark.parametrize(
    ("axis", "ranges", "full", "message"),
    [
        (0, [(0, 2), (1, 2)], [4], "overlap"),
        (0, [(3, 2)], [4], "out of bounds"),
        (0, [(0, 0)], [4], "is empty"),
        (1, [(0, 1)], [4], "axis 1 is out of range"),
        (0, [], [4], "no ranges"),
    ],
)
def test_bad_slices_are_refused(
    axis: int, ranges: list[tuple[int, int]], full: list[int], message: str
) -> None:
    with pytest.raises(VerifyException, match=message):
        SliceAttr(axis, ranges, full)


def test_chip_ownership_lives_in_the_type() -> None:
    spine = TensorType(f32, [2, 4])
    owned = on_chip(spine, 3)
    assert chip_of(spine) is None
    assert chip_of(owned) == 3
    assert owned.encoding == ChipAttr(3)
    assert chip_of(on_chip(owned, None)) is None


def _module(n: int, body_ops: list, arg_types: list) -> ModuleOp:
    block = Block(arg_types=arg_types)
    ops = body_ops(block.args) if callable(body_ops) else body_ops
    block.add_ops([*ops, ReturnOp()])
    func = FuncOp("f", (arg_types, []), Region(block))
    module = ModuleOp([func])
    module.attributes[CHIPS_ATTR] = IntegerAttr(n, i64)
    return module


def test_built_megatron_fragment_verifies_and_prints(ctx: Context) -> None:
    full = TensorType(f32, [8, 4])

    def body(args):
        (w,) = args
        shards = [
            ShardOp(w, SliceAttr(0, [(4 * c, 4)], [8, 4]), on_chip(TensorType(f32, [4, 4]), c))
            for c in range(2)
        ]
        total = AllReduceOp([s.result for s in shards], TensorType(f32, [4, 4]))
        return [*shards, total]

    module = _module(2, body, [full])
    module.verify()
    check_chip_indices(module)
    text = str(module)
    reparsed = Parser(ctx, text).parse_module()
    assert str(reparsed) == text
    assert re.search(
        r"tp.allreduce %\d+, %\d+ : tensor<4x4xf32, #tp.chip<0>>, "
        r"tensor<4x4xf32, #tp.chip<1>> -> tensor<4x4xf32>",
        text,
    )


def test_allreduce_missing_a_chip_is_refused() -> None:
    part = on_chip(TensorType(f32, [4]), 0)

    def body(args):
        return [AllReduceOp([args[0]], TensorType(f32, [4]))]

    module = _module(2, body, [part])
    with pytest.raises(VerifyException, match="has 1 partials, the module has 2 chips"):
        module.verify()


def test_chip_index_beyond_the_grid_is_refused() -> None:
    module = _module(2, [], [on_chip(TensorType(f32, [4]), 2)])
    module.verify()  # each op is fine on its own
    with pytest.raises(VerifyException, match="is on chip 2, but the module has 2 chips"):
        check_chip_indices(module)


def test_section_and_transfer_build_and_verify() -> None:
    t1 = on_chip(TensorType(f32, [4]), 1)

    def body(args):
        (x,) = args
        inner = Block()
        inner.add_op(YieldOp(x))
        section = SectionOp([1], Region(inner), [t1], label="copy")
        moved = TransferOp(section.outs[0], 1, 0)
        return [section, moved]

    module = _module(2, body, [t1])
    module.verify()
    section = next(op for op in module.walk() if isinstance(op, SectionOp))
    assert section.chip_list == (1,)
    printed = []
    Printer(stream=_Sink(printed)).print_op(section)
    assert 'tp.section "copy" on [1]' in "".join(printed)


class _Sink:
    def __init__(self, out: list[str]) -> None:
        self.out = out

    def write(self, s: str) -> None:
        self.out.append(s)
