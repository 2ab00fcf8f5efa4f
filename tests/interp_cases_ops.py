# ruff: noqa: E501  (IR text is written out one op per line)
"""Programs and their plain-numpy answers for every admitted op but arith and math: tensor,
linalg (generic in every plan the executor has, each named op), scf, affine, bufferization,
memref views, vector, func and builtin casts (see `interp_cases` for the `Case` contract)."""

from __future__ import annotations

import itertools

import numpy as np
from interp_cases import Case

F32 = np.float32
RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(F32)


def tensor_cases() -> list[Case]:
    a, b = rand(2, 3), rand(2, 3)
    s = F32(0.75)
    cat = np.concatenate([a, b])
    inserted_slice = cat.copy()
    inserted_slice[0:2, 1:3] = cat[1:4:2, 0:2]
    inserted = a.copy()
    inserted[1, 0] = s
    padded = np.full((3, 5), s, F32)
    padded[1:3, 0:3] = a
    by_index = np.add.outer(np.arange(4), 10 * np.arange(5)).astype(F32)  # 10*j + i
    by_index[1:3, 1:4] = a
    by_branch = np.where(np.add.outer(np.arange(4), np.arange(5)) % 2 == 0, 1.0, -1.0)
    by_branch = by_branch.astype(F32)
    by_branch[1:3, 1:4] = a
    text = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %s: f32) -> (tensor<2x3xf32>, index, tensor<4x3xf32>, tensor<3x4xf32>, f32, tensor<2x2xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<3x5xf32>, tensor<2xf32>, tensor<4x5xf32>, tensor<4x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dyn = tensor.cast %a : tensor<2x3xf32> to tensor<?x3xf32>
  %back = tensor.cast %dyn : tensor<?x3xf32> to tensor<2x3xf32>
  %d = tensor.dim %dyn, %c1 : tensor<?x3xf32>
  %cat = tensor.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %flat = tensor.collapse_shape %cat [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %grid = tensor.expand_shape %flat [[0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<3x4xf32>
  %x = tensor.extract %a[%c1, %c1] : tensor<2x3xf32>
  %sl = tensor.extract_slice %cat[1, 0] [2, 2] [2, 1] : tensor<4x3xf32> to tensor<2x2xf32>
  %fe = tensor.from_elements %s, %x, %s : tensor<3xf32>
  %ins = tensor.insert %s into %a[%c1, %c0] : tensor<2x3xf32>
  %dest = tensor.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %is = tensor.insert_slice %sl into %dest[0, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<4x3xf32>
  %shape = arith.constant dense<[6]> : tensor<1xindex>
  %rs = tensor.reshape %a(%shape) : (tensor<2x3xf32>, tensor<1xindex>) -> tensor<6xf32>
  %sp = tensor.splat %s : tensor<2x2xf32>
  %pad = tensor.pad %a low[1, 0] high[0, 2] {
  ^bb0(%p: index, %q: index):
    tensor.yield %s : f32
  } : tensor<2x3xf32> to tensor<3x5xf32>
  %n = arith.constant 2 : index
  %em = tensor.empty(%n) : tensor<?xf32>
  %ems = tensor.cast %em : tensor<?xf32> to tensor<2xf32>
  %pi = tensor.pad %a low[1, 1] high[1, 1] {
  ^bb0(%p: index, %q: index):
    %ten = arith.constant 10 : index
    %t = arith.muli %q, %ten : index
    %u = arith.addi %t, %p : index
    %w = arith.index_cast %u : index to i32
    %f = arith.sitofp %w : i32 to f32
    tensor.yield %f : f32
  } : tensor<2x3xf32> to tensor<4x5xf32>
  %pb = tensor.pad %a low[1, 1] high[1, 1] {
  ^bb0(%p: index, %q: index):
    %sum = arith.addi %p, %q : index
    %two = arith.constant 2 : index
    %r = arith.remsi %sum, %two : index
    %even = arith.cmpi eq, %r, %c0 : index
    %v = scf.if %even -> (f32) {
      %one = arith.constant 1.0 : f32
      scf.yield %one : f32
    } else {
      %m = arith.constant -1.0 : f32
      scf.yield %m : f32
    }
    tensor.yield %v : f32
  } : tensor<2x3xf32> to tensor<4x5xf32>
  func.return %back, %d, %cat, %grid, %x, %sl, %fe, %ins, %is, %rs, %sp, %pad, %ems, %pi, %pb : tensor<2x3xf32>, index, tensor<4x3xf32>, tensor<3x4xf32>, f32, tensor<2x2xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<3x5xf32>, tensor<2xf32>, tensor<4x5xf32>, tensor<4x5xf32>
}
"""
    expected = [
        a,
        np.int64(3),
        cat,
        cat.reshape(3, 4),
        a[1, 1],
        cat[1:4:2, 0:2],
        np.array([s, a[1, 1], s], F32),
        inserted,
        inserted_slice,
        a.reshape(6),
        np.full((2, 2), s, F32),
        padded,
        np.zeros(2, F32),
        by_index,
        by_branch,
    ]
    return [Case("tensor ops", text, {"a": a, "b": b, "s": s}, expected)]


def _generic(
    maps: list[str], iterators: list[str], ins: str, outs: str, body: str, res: str
) -> str:
    its = ", ".join(f'"{i}"' for i in iterators)
    return (
        f"linalg.generic {{indexing_maps = [{', '.join(f'affine_map<{m}>' for m in maps)}], "
        f"iterator_types = [{its}]}} {f'ins({ins}) ' if ins else ''}outs({outs}) {{\n{body}\n  }} "
        f"-> {res}"
    )


def generic_cases() -> list[Case]:
    """linalg.generic in each of the executor's plans, with maps it must read by gathering."""
    a, b = rand(4, 4), rand(3, 4)
    v = rand(6)
    diag_sum = np.full(3, np.trace(a), F32)
    diag_contract = b @ np.diag(a)
    order = np.argmax(a, axis=1)
    ints = RNG.integers(-100, 100, (4, 5)).astype(np.int32)
    mixed = np.zeros(4, F32)
    for i in range(4):
        acc = F32(0)
        for j in range(4):
            acc = (acc + a[i, j]) * F32(0.5)
        mixed[i] = acc
    window = np.array([v[i : i + 3] @ np.array([1, 2, 3], F32) for i in range(4)], F32)
    clipped = np.where(a > 0, a, -1.0).astype(F32) + np.arange(4, dtype=F32)[None, :]
    gathered = a[np.arange(4), (np.arange(4) + 1) % 4]
    D = "(d0, d1)"
    text = f"""
func.func @main(%a: tensor<4x4xf32>, %b: tensor<3x4xf32>, %v: tensor<6xf32>, %k: tensor<4x5xi32>, %s: f32) -> (tensor<3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xindex>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) {{
  %z3 = arith.constant dense<0.0> : tensor<3xf32>
  %z4 = arith.constant dense<0.0> : tensor<4xf32>
  %lo = arith.constant dense<-3.0e38> : tensor<4xf32>
  %i4 = arith.constant dense<0> : tensor<4xindex>
  %zi = arith.constant dense<0> : tensor<4xi32>
  %z44 = arith.constant dense<0.0> : tensor<4x4xf32>
  %wk = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %trace = {
        _generic(
            [f"{D} -> (d1, d1)", f"{D} -> (d0)"],
            ["parallel", "reduction"],
            "%a : tensor<4x4xf32>",
            "%z3 : tensor<3xf32>",
            '''  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32''',
            "tensor<3xf32>",
        )
    }
  %diag = {
        _generic(
            ["(d0) -> (d0, d0)", "(d0) -> (d0)"],
            ["parallel"],
            "%a : tensor<4x4xf32>",
            "%z4 : tensor<4xf32>",
            '''  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32''',
            "tensor<4xf32>",
        )
    }
  %dc = {
        _generic(
            [f"{D} -> (d1, d1)", f"{D} -> (d0, d1)", f"{D} -> (d0)"],
            ["parallel", "reduction"],
            "%a, %b : tensor<4x4xf32>, tensor<3x4xf32>",
            "%z3 : tensor<3xf32>",
            '''  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32''',
            "tensor<3xf32>",
        )
    }
  %mx:2 = {
        _generic(
            [f"{D} -> (d0, d1)", f"{D} -> (d0)", f"{D} -> (d0)"],
            ["parallel", "reduction"],
            "%a : tensor<4x4xf32>",
            "%lo, %i4 : tensor<4xf32>, tensor<4xindex>",
            '''  ^bb0(%x: f32, %best: f32, %at: index):
    %j = linalg.index 1 : index
    %gt = arith.cmpf ogt, %x, %best : f32
    %nb = arith.select %gt, %x, %best : f32
    %na = arith.select %gt, %j, %at : index
    linalg.yield %nb, %na : f32, index''',
            "tensor<4xf32>, tensor<4xindex>",
        )
    }
  %isum = {
        _generic(
            [f"{D} -> (d0, d1)", f"{D} -> (d0)"],
            ["parallel", "reduction"],
            "%k : tensor<4x5xi32>",
            "%zi : tensor<4xi32>",
            '''  ^bb0(%x: i32, %acc: i32):
    %r = arith.addi %acc, %x : i32
    linalg.yield %r : i32''',
            "tensor<4xi32>",
        )
    }
  %half = {
        _generic(
            [f"{D} -> (d0, d1)", f"{D} -> (d0)"],
            ["parallel", "reduction"],
            "%a : tensor<4x4xf32>",
            "%z4 : tensor<4xf32>",
            '''  ^bb0(%x: f32, %acc: f32):
    %h = arith.constant 0.5 : f32
    %r = arith.addf %acc, %x : f32
    %q = arith.mulf %r, %h : f32
    linalg.yield %q : f32''',
            "tensor<4xf32>",
        )
    }
  %win = {
        _generic(
            [f"{D} -> (d0 + d1)", f"{D} -> (d1)", f"{D} -> (d0)"],
            ["parallel", "reduction"],
            "%v, %wk : tensor<6xf32>, tensor<3xf32>",
            "%z4 : tensor<4xf32>",
            '''  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32''',
            "tensor<4xf32>",
        )
    }
  %clip = {
        _generic(
            [f"{D} -> (d0, d1)", f"{D} -> ()", f"{D} -> (d0, d1)"],
            ["parallel", "parallel"],
            "%a, %s : tensor<4x4xf32>, f32",
            "%z44 : tensor<4x4xf32>",
            '''  ^bb0(%x: f32, %t: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %x, %zero : f32
    %kept = scf.if %pos -> (f32) {
      scf.yield %x : f32
    } else {
      %minus = arith.constant -1.0 : f32
      scf.yield %minus : f32
    }
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %r = arith.addf %kept, %jf : f32
    linalg.yield %r : f32''',
            "tensor<4x4xf32>",
        )
    }
  %tr = {
        _generic(
            [f"{D} -> (d0, d1)", f"{D} -> (d1, d0)"],
            ["parallel", "parallel"],
            "%a : tensor<4x4xf32>",
            "%z44 : tensor<4x4xf32>",
            '''  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32''',
            "tensor<4x4xf32>",
        )
    }
  %gat = {
        _generic(
            ["(d0) -> (d0)"],
            ["parallel"],
            "",
            "%z4 : tensor<4xf32>",
            '''  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %one = arith.constant 1 : index
    %four = arith.constant 4 : index
    %n = arith.addi %i, %one : index
    %j = arith.remsi %n, %four : index
    %x = tensor.extract %a[%i, %j] : tensor<4x4xf32>
    linalg.yield %x : f32''',
            "tensor<4xf32>",
        )
    }
  func.return %trace, %diag, %dc, %mx#0, %mx#1, %isum, %half, %win, %clip, %tr, %gat, %z44 : tensor<3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xindex>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
}}
"""
    expected = [
        diag_sum,
        np.diag(a),
        diag_contract,
        a.max(axis=1),
        order.astype(np.int64),
        ints.sum(axis=1, dtype=np.int64).astype(np.int32),
        mixed,
        window,
        clipped,
        a.T,
        gathered,
        np.zeros((4, 4), F32),
    ]
    inputs = {"a": a, "b": b, "v": v, "k": ints, "s": F32(2.0)}
    return [Case("linalg.generic plans", text, inputs, expected, rtol=1e-5)]


def _named(op: str, ins: list[tuple[str, str]], out: str, attrs: str = "") -> str:
    names = ", ".join(n for n, _ in ins)
    types = ", ".join(t for _, t in ins)
    return f"linalg.{op} {attrs}ins({names} : {types}) outs(%o_{op} : {out}) -> {out}"


def named_cases() -> list[Case]:
    """Each named linalg op on small tensors, against numpy (convolutions by their
    definition, as loops)."""
    x, y = rand(3, 4), rand(3, 4)
    pos = np.abs(x) + F32(0.5)
    c = RNG.random((3, 4)) > 0.5
    m, w = rand(3, 5), rand(5, 2)
    elementwise = [
        ("add", x + y, [("%x", "tensor<3x4xf32>"), ("%y", "tensor<3x4xf32>")]),
        ("sub", x - y, [("%x", "tensor<3x4xf32>"), ("%y", "tensor<3x4xf32>")]),
        ("mul", x * y, [("%x", "tensor<3x4xf32>"), ("%y", "tensor<3x4xf32>")]),
        ("max", np.maximum(x, y), [("%x", "tensor<3x4xf32>"), ("%y", "tensor<3x4xf32>")]),
        ("min", np.minimum(x, y), [("%x", "tensor<3x4xf32>"), ("%y", "tensor<3x4xf32>")]),
        ("exp", np.exp(x), [("%x", "tensor<3x4xf32>")]),
        ("log", np.log(pos), [("%p", "tensor<3x4xf32>")]),
        ("sqrt", np.sqrt(pos), [("%p", "tensor<3x4xf32>")]),
        (
            "select",
            np.where(c, x, y),
            [("%c", "tensor<3x4xi1>"), ("%x", "tensor<3x4xf32>"), ("%y", "tensor<3x4xf32>")],
        ),
        ("copy", x, [("%x", "tensor<3x4xf32>")]),
    ]
    lines, outs, types, expected = [], [], [], []
    for op, want, ins in elementwise:
        lines.append(f"  %o_{op} = tensor.empty() : tensor<3x4xf32>")
        lines.append(f"  %r_{op} = {_named(op, ins, 'tensor<3x4xf32>')}")
        outs.append(f"%r_{op}")
        types.append("tensor<3x4xf32>")
        expected.append(want)
    text = f"""
func.func @main(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>, %p: tensor<3x4xf32>, %c: tensor<3x4xi1>, %s: f32, %m: tensor<3x5xf32>, %w: tensor<5x2xf32>) -> ({", ".join(types)}, tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x2xf32>, tensor<3x2x4xf32>, tensor<4xf32>) {{
{chr(10).join(lines)}
  %o_fill = tensor.empty() : tensor<3x4xf32>
  %r_fill = linalg.fill ins(%s : f32) outs(%o_fill : tensor<3x4xf32>) -> tensor<3x4xf32>
  %o_t = tensor.empty() : tensor<4x3xf32>
  %r_t = linalg.transpose ins(%x : tensor<3x4xf32>) outs(%o_t : tensor<4x3xf32>) permutation = [1, 0]
  %o_mm = arith.constant dense<1.0> : tensor<3x2xf32>
  %r_mm = linalg.matmul ins(%m, %w : tensor<3x5xf32>, tensor<5x2xf32>) outs(%o_mm : tensor<3x2xf32>) -> tensor<3x2xf32>
  %o_b = tensor.empty() : tensor<3x2x4xf32>
  %r_b = linalg.broadcast ins(%x : tensor<3x4xf32>) outs(%o_b : tensor<3x2x4xf32>) dimensions = [1]
  %o_r = arith.constant dense<1.0> : tensor<4xf32>
  %r_r = linalg.reduce ins(%x : tensor<3x4xf32>) outs(%o_r : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {{
      %sq = arith.mulf %in, %in : f32
      %r = arith.addf %sq, %acc : f32
      linalg.yield %r : f32
    }}
  func.return {", ".join(outs)}, %r_fill, %r_t, %r_mm, %r_b, %r_r : {", ".join(types)}, tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x2xf32>, tensor<3x2x4xf32>, tensor<4xf32>
}}
"""
    expected += [
        np.full((3, 4), F32(1.25), F32),
        x.T,
        m @ w + 1,
        np.broadcast_to(x[:, None, :], (3, 2, 4)),
        (x * x).sum(axis=0) + 1,
    ]
    inputs = {"x": x, "y": y, "p": pos, "c": c, "s": F32(1.25), "m": m, "w": w}
    return [Case("linalg named ops", text, inputs, expected, rtol=1e-5), *_windows(), _quantized()]


def _conv(image: np.ndarray, kernel: np.ndarray, stride: int, dilation: int) -> np.ndarray:
    """out[f, oh, ow] = sum over c, kh, kw of image[c, oh*s + kh*d, ow*s + kw*d] * kernel[f, c,
    kh, kw] (one image, one group: the definition, as loops)."""
    f_n, c_n, kh_n, kw_n = kernel.shape
    _, h, w = image.shape
    oh_n = (h - dilation * (kh_n - 1) - 1) // stride + 1
    ow_n = (w - dilation * (kw_n - 1) - 1) // stride + 1
    out = np.zeros((f_n, oh_n, ow_n), np.float64)
    for f, oh, ow, c, kh, kw in itertools.product(
        range(f_n), range(oh_n), range(ow_n), range(c_n), range(kh_n), range(kw_n)
    ):
        out[f, oh, ow] += (
            image[c, oh * stride + kh * dilation, ow * stride + kw * dilation]
            * kernel[f, c, kh, kw]
        )
    return out


def _windows() -> list[Case]:
    """The convolutions and the max pooling, each in its layout, strides and dilations."""
    img = rand(2, 2, 7, 7)  # n, c, h, w
    ker = rand(3, 2, 3, 3)  # f, c, kh, kw
    attrs = "{dilations = dense<%d> : tensor<2xi64>, strides = dense<%d> : tensor<2xi64>} "
    cases = []
    layouts = [
        # op, input layout from (n, c, h, w), filter layout from (f, c, kh, kw), output from
        # (n, f, oh, ow); groups: one
        ("conv_2d_nchw_fchw", "nchw", "fchw", "nfhw"),
        ("conv_2d_nhwc_hwcf", "nhwc", "hwcf", "nhwf"),
        ("conv_2d_nhwc_fhwc", "nhwc", "fhwc", "nhwf"),
    ]
    for op, inl, kl, outl in layouts:
        for stride, dilation in ((1, 1), (2, 1), (1, 2)):
            want = np.stack([_conv(img[n], ker, stride, dilation) for n in range(2)])  # nfhw
            x = np.einsum(f"nchw->{inl}", img)
            k = np.einsum(f"fcHW->{kl.replace('h', 'H').replace('w', 'W')}", ker)
            out = np.einsum(f"nfhw->{outl}", want).astype(F32) + 1  # the init: 1
            cases.append(
                _window_case(op, attrs % (dilation, stride), x, k, out, f"{stride}{dilation}")
            )
    # grouped: two groups of one channel each, 3 filters per group
    gimg = img.reshape(2, 2, 1, 7, 7)  # n, g, c, h, w
    gker = rand(2, 3, 1, 3, 3)  # g, f, c, kh, kw
    gwant = np.stack(
        [np.stack([_conv(gimg[n, g], gker[g], 1, 1) for g in range(2)]) for n in range(2)]
    )  # n, g, f, oh, ow
    grouped = [
        ("conv_2d_ngchw_gfchw", gimg, gker, gwant),
        ("conv_2d_ngchw_fgchw", gimg, np.einsum("gfchw->fgchw", gker), gwant),
        (
            "conv_2d_nhwgc_gfhwc",
            np.einsum("ngchw->nhwgc", gimg),
            np.einsum("gfchw->gfhwc", gker),
            np.einsum("ngfhw->nhwgf", gwant),
        ),
    ]
    for op, x, k, want in grouped:
        cases.append(_window_case(op, attrs % (1, 1), x, k, want.astype(F32) + 1, "11"))
    pooled = np.full((2, 2, 3, 3), 0.5)  # the init: 0.5, larger than some windows' max
    for oh, ow, kh, kw in itertools.product(range(3), range(3), range(3), range(3)):
        pooled[:, :, oh, ow] = np.maximum(pooled[:, :, oh, ow], img[:, :, oh * 2 + kh, ow * 2 + kw])
    cases.append(
        _window_case(
            "pooling_nchw_max",
            attrs % (1, 2),
            img,
            np.zeros((3, 3), F32),
            pooled.astype(F32),
            "21",
            init="0.5",
        )
    )
    return cases


def _window_case(
    op: str, attrs: str, x: np.ndarray, k: np.ndarray, want: np.ndarray, tag: str, init: str = "1.0"
) -> Case:
    def t(a: np.ndarray) -> str:
        return f"tensor<{'x'.join(map(str, a.shape))}xf32>"

    text = f"""
func.func @main(%x: {t(x)}, %k: {t(k)}) -> {t(want)} {{
  %o = arith.constant dense<{init}> : {t(want)}
  %r = linalg.{op} {attrs}ins(%x, %k : {t(x)}, {t(k)}) outs(%o : {t(want)}) -> {t(want)}
  func.return %r : {t(want)}
}}
"""
    return Case(
        f"linalg.{op} {tag}", text, {"x": x.astype(F32), "k": k.astype(F32)}, [want], rtol=1e-5
    )


def _quantized() -> Case:
    """linalg.quantized_matmul: xDSL builds its body with arith.extsi, which declares no
    effects, so the certificate refuses it; tp-run runs it all the same."""
    a = RNG.integers(-128, 128, (3, 4)).astype(np.int8)
    b = RNG.integers(-128, 128, (4, 2)).astype(np.int8)
    want = (a.astype(np.int64) - 3) @ (b.astype(np.int64) + 5) + 2
    text = """
func.func @main(%a: tensor<3x4xi8>, %b: tensor<4x2xi8>, %za: i32, %zb: i32) -> tensor<3x2xi32> {
  %o = arith.constant dense<2> : tensor<3x2xi32>
  %r = linalg.quantized_matmul ins(%a, %b, %za, %zb : tensor<3x4xi8>, tensor<4x2xi8>, i32, i32) outs(%o : tensor<3x2xi32>) -> tensor<3x2xi32>
  func.return %r : tensor<3x2xi32>
}
"""
    inputs = {"a": a, "b": b, "za": np.int32(3), "zb": np.int32(-5)}
    return Case(
        "linalg.quantized_matmul",
        text,
        inputs,
        [want.astype(np.int32)],
        certified=False,
        extra={"refused": "arith.extsi"},
    )


def control_cases() -> list[Case]:
    """scf (for, while, if, execute_region, index_switch, parallel with its reductions),
    affine.apply/if and a call between functions."""
    a = rand(2, 4)
    cache = rand(4, 4)
    # scf.for: three steps of a <- 2a + 1 on a tensor and i summed in an i32; each step
    # writes its row of the cache in place (the cache argument itself must be untouched).
    t = a.copy()
    for _ in range(3):
        t = 2 * t + 1
    rows = cache.copy()
    for i in range(4):
        rows[i] = a[0] * i
    count = 0
    while 2**count < 100:
        count += 1
    text = """
func.func @helper(%x: tensor<2x4xf32>, %f: f32) -> tensor<2x4xf32> {
  %e = tensor.empty() : tensor<2x4xf32>
  %s = linalg.fill ins(%f : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = linalg.add ins(%x, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
func.func @decode(%a: tensor<2x4xf32>, %cache: tensor<4x4xf32>, %k: index, %flag: i1) -> (tensor<2x4xf32>, i32, tensor<4x4xf32>, tensor<4x4xf32>, i64, tensor<2x4xf32>, f32, f32, index, f32, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %z = arith.constant 0 : i32
  %r:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%t = %a, %n = %z) -> (tensor<2x4xf32>, i32) {
    %e = tensor.empty() : tensor<2x4xf32>
    %d = tensor.empty() : tensor<2x4xf32>
    %tw = linalg.fill ins(%two : f32) outs(%d : tensor<2x4xf32>) -> tensor<2x4xf32>
    %m = linalg.mul ins(%t, %tw : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %p = func.call @helper(%m, %one) : (tensor<2x4xf32>, f32) -> tensor<2x4xf32>
    %ii = arith.index_cast %i : index to i32
    %nn = arith.addi %n, %ii : i32
    scf.yield %p, %nn : tensor<2x4xf32>, i32
  }
  %row = tensor.extract_slice %a[0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<1x4xf32>
  %filled = scf.for %i = %c0 to %c4 step %c1 iter_args(%c = %cache) -> (tensor<4x4xf32>) {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %e = tensor.empty() : tensor<1x4xf32>
    %fs = linalg.fill ins(%fi : f32) outs(%e : tensor<1x4xf32>) -> tensor<1x4xf32>
    %sc = linalg.mul ins(%row, %fs : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e : tensor<1x4xf32>) -> tensor<1x4xf32>
    %u = tensor.insert_slice %sc into %c[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<4x4xf32>
    scf.yield %u : tensor<4x4xf32>
  }
  %start = arith.constant 0 : i64
  %cnt = scf.while (%w = %start) : (i64) -> i64 {
    %one64 = arith.constant 1 : i64
    %p = arith.shli %one64, %w : i64
    %lim = arith.constant 100 : i64
    %go = arith.cmpi slt, %p, %lim : i64
    scf.condition(%go) %w : i64
  } do {
  ^bb0(%w: i64):
    %one64 = arith.constant 1 : i64
    %nw = arith.addi %w, %one64 : i64
    scf.yield %nw : i64
  }
  %chosen = scf.if %flag -> (tensor<2x4xf32>) {
    scf.yield %r#0 : tensor<2x4xf32>
  } else {
    scf.yield %a : tensor<2x4xf32>
  }
  scf.if %flag {
    %unused = arith.addf %one, %two : f32
  }
  %ex = scf.execute_region -> (f32) {
    %x = tensor.extract %a[%c1, %c3] : tensor<2x4xf32>
    %y = arith.mulf %x, %two : f32
    scf.yield %y : f32
  }
  %sw = scf.index_switch %k -> f32
  case 1 {
    scf.yield %one : f32
  }
  case 2 {
    scf.yield %two : f32
  }
  default {
    %m = arith.constant -1.0 : f32
    scf.yield %m : f32
  }
  %zero = arith.constant 0 : index
  %sq = "scf.parallel"(%c0, %c4, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    %ii = arith.muli %i, %i : index
    "scf.reduce"(%ii) ({
    ^bb1(%lhs: index, %rhs: index):
      %s = arith.addi %lhs, %rhs : index
      "scf.reduce.return"(%s) : (index) -> ()
    }) : (index) -> ()
  }) : (index, index, index, index) -> index
  %zf = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
  %pf = "scf.parallel"(%c0, %c0, %c2, %c4, %c1, %c1, %zf) <{operandSegmentSizes = array<i32: 2, 2, 2, 1>}> ({
  ^bb0(%i: index, %j: index):
    %x = tensor.extract %a[%i, %j] : tensor<2x4xf32>
    "scf.reduce"(%x) ({
    ^bb1(%lhs: f32, %rhs: f32):
      %s = arith.maximumf %lhs, %rhs : f32
      "scf.reduce.return"(%s) : (f32) -> ()
    }) : (f32) -> ()
  }) : (index, index, index, index, index, index, f32) -> f32
  %ap = affine.apply affine_map<(d0)[s0] -> (d0 * 3 + s0 + 1)> (%k)[%c4]
  %ai = "affine.if"(%k, %c4) <{condition = affine_set<(d0)[s0] : (d0 - 2 >= 0, s0 - d0 - 1 >= 0)>}> ({
    "affine.yield"(%c1) : (index) -> ()
  }, {
    "affine.yield"(%c0) : (index) -> ()
  }) : (index, index) -> index
  func.return %r#0, %r#1, %filled, %cache, %cnt, %chosen, %ex, %sw, %sq, %pf, %ap, %ai : tensor<2x4xf32>, i32, tensor<4x4xf32>, tensor<4x4xf32>, i64, tensor<2x4xf32>, f32, f32, index, f32, index, index
}
"""
    cases = []
    for k, flag in ((2, True), (7, False)):
        expected = [
            t,
            np.int32(0 + 1 + 2),
            rows,
            cache,
            np.int64(count),
            t if flag else a,
            a[1, 3] * 2,
            F32({1: 1.0, 2: 2.0}.get(k, -1.0)),
            np.int64(sum(i * i for i in range(4))),
            a.max(),
            np.int64(k * 3 + 4 + 1),
            np.int64(1 if 2 <= k <= 3 else 0),
        ]
        inputs = {"a": a, "cache": cache, "k": np.int64(k), "flag": np.bool_(flag)}
        cases.append(Case(f"control flow k={k}", text, inputs, expected, rtol=1e-5))
    scope = """
func.func @main(%a: tensor<2x4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %neg = arith.constant -1.0 : f32
  %sc = memref.alloca_scope -> (f32) {
    %x = tensor.extract %a[%c0, %c0] : tensor<2x4xf32>
    %y = arith.mulf %x, %neg : f32
    memref.alloca_scope.return %y : f32
  }
  func.return %sc : f32
}
"""
    # xDSL 0.75 declares no effects for memref.alloca_scope.return, so the certificate
    # refuses every alloca_scope; tp-run runs it all the same.
    refused = {"refused": "memref.alloca_scope"}
    cases.append(
        Case("memref.alloca_scope", scope, {"a": a}, [-a[0, 0]], certified=False, extra=refused)
    )
    return cases


def view_cases() -> list[Case]:
    """bufferization, memref views of a tensor, vector ops and unrealized casts."""
    a = rand(2, 4)
    s = F32(0.5)
    read = np.array([a[0, 1], a[0, 2], a[0, 3], -9.0], F32)  # past the end: the padding
    fma = read * s + read
    inserted = fma.copy()
    inserted[1] = s
    text = """
func.func @main(%a: tensor<2x4xf32>, %s: f32) -> (f32, index, index, f32, tensor<4x2xf32>, tensor<2x4xf32>, f32, tensor<3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, f32, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = bufferization.to_buffer %a : tensor<2x4xf32> to memref<2x4xf32>
  %l = memref.load %m[%c1, %c2] : memref<2x4xf32>
  %d = memref.dim %m, %c1 : memref<2x4xf32>
  %rk = "memref.rank"(%m) : (memref<2x4xf32>) -> index
  %sv = memref.subview %m[0, 1] [2, 2] [1, 2] : memref<2x4xf32> to memref<2x2xf32, strided<[4, 2], offset: 1>>
  %svl = memref.load %sv[%c1, %c1] : memref<2x2xf32, strided<[4, 2], offset: 1>>
  %flat = memref.collapse_shape %m [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  %grid = memref.expand_shape %flat [[0, 1]] output_shape [4, 2] : memref<8xf32> into memref<4x2xf32>
  %gt = bufferization.to_tensor %grid restrict : memref<4x2xf32> to tensor<4x2xf32>
  %dyn = "memref.cast"(%m) : (memref<2x4xf32>) -> memref<?x4xf32>
  %far = "memref.memory_space_cast"(%dyn) : (memref<?x4xf32>) -> memref<?x4xf32, 1 : i64>
  %al = "memref.assume_alignment"(%far) <{alignment = 64 : i32}> : (memref<?x4xf32, 1 : i64>) -> memref<?x4xf32, 1 : i64>
  %bt0 = bufferization.to_tensor %dyn restrict : memref<?x4xf32> to tensor<?x4xf32>
  %bt = tensor.cast %bt0 : tensor<?x4xf32> to tensor<2x4xf32>
  %l2 = memref.load %al[%c0, %c1] : memref<?x4xf32, 1 : i64>
  %z = bufferization.alloc_tensor() : tensor<3xf32>
  %cp = bufferization.alloc_tensor() copy(%a) : tensor<2x4xf32>
  %dest = tensor.empty() : tensor<2x4xf32>
  %mat = bufferization.materialize_in_destination %a in %dest : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %pad = arith.constant -9.0 : f32
  %v = vector.transfer_read %a[%c0, %c1], %pad : tensor<2x4xf32>, vector<4xf32>
  %b = vector.broadcast %s : f32 to vector<4xf32>
  %f = vector.fma %v, %b, %v : vector<4xf32>
  %e = vector.extract %f[2] : f32 from vector<4xf32>
  %i = vector.insert %s, %f [1] : f32 into vector<4xf32>
  %sh = vector.shuffle %v, %b [0, 5, 2, 7] : vector<4xf32>, vector<4xf32>
  %vt = builtin.unrealized_conversion_cast %f : vector<4xf32> to tensor<4xf32>
  %it = builtin.unrealized_conversion_cast %i : vector<4xf32> to tensor<4xf32>
  %st = builtin.unrealized_conversion_cast %sh : vector<4xf32> to tensor<4xf32>
  %rt = builtin.unrealized_conversion_cast %v : vector<4xf32> to tensor<4xf32>
  func.return %l, %d, %rk, %svl, %gt, %bt, %l2, %z, %cp, %mat, %vt, %it, %e, %st, %rt, %a : f32, index, index, f32, tensor<4x2xf32>, tensor<2x4xf32>, f32, tensor<3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, f32, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
}
"""
    expected = [
        a[1, 2],
        np.int64(4),
        np.int64(2),
        a[1, 3],
        a.reshape(4, 2),
        a,
        a[0, 1],
        np.zeros(3, F32),
        a,
        a,
        fma,
        inserted,
        fma[2],
        np.array([read[0], s, read[2], s], F32),
        read,
        a,
    ]
    return [Case("bufferization, memref, vector", text, {"a": a, "s": s}, expected)]


def maxloc_kernel_case() -> Case:
    """``tp.maxloc`` over three chips' given pairs: the largest value, and on a tie the
    smallest index whichever chip holds it (chip 2 holds index 1 of row 1's tie, chip 0
    index 7). Pairs that are no argmax's results: run, but refused by the certificate."""
    t = lambda c, e: f"tensor<2x{e}, #tp.chip<{c}>>"  # noqa: E731
    args = ", ".join(
        [f"%v{c}: {t(c, 'f32')}" for c in range(3)] + [f"%i{c}: {t(c, 'i64')}" for c in range(3)]
    )
    text = f"""
builtin.module attributes {{tp.chips = 3 : i64}} {{
  func.func @main({args}) -> (tensor<2xf32>, tensor<2xi64>) {{
    %v, %i = tp.maxloc %v0, %v1, %v2 indices %i0, %i1, %i2 : {t(0, "f32")}, {t(1, "f32")}, {t(2, "f32")} indices {t(0, "i64")}, {t(1, "i64")}, {t(2, "i64")} -> tensor<2xf32>, tensor<2xi64>
    func.return %v, %i : tensor<2xf32>, tensor<2xi64>
  }}
}}"""
    values = [np.array([1.0, 5.0], F32), np.array([3.0, 2.0], F32), np.array([2.0, 5.0], F32)]
    indices = [np.array([7, 7]), np.array([3, 4]), np.array([9, 1])]
    inputs = {**{f"v{c}": values[c] for c in range(3)}, **{f"i{c}": indices[c] for c in range(3)}}
    # plain numpy: per row, the largest value, then the smallest index holding it
    stacked_v, stacked_i = np.stack(values), np.stack(indices)
    best = stacked_v.max(0)
    index = np.where(stacked_v == best, stacked_i, np.iinfo(np.int64).max).min(0)
    return Case(
        "tp.maxloc kernel",
        text,
        inputs,
        [best, index],
        certified=False,
        extra={"refused": r"chip 0.s pair .*not the two results of one argmax.*\[not-argmax\]"},
    )


MAXLOC_RUNS = ((0, 3), (3, 2), (5, 2))  # uneven runs of a 7-wide axis on three chips


def maxloc_case() -> Case:
    """A greedy token by ``tp.maxloc``: logits [2, 7] cut into uneven runs of the vocab
    (`MAXLOC_RUNS`), each chip's argmax over its run (index offset by the run's start), the
    pairs' maxloc: numpy's argmax of the whole row (row 1's maximum is on chips 0 and 2:
    the first, as numpy picks)."""
    full = "tensor<2x7xf32>"
    body = """    %ninf = arith.constant 0xFF800000 : f32
    %izero = arith.constant 0 : i64
"""
    for c, (start, n) in enumerate(MAXLOC_RUNS):
        lt, vt, it = (
            f"tensor<2x{n}xf32, #tp.chip<{c}>>",
            f"tensor<2xf32, #tp.chip<{c}>>",
            f"tensor<2xi64, #tp.chip<{c}>>",
        )
        body += f"""    %l{c} = tp.shard %logits at #tp.slice<axis = 1, ranges = [({start}, {n})], full = [2, 7]> : {full} -> {lt}
    %me{c} = tensor.empty() : {vt}
    %mi{c} = linalg.fill ins(%ninf : f32) outs(%me{c} : {vt}) -> {vt}
    %ie{c} = tensor.empty() : {it}
    %ii{c} = linalg.fill ins(%izero : i64) outs(%ie{c} : {it}) -> {it}
    %v{c}, %i{c} = linalg.generic {{doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}} ins(%l{c} : {lt}) outs(%mi{c}, %ii{c} : {vt}, {it}) {{
    ^bb0(%x: f32, %m: f32, %k: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %off = arith.constant {start} : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %x, %m : f32
      %nm = arith.select %gt, %x, %m : f32
      %nk = arith.select %gt, %gg, %k : i64
      linalg.yield %nm, %nk : f32, i64
    }} -> {vt}, {it}
"""
    vts = ", ".join(f"tensor<2xf32, #tp.chip<{c}>>" for c in range(3))
    its = ", ".join(f"tensor<2xi64, #tp.chip<{c}>>" for c in range(3))
    text = f"""
builtin.module attributes {{tp.chips = 3 : i64}} {{
  func.func @main(%logits: {full}) -> (tensor<2xf32>, tensor<2xi64>) {{
{body}    %v, %i = tp.maxloc %v0, %v1, %v2 indices %i0, %i1, %i2 : {vts} indices {its} -> tensor<2xf32>, tensor<2xi64>
    func.return %v, %i : tensor<2xf32>, tensor<2xi64>
  }}
}}"""
    logits = np.array(
        [[0.5, -1.0, 2.0, 3.5, 1.0, -2.0, 3.0], [1.0, 4.0, 0.0, -3.0, 2.0, 4.0, 4.0]], F32
    )
    return Case(
        "tp.maxloc",
        text,
        {"logits": logits},
        [logits.max(1), np.argmax(logits, axis=1).astype(np.int64)],
    )


def scatter_gather_case() -> Case:
    """``tp.reduce_scatter`` and ``tp.all_gather`` over three chips, blocks of 3, 2 and 2 of
    7 rows: a row-parallel product's partials reduce-scattered, each chip's block plus its
    rows of a residual, gathered: numpy's ``x @ w + res``."""
    from test_scatter_gather import program  # the program those ops' own tests run

    x, w, res = rand(7, 9), rand(9, 5), rand(7, 5)
    return Case(
        "tp.reduce_scatter, tp.all_gather",
        program(3, 7),
        {"x": x, "w": w, "res": res},
        [x @ w + res],
        rtol=1e-5,
    )


def op_cases() -> list[Case]:
    """Every case of this module."""
    return [
        scatter_gather_case(),
        maxloc_case(),
        maxloc_kernel_case(),
        *tensor_cases(),
        *generic_cases(),
        *named_cases(),
        *control_cases(),
        *view_cases(),
    ]
