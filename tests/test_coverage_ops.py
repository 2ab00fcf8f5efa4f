"""Every linalg op of xDSL between a weight's slice and the sum an all-reduce adds is followed
or refused by the coverage rule — never passed over.

Each op class xDSL's linalg dialect defines gets a two-chip program in which chip c's part of
a weight reaches the reduction that makes its partial through that op (or is reduced by it).
Two slicings are injected: parts that overlap (both chips take 0..4 of 8), which tp-verify
must refuse, and parts that cover (0..4 and 4..8), which it certifies where it follows the op
and refuses where it cannot prove what is summed. A linalg op class this table does not name
fails the test, so an xDSL upgrade that adds one must say how coverage treats it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
from ir_helpers import parse
from xdsl.dialects.linalg import ops as linalg
from xdsl.irdl import IRDLOperation

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.diagnostics import TpDiagnostic

PARTS = {"overlap": [(0, 4), (0, 4)], "cover": [(0, 4), (4, 4)]}
ADD = [
    "  (%in: f32, %init: f32) {",
    "    %r = arith.addf %in, %init : f32",
    "    linalg.yield %r : f32",
    "  }",
]


def t(shape: str, chip: int | None = None, elem: str = "f32") -> str:
    where = f", #tp.chip<{chip}>" if chip is not None else ""
    return f"tensor<{shape}x{elem}{where}>"


def cut(
    name: str,
    src: str,
    shape: list[int],
    axis: int,
    part: tuple[int, int],
    c: int,
    elem: str = "f32",
) -> str:
    """``%name`` = chip c's ``part`` of ``%src`` along ``axis``."""
    local = list(shape)
    local[axis] = part[1]
    full = "x".join(map(str, shape))
    return (
        f"%{name} = tp.shard %{src} at #tp.slice<axis = {axis}, ranges = [({part[0]}, {part[1]})], "
        f"full = [{', '.join(map(str, shape))}]> : {t(full, None, elem)} -> "
        f"{t('x'.join(map(str, local)), c, elem)}"
    )


def module(
    args: str,
    out: str,
    per_chip: Callable[[int, tuple[int, int]], list[str]],
    parts,
    elem: str = "f32",
) -> str:
    """A two-chip function over ``args``: ``per_chip(c, part)`` defines ``%p{c}`` (shaped
    ``out``), and the partials are all-reduced."""
    zero = "0" if elem.startswith("i") else "0.0"
    lines = [
        "builtin.module attributes {tp.chips = 2 : i64} {",
        f"  func.func @f({args}) -> {t(out, None, elem)} {{",
        f"    %zero = arith.constant {zero} : {elem}",
        "    %one = arith.constant 1.0 : f32",
    ]
    for c, part in enumerate(parts):
        lines.append(f"    %zo{c} = tensor.empty() : {t(out, c, elem)}")
        zeros = t(out, c, elem)
        lines.append(
            f"    %z{c} = linalg.fill ins(%zero : {elem}) outs(%zo{c} : {zeros}) -> {zeros}"
        )
        lines += [f"    {line}" for line in per_chip(c, part)]
    parts_ty = f"{t(out, 0, elem)}, {t(out, 1, elem)}"
    lines.append(f"    %s = tp.allreduce %p0, %p1 : {parts_ty} -> {t(out, None, elem)}")
    lines += [f"    func.return %s : {t(out, None, elem)}", "  }", "}"]
    return "\n".join(lines)


W = f"%w: {t('8x4')}"


def rows_then_sum(make: Callable[[int, str], list[str]], ty_of_y: str = "4x4") -> Callable:
    """Chip c: ``%w{c}`` = its rows of ``%w`` [8, 4]; ``make`` defines ``%y{c}`` (its rows on
    axis 0); the partial sums ``%y{c}``'s rows."""

    def build(parts) -> str:
        def chip(c: int, part: tuple[int, int]) -> list[str]:
            ty = t(ty_of_y, c)
            return [
                cut(f"w{c}", "w", [8, 4], 0, part, c),
                *make(c, t("4x4", c)),
                f"%p{c} = linalg.reduce ins(%y{c} : {ty}) outs(%z{c} : {t('4', c)})",
                "  dimensions = [0]",
                *ADD,
            ]

        return module(W, "4", chip, parts)

    return build


