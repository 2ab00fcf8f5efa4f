"""Readable names for SSA values: the name hint, else the argument's place, else the op's
name and result index (as diagnostics and buffer names spell them)."""

from __future__ import annotations

from ir_helpers import parse
from xdsl.dialects.func import FuncOp

from tp_dialect.names import value_name


def test_a_value_without_a_hint_is_named_by_its_place() -> None:
    module = parse(
        """builtin.module {
  func.func @f(%0: tensor<2xf32>, %x: tensor<2xf32>) -> tensor<2xf32> {
    %1 = arith.addf %0, %x : tensor<2xf32>
    %y = arith.mulf %1, %1 : tensor<2xf32>
    func.return %y : tensor<2xf32>
  }
}"""
    )
    (f,) = [op for op in module.ops if isinstance(op, FuncOp)]
    first, second = f.body.block.args
    add, mul, _ = f.body.block.ops
    assert [value_name(v) for v in (first, second)] == ["arg0", "x"]
    assert [value_name(add.results[0]), value_name(mul.results[0])] == ["arith.addf#0", "y"]
