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


def test_a_fused_contraction_accumulating_into_its_fill() -> None:
    """Windows of %a and %b (64 bytes read each) contracted into a fill it accumulates in
    (the fill writes 64 on chip; the generic reads its inputs, not that init), rounded to
    bf16 and written out (32): 160. The init is taken off once, for the fill's write — not a
    second time for a read the generic is never charged (that gave 96)."""
    acc = "tensor<4x4xf32, #tp.chip<0>>"
    half = "tensor<4x4xbf16, #tp.chip<0>>"
    body = (
        f"%w = tensor.extract_slice %a[0, 0] [4, 4] [1, 1] : {T} to {H}\n"
        f"%v = tensor.extract_slice %b[0, 4] [4, 4] [1, 1] : {T} to {H}\n"
        "%zero = arith.constant 0.0 : f32\n"
        f"%e4 = tensor.empty() : {acc}\n"
        f"%z = linalg.fill ins(%zero : f32) outs(%e4 : {acc}) -> {acc}\n"
        "%p = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, "
        "affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], "
        '  iterator_types = ["parallel", "parallel", "reduction"]} '
        f"ins(%w, %v : {H}, {H}) outs(%z : {acc}) {{\n"
        "^bb0(%x: f32, %y: f32, %s: f32):\n"
        "  %m = arith.mulf %x, %y : f32\n  %t = arith.addf %s, %m : f32\n"
        "  linalg.yield %t : f32\n"
        f"}} -> {acc}\n"
        f"%r = arith.truncf %p : {acc} to {half}\n"
        f"tp.yield %r : {half}\n"
    )
    assert op_cost(_section(body, half)).bytes == 160