def named(op: str, arity: int) -> Callable:
    def make(c: int, ty: str) -> list[str]:
        ins = ", ".join([f"%w{c}"] * arity)
        tys = ", ".join([ty] * arity)
        return [
            f"%e{c} = tensor.empty() : {ty}",
            f"%y{c} = {op} ins({ins} : {tys}) outs(%e{c} : {ty}) -> {ty}",
        ]

    return rows_then_sum(make)


def select(c: int, ty: str) -> list[str]:
    cond = t("4x4", None, "i1")
    return [
        f"%cond{c} = arith.constant dense<true> : {cond}",
        f"%e{c} = tensor.empty() : {ty}",
        f"%y{c} = linalg.select ins(%cond{c}, %w{c}, %w{c} : {cond}, {ty}, {ty})",
        f"  outs(%e{c} : {ty}) -> {ty}",
    ]


def fill(c: int, ty: str) -> list[str]:
    # The fill overwrites the slice: what is summed is the constant, once per chip.
    return [f"%y{c} = linalg.fill ins(%one : f32) outs(%w{c} : {ty}) -> {ty}"]


def generic(c: int, ty: str) -> list[str]:
    maps = "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>"
    return [
        f"%e{c} = tensor.empty() : {ty}",
        f'%y{c} = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel", '
        f'"parallel"]}} ins(%w{c} : {ty}) outs(%e{c} : {ty}) {{',
        "^bb0(%a: f32, %o: f32):",
        "  %n = arith.negf %a : f32",
        "  linalg.yield %n : f32",
        f"}} -> {ty}",
    ]


def transpose(parts) -> str:
    def chip(c: int, part: tuple[int, int]) -> list[str]:
        ty = t("4x4", c)
        return [
            cut(f"w{c}", "w", [8, 4], 0, part, c),
            f"%e{c} = tensor.empty() : {ty}",
            f"%y{c} = linalg.transpose ins(%w{c} : {ty}) outs(%e{c} : {ty}) permutation = [1, 0]",
            f"%p{c} = linalg.reduce ins(%y{c} : {ty}) outs(%z{c} : {t('4', c)}) dimensions = [1]",
            *ADD,
        ]

    return module(W, "4", chip, parts)


def broadcast(parts) -> str:
    def chip(c: int, part: tuple[int, int]) -> list[str]:
        wide = t("4x4x2", c)
        return [
            cut(f"w{c}", "w", [8, 4], 0, part, c),
            f"%e{c} = tensor.empty() : {wide}",
            f"%y{c} = linalg.broadcast ins(%w{c} : {t('4x4', c)}) outs(%e{c} : {wide})",
            "  dimensions = [2]",
            f"%p{c} = linalg.reduce ins(%y{c} : {wide}) outs(%z{c} : {t('4x2', c)})",
            "  dimensions = [0]",
            *ADD,
        ]

    return module(W, "4x2", chip, parts)


def matmul(parts) -> str:
    def chip(c: int, part: tuple[int, int]) -> list[str]:
        return [
            cut(f"x{c}", "x", [1, 8], 1, part, c),
            cut(f"w{c}", "w", [8, 4], 0, part, c),
            f"%p{c} = linalg.matmul ins(%x{c}, %w{c} : {t('1x4', c)}, {t('4x4', c)}) "
            f"outs(%z{c} : {t('1x4', c)}) -> {t('1x4', c)}",
        ]

    return module(f"%x: {t('1x8')}, {W}", "1x4", chip, parts)


