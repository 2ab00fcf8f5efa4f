"""The elementwise and per-row pieces of a decoder layer, written once for every family and
both program kinds (a decode stack's ``[b, h]`` rows, a whole model's ``[b, s, h]`` tokens):
RMSNorm and LayerNorm over the last axis, rotate-half RoPE and its tables, SiLU-gated and
tanh-GELU activations. Each is one or a few ``linalg.generic`` computed in f32 on its input's
chip, a weight of another float type widened by ``arith.extf`` where it is read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tp_dialect.frontend.emitter import Emitter, TensorT, Value, chip_hint
from tp_dialect.op_tags import OpTag

_LETTERS = "bcdefgh"


def _widened(name: str, value: Value) -> tuple[list[str], str]:
    """The body lines widening block argument ``%name`` to f32 (none when ``value`` is f32)
    and the SSA name the body then reads."""
    vt = value.type
    assert isinstance(vt, TensorT)
    if vt.dtype == "f32":
        return [], f"%{name}"
    return [f"%{name}32 = arith.extf %{name} : {vt.dtype} to f32"], f"%{name}32"


def rms_norm(e: Emitter, hint: str, x: Value, w: Value, eps: float) -> Value:
    """``x / sqrt(mean(x², last axis) + eps) * w`` over a tensor of any rank."""
    xt = x.type
    assert isinstance(xt, TensorT)
    letters = _LETTERS[: len(xt.shape) - 1] + "z"
    rows = letters[:-1]
    rows_t = TensorT(xt.shape[:-1], "f32", xt.chip)
    acc = e.filled(chip_hint("zeros", xt.chip), rows_t, e.scalar("zero", 0.0))
    ss = e.generic(
        f"{hint}_ss",
        [(x, letters)],
        (acc, rows),
        letters,
        "z",
        [
            "%sq = arith.mulf %x, %x : f32",
            "%s = arith.addf %acc, %sq : f32",
            "linalg.yield %s : f32",
        ],
        ["x", "acc"],
        doc=OpTag.RMS_NORM,
    )
    n = e.scalar(f"n{xt.shape[-1]}", float(xt.shape[-1]))
    eps_v = e.scalar("eps", eps)
    ext, wv = _widened("w", w)
    return e.generic(
        hint,
        [(x, letters), (ss, rows), (w, "z")],
        (xt, letters),
        letters,
        "",
        ext
        + [
            f"%ms = arith.divf %ss, {n} : f32",
            f"%v = arith.addf %ms, {eps_v} : f32",
            "%r = math.rsqrt %v : f32",
            "%y = arith.mulf %x, %r : f32",
            f"%res = arith.mulf %y, {wv} : f32",
            "linalg.yield %res : f32",
        ],
        ["x", "ss", "w", "o"],
        doc=OpTag.RMS_NORM,
    )


def layer_norm(e: Emitter, hint: str, x: Value, w: Value, bias: Value, eps: float) -> Value:
    """``(x - mean) / sqrt(var + eps) * w + bias`` over the last axis of ``x`` (biased
    variance, as torch's LayerNorm), computed in f32: a sum, the centred values, their sum
    of squares, then one map. Centring before squaring keeps the variance exact for rows
    with a large mean, where E[x²] - E[x]² would cancel."""
    xt = x.type
    assert isinstance(xt, TensorT)
    letters = _LETTERS[: len(xt.shape) - 1] + "z"
    rows = letters[:-1]
    rows_t = TensorT(xt.shape[:-1], "f32", xt.chip)
    acc = e.filled(chip_hint("zeros", xt.chip), rows_t, e.scalar("zero", 0.0))
    n = e.scalar(f"n{xt.shape[-1]}", float(xt.shape[-1]))
    total = e.generic(
        f"{hint}_sum",
        [(x, letters)],
        (acc, rows),
        letters,
        "z",
        ["%s = arith.addf %acc, %x : f32", "linalg.yield %s : f32"],
        ["x", "acc"],
        doc=OpTag.LAYER_NORM,
    )
    centred = e.generic(
        f"{hint}_centred",
        [(x, letters), (total, rows)],
        (xt, letters),
        letters,
        "",
        [
            f"%mean = arith.divf %s, {n} : f32",
            "%c = arith.subf %x, %mean : f32",
            "linalg.yield %c : f32",
        ],
        ["x", "s", "o"],
        doc=OpTag.LAYER_NORM,
    )
    ss = e.generic(
        f"{hint}_ss",
        [(centred, letters)],
        (acc, rows),
        letters,
        "z",
        [
            "%sq = arith.mulf %c, %c : f32",
            "%s = arith.addf %acc, %sq : f32",
            "linalg.yield %s : f32",
        ],
        ["c", "acc"],
        doc=OpTag.LAYER_NORM,
    )
    eps_v = e.scalar("ln_eps", eps)
    ext_w, wv = _widened("w", w)
    ext_b, bv = _widened("bias", bias)
    return e.generic(
        hint,
        [(centred, letters), (ss, rows), (w, "z"), (bias, "z")],
        (xt, letters),
        letters,
        "",
        [
            *ext_w,
            *ext_b,
            f"%var = arith.divf %ss, {n} : f32",
            f"%v = arith.addf %var, {eps_v} : f32",
            "%r = math.rsqrt %v : f32",
            "%y = arith.mulf %c, %r : f32",
            f"%yw = arith.mulf %y, {wv} : f32",
            f"%res = arith.addf %yw, {bv} : f32",
            "linalg.yield %res : f32",
        ],
        ["c", "ss", "w", "bias", "o"],
        doc=OpTag.LAYER_NORM,
    )


def gelu_tanh(e: Emitter, hint: str, x: Value) -> Value:
    """GELU's tanh approximation, GPT-2's ``gelu_new``:
    ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``, elementwise on ``x``'s chip."""
    xt = x.type
    assert isinstance(xt, TensorT)
    letters = _LETTERS[: len(xt.shape)]
    half = e.scalar("half", 0.5)
    one = e.scalar("one", 1.0)
    cubic = e.scalar("gelu_cubic", 0.044715)
    root = e.scalar("sqrt_2_over_pi", math.sqrt(2.0 / math.pi))
    return e.generic(
        hint,
        [(x, letters)],
        (xt, letters),
        letters,
        "",
        [
            "%x2 = arith.mulf %x, %x : f32",
            "%x3 = arith.mulf %x2, %x : f32",
            f"%cx3 = arith.mulf %x3, {cubic} : f32",
            "%inner = arith.addf %x, %cx3 : f32",
            f"%arg = arith.mulf %inner, {root} : f32",
            "%t = math.tanh %arg : f32",
            f"%onet = arith.addf %t, {one} : f32",
            f"%hx = arith.mulf %x, {half} : f32",
            "%y = arith.mulf %hx, %onet : f32",
            "linalg.yield %y : f32",
        ],
        ["x", "o"],
        doc=OpTag.GELU,
    )


def silu_mul(e: Emitter, hint: str, g: Value, u: Value) -> Value:
    """``silu(g) · u`` (a gated MLP's activation: ``g / (1 + exp(-g)) · u``), elementwise
    over ``[b, n]`` or ``[b, s, n]``."""
    gt = g.type
    assert isinstance(gt, TensorT)
    letters = "bsj" if len(gt.shape) == 3 else "bj"
    one = e.scalar("one", 1.0)
    return e.generic(
        hint,
        [(g, letters), (u, letters)],
        (gt, letters),
        letters,
        "",
        [
            "%ng = arith.negf %g : f32",
            "%ex = math.exp %ng : f32",
            f"%den = arith.addf {one}, %ex : f32",
            "%silu = arith.divf %g, %den : f32",
            "%y = arith.mulf %silu, %u : f32",
            "linalg.yield %y : f32",
        ],
        ["g", "u", "o"],
        doc=OpTag.SILU,
    )


# -- RoPE ----------------------------------------------------------------------------------


def inv_freq(head_dim: int, theta: float, scaling: RopeScaling | None = None) -> list[float]:
    """RoPE's inverse frequencies ``1 / theta^(2j/d)``, ``j < d/2``, with ``scaling`` folded
    in (transformers' ``linear`` and ``llama3`` rules; none when ``scaling`` is None)."""
    freqs = [1.0 / (theta ** (2 * j / head_dim)) for j in range(head_dim // 2)]
    return freqs if scaling is None else scaling.apply(freqs)


class RopeScaling:
    """A ``rope_scaling`` rule transformers folds into the inverse frequencies (its
    attention factor is 1 for both): ``linear`` divides every frequency by ``factor``;
    ``llama3`` divides the low frequencies (wavelength above ``original / low``), keeps the
    high ones (below ``original / high``) and interpolates between."""

    def __init__(
        self,
        kind: str,
        factor: float,
        low_freq_factor: float = 1.0,
        high_freq_factor: float = 4.0,
        original_max_positions: int = 8192,
    ) -> None:
        self.kind = kind
        self.factor = factor
        self.low = low_freq_factor
        self.high = high_freq_factor
        self.original = original_max_positions

    def apply(self, freqs: Sequence[float]) -> list[float]:
        """``freqs`` scaled by this rule."""
        if self.kind == "linear":
            return [f / self.factor for f in freqs]
        low_wavelen = self.original / self.low
        high_wavelen = self.original / self.high
        out = []
        for f in freqs:
            wavelen = 2 * math.pi / f
            scaled = f / self.factor if wavelen > low_wavelen else f
            if not (wavelen < high_wavelen or wavelen > low_wavelen):
                smooth = (self.original / wavelen - self.low) / (self.high - self.low)
                scaled = (1 - smooth) * scaled / self.factor + smooth * scaled
            out.append(scaled)
        return out


def rope_tables(
    e: Emitter, pos: Value, freqs: Sequence[float], tokens: int | None = None
) -> tuple[Value, Value]:
    """cos and sin of ``position · inv_freq``: ``[d/2]`` for a decode step's one position
    (``tokens`` None), ``[S, d/2]`` for a whole model's positions ``pos .. pos + S - 1``;
    spine, once per step."""
    half = len(freqs)
    inv = e.dense("inv_freq", list(freqs), TensorT((half,)))
    if tokens is None:
        t, order, at = TensorT((half,)), "j", []
        posf = e.bind("pos_f32", "f32", f"arith.sitofp {pos} : i64 to f32")
        angle = posf.name
    else:
        t, order = TensorT((tokens, half)), "sj"
        at = [
            "%s = linalg.index 0 : index",
            "%si = arith.index_cast %s : index to i64",
            f"%p = arith.addi {pos}, %si : i64",
            "%pf = arith.sitofp %p : i64 to f32",
        ]
        angle = "%pf"
    tables = []
    for fn in ("cos", "sin"):
        tables.append(
            e.generic(
                f"rope_{fn}",
                [(inv, "j")],
                (t, order),
                order,
                "",
                [
                    *at,
                    f"%f = arith.mulf %inv, {angle} : f32",
                    f"%r = math.{fn} %f : f32",
                    "linalg.yield %r : f32",
                ],
                ["inv", "o"],
                doc=OpTag.ROPE,
            )
        )
    return tables[0], tables[1]


def rope(e: Emitter, hint: str, x: Value, cos: Value, sin: Value) -> Value:
    """Rotate-half RoPE over the last axis of ``x``: a decode step's ``[b, k, g, d]`` with
    tables ``[d/2]``, or a whole model's ``[b, s, ..., d]`` (axis 1 the token) with tables
    ``[s, d/2]``."""
    xt, ct = x.type, cos.type
    assert isinstance(xt, TensorT) and isinstance(ct, TensorT)
    rank, d = len(xt.shape), xt.shape[-1]
    letters = ("bskg" if len(ct.shape) == 2 else "bkgh")[: rank - 1] + "j"
    table = "sj" if len(ct.shape) == 2 else "j"
    half_t = xt.reshaped((*xt.shape[:-1], d // 2))
    lead = list(xt.shape[:-1])
    halves = [
        e.bind(
            f"{hint}_x{i + 1}",
            half_t,
            f"tensor.extract_slice {x}[{', '.join(['0'] * len(lead))}, {i * d // 2}] "
            f"[{', '.join(map(str, lead))}, {d // 2}] [{', '.join(['1'] * rank)}] "
            f": {xt} to {half_t}",
        )
        for i in range(2)
    ]
    outs = []
    for i, (first, second, op) in enumerate(((0, 1, "subf"), (1, 0, "addf"))):
        outs.append(
            e.generic(
                f"{hint}_r{i + 1}",
                [(halves[first], letters), (halves[second], letters), (cos, table), (sin, table)],
                (half_t, letters),
                letters,
                "",
                [
                    "%p = arith.mulf %x, %c : f32",
                    "%q = arith.mulf %y, %s : f32",
                    f"%r = arith.{op} %p, %q : f32",
                    "linalg.yield %r : f32",
                ],
                ["x", "y", "c", "s", "o"],
                doc=OpTag.ROPE,
            )
        )
    return e.bind(
        hint,
        xt,
        f"tensor.concat dim({rank - 1}) {outs[0]}, {outs[1]} : ({half_t}, {half_t}) -> {xt}",
    )
