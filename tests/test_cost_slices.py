"""What an ``extract_slice`` costs: its window read and written, not its source — alone, and
inside a fused section that computes the source on chip (by hand, bytes of f32)."""

from __future__ import annotations

from ir_helpers import parse

from tp_dialect.analysis.timing.cost import op_cost
from tp_dialect.ops import SectionOp

T = "tensor<4x8xf32, #tp.chip<0>>"  # 128 bytes
H = "tensor<4x4xf32, #tp.chip<0>>"  # 64 bytes


def _section(body: str, result: str) -> SectionOp:
    text = (
        "builtin.module attributes {tp.chips = 1 : i64} {\n"
        f"func.func @f(%a: {T}, %b: {T}) -> {result} {{\n"
        f"%e = tensor.empty() : {T}\n"
        f'%s = tp.section "s" on [0] {{\n{body}}} : {result}\n'
        f"func.return %s : {result}\n}}\n}}\n"
    )
    return next(op for op in parse(text).walk() if isinstance(op, SectionOp))


def test_a_slice_moves_its_window() -> None:
    """Read 64 bytes of %a's window, write them: 128."""
    body = f"%h = tensor.extract_slice %a[0, 0] [4, 4] [1, 1] : {T} to {H}\ntp.yield %h : {H}\n"
    assert op_cost(_section(body, H)).bytes == 128


def test_a_fused_section_slicing_what_it_computes() -> None:
    """%q = a + b computed on chip (a, b and the init read: 384), its window cut on chip and
    written out (64): 448. The slice reads 64 of %q's 128 bytes, so only 64 are taken off for
    that read, and %q itself is never written (128 off)."""
    body = (
        f"%q = linalg.add ins(%a, %b : {T}, {T}) outs(%e : {T}) -> {T}\n"
        f"%h = tensor.extract_slice %q[0, 0] [4, 4] [1, 1] : {T} to {H}\n"
        f"tp.yield %h : {H}\n"
    )
    assert op_cost(_section(body, H)).bytes == 448