def quantized_matmul(parts) -> str:
    def chip(c: int, part: tuple[int, int]) -> list[str]:
        a, b, out = t("1x4", c, "i8"), t("4x4", c, "i8"), t("1x4", c, "i32")
        return [
            cut(f"x{c}", "x", [1, 8], 1, part, c, "i8"),
            cut(f"w{c}", "w", [8, 4], 0, part, c, "i8"),
            f"%p{c} = linalg.quantized_matmul ins(%x{c}, %w{c}, %zero, %zero : {a}, {b}, i32, i32) "
            f"outs(%z{c} : {out}) -> {out}",
        ]

    args = f"%x: {t('1x8', None, 'i8')}, %w: {t('8x4', None, 'i8')}"
    return module(args, "1x4", chip, parts, "i32")


# Convolutions over 8 input channels, each chip taking its channels of the image and of the
# filter: (image shape, channel axis; filter shape, channel axis; output shape). xDSL's conv
# ops index the image by sums of loops (d2 + d5): followed, since those axes are not cut.
CONVS = {
    "conv_2d_nchw_fchw": ([1, 8, 1, 4], 1, [1, 8, 1, 1], 1, "1x1x1x4"),
    "conv_2d_nhwc_hwcf": ([1, 1, 4, 8], 3, [1, 1, 8, 1], 2, "1x1x4x1"),
    "conv_2d_nhwc_fhwc": ([1, 1, 4, 8], 3, [1, 1, 1, 8], 3, "1x1x4x1"),
    "conv_2d_ngchw_fgchw": ([1, 1, 8, 1, 4], 2, [1, 1, 8, 1, 1], 2, "1x1x1x1x4"),
    "conv_2d_ngchw_gfchw": ([1, 1, 8, 1, 4], 2, [1, 1, 8, 1, 1], 2, "1x1x1x1x4"),
    "conv_2d_nhwgc_gfhwc": ([1, 1, 4, 1, 8], 4, [1, 1, 1, 1, 8], 4, "1x1x4x1x1"),
}


def conv(name: str) -> Callable:
    image, image_axis, kernel, kernel_axis, out = CONVS[name]

    def build(parts) -> str:
        def chip(c: int, part: tuple[int, int]) -> list[str]:
            local_i = [4 if i == image_axis else d for i, d in enumerate(image)]
            local_k = [4 if i == kernel_axis else d for i, d in enumerate(kernel)]
            ti = t("x".join(map(str, local_i)), c)
            tk = t("x".join(map(str, local_k)), c)
            return [
                cut(f"i{c}", "img", image, image_axis, part, c),
                cut(f"k{c}", "ker", kernel, kernel_axis, part, c),
                f"%p{c} = linalg.{name} {{dilations = dense<1> : tensor<2xi64>, strides = "
                f"dense<1> : tensor<2xi64>}} ins(%i{c}, %k{c} : {ti}, {tk}) outs(%z{c} : "
                f"{t(out, c)}) -> {t(out, c)}",
            ]

        args = f"%img: {t('x'.join(map(str, image)))}, %ker: {t('x'.join(map(str, kernel)))}"
        return module(args, out, chip, parts)

    return build


def pooling(parts) -> str:
    def chip(c: int, part: tuple[int, int]) -> list[str]:
        image, out = t("1x4x1x4", c), t("1x4x1x4", c)
        return [
            cut(f"i{c}", "img", [1, 8, 1, 4], 1, part, c),
            f"%k{c} = tensor.empty() : {t('1x1')}",
            f"%p{c} = linalg.pooling_nchw_max {{dilations = dense<1> : tensor<2xi64>, strides = "
            f"dense<1> : tensor<2xi64>}} ins(%i{c}, %k{c} : {image}, {t('1x1')}) outs(%z{c} : "
            f"{out}) -> {out}",
        ]

    return module(f"%img: {t('1x8x1x4')}", "1x4x1x4", chip, parts)


