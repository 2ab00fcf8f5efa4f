"""Where a per-chip function may be called: `check_chip_calls` lets calls of ordinary
functions be and refuses, located and by name, a call of a function marked for a chip that
has no body a chip could run."""

from __future__ import annotations

import pytest
from ir_helpers import parse
from xdsl.dialects.func import CallOp

from tp_dialect.analysis.calls.chip_runs import check_chip_calls
from tp_dialect.diagnostics import TpDiagnostic

T = "tensor<2xf32>"


def module(marked: bool) -> str:
    mark = " attributes {tp.chip = 0 : i64}" if marked else ""
    return f"""builtin.module {{
  func.func private @g(%0: {T}) -> {T}{mark}
  func.func @h(%x: {T}) -> {T} {{
    func.return %x : {T}
  }}
  func.func @main(%x: {T}) -> {T} {{
    %a = func.call @h(%x) : ({T}) -> {T}
    %b = func.call @g(%a) : ({T}) -> {T}
    func.return %b : {T}
  }}
}}"""


def test_calls_of_ordinary_functions_are_left_alone() -> None:
    check_chip_calls(parse(module(marked=False)))


def test_a_marked_function_with_no_body_is_refused_where_it_is_called() -> None:
    m = parse(module(marked=True))
    with pytest.raises(TpDiagnostic) as err:
        check_chip_calls(m)
    (call,) = [op for op in m.walk() if isinstance(op, CallOp) and "g" in str(op.callee)]
    assert err.value.op is call
    assert err.value.message == (
        "'func.call' of @g, a per-chip function with no body of one block ending in "
        "func.return: a chip cannot run it [not-linkable]"
    )