FOLLOWED, REFUSED = "followed", "refused"
# Each xDSL linalg op class: how its program is built, and whether coverage follows it (the
# covering twin certified) or refuses what it cannot prove (both refused).
TABLE: dict[type[IRDLOperation], tuple[Callable, str] | str] = {
    linalg.AddOp: (named("linalg.add", 2), FOLLOWED),
    linalg.SubOp: (named("linalg.sub", 2), FOLLOWED),
    linalg.MulOp: (named("linalg.mul", 2), FOLLOWED),
    linalg.MaxOp: (named("linalg.max", 2), FOLLOWED),
    linalg.MinOp: (named("linalg.min", 2), FOLLOWED),
    linalg.ExpOp: (named("linalg.exp", 1), FOLLOWED),
    linalg.LogOp: (named("linalg.log", 1), FOLLOWED),
    linalg.SqrtOp: (named("linalg.sqrt", 1), FOLLOWED),
    linalg.CopyOp: (named("linalg.copy", 1), FOLLOWED),
    linalg.SelectOp: (rows_then_sum(select), FOLLOWED),
    linalg.GenericOp: (rows_then_sum(generic), FOLLOWED),
    linalg.ReduceOp: (
        rows_then_sum(lambda c, ty: [f"%y{c} = tensor.cast %w{c} : {ty} to {ty}"]),
        FOLLOWED,
    ),
    linalg.TransposeOp: (transpose, FOLLOWED),
    linalg.BroadcastOp: (broadcast, FOLLOWED),
    linalg.MatmulOp: (matmul, FOLLOWED),
    linalg.QuantizedMatmulOp: (quantized_matmul, REFUSED),  # opaque to the obligation
    linalg.FillOp: (rows_then_sum(fill), REFUSED),  # the constant, summed once per chip
    linalg.PoolingNchwMaxOp: (pooling, REFUSED),  # a max: not a sum
    **{
        getattr(linalg, cls): (conv(name), FOLLOWED)
        for cls, name in [
            ("Conv2DNchwFchwOp", "conv_2d_nchw_fchw"),
            ("Conv2DNhwc_HwcfOp", "conv_2d_nhwc_hwcf"),
            ("Conv2DNhwc_FhwcOp", "conv_2d_nhwc_fhwc"),
            ("Conv2DNgchwFgchwOp", "conv_2d_ngchw_fgchw"),
            ("Conv2DNgchwGfchwOp", "conv_2d_ngchw_gfchw"),
            ("Conv2DNhwgcGfhwcOp", "conv_2d_nhwgc_gfhwc"),
        ]
    },
    linalg.IndexOp: "a body op: reads a loop index (a reader of that loop, whole)",
    linalg.YieldOp: "a body terminator",
}


def linalg_op_classes() -> list[type[IRDLOperation]]:
    return sorted(
        (
            cls
            for _, cls in inspect.getmembers(linalg, inspect.isclass)
            if issubclass(cls, IRDLOperation)
            and cls.__module__ == linalg.__name__
            and hasattr(cls, "name")
        ),
        key=lambda cls: cls.name,
    )


def test_every_linalg_op_class_is_in_the_table() -> None:
    assert set(linalg_op_classes()) == set(TABLE)


def _verdict(text: str) -> str | None:
    """None when tp-verify certifies ``text``; else the refusal's reason."""
    module = parse(text)
    try:
        check_obligation(module)
    except TpDiagnostic as err:
        return err.message.rsplit("[", 1)[-1].rstrip("]")
    return None


@pytest.mark.parametrize(
    "cls",
    [cls for cls in linalg_op_classes() if isinstance(TABLE[cls], tuple)],
    ids=lambda c: c.name,
)
def test_a_slice_through_each_linalg_op_is_followed_or_refused(cls: type[IRDLOperation]) -> None:
    build, treatment = TABLE[cls]  # type: ignore[misc]
    overlap = _verdict(build(PARTS["overlap"]))
    assert overlap is not None, f"{cls.name}: overlapping parts certified"
    cover = _verdict(build(PARTS["cover"]))
    if treatment == FOLLOWED:
        assert cover is None, f"{cls.name}: covering parts refused ({cover})"
    else:
        assert cover is not None, (
            f"{cls.name}: covering parts certified, but coverage cannot follow it"
        )
