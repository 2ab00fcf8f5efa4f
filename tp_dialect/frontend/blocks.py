"""What every model family's decode step is built from: its entry function's signature, the
recorded config, and the IR pieces a transformer layer shares whatever its family.

The pieces are written once so that every family's program spells a projection, a reshape
into heads, a KV-cache write and attention the same way: a pass that learns to propagate a
split through one family's layer then knows the other's. Everything here only emits text
through an `Emitter`; what differs between families (norms, activations, the Megatron
split's ``tp`` ops) stays in the family's own module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, IntegerType, StringAttr
from xdsl.ir import Attribute

from tp_dialect.frontend.emitter import Emitter, TensorT, Value, chip_hint, float_literal
from tp_dialect.frontend.family import Family, result_attrs


class GenError(ValueError):
    """A configuration the generator refuses, with the reason."""


# -- the recorded config ---------------------------------------------------------------


def config_attr_text(fields: Mapping[str, object]) -> str:
    """``fields`` as an MLIR dictionary attribute, keys sorted (how a module records the
    config it was generated from): bools as ``true``/``false``, ints as i64, floats as f64,
    anything else as a quoted string."""
    items = []
    for key, value in sorted(fields.items()):
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = f"{value} : i64"
        elif isinstance(value, float):
            text = f"{float_literal(value)} : f64"
        else:
            text = json.dumps(value)
        items.append(f"{key} = {text}")
    return "{" + ", ".join(items) + "}"


def config_fields(attr: Attribute) -> dict[str, object]:
    """The Python values of a recorded ``tp.config`` dictionary (the inverse of
    `config_attr_text`); raises GenError when ``attr`` is not a dictionary."""
    if not isinstance(attr, DictionaryAttr):
        raise GenError("tp.config is not a dictionary attribute")
    values: dict[str, object] = {}
    for key, value in attr.data.items():
        if isinstance(value, IntegerAttr):
            data = value.value.data
            # An i1 is how the text format spells a bool: give the dataclass a bool back.
            values[key] = bool(data) if value.type == IntegerType(1) else data
        elif isinstance(value, FloatAttr):
            values[key] = value.value.data
        elif isinstance(value, StringAttr):
            values[key] = value.data
    return values


# -- the entry function --------------------------------------------------------------------


@dataclass
class DecodeFunction:
    """One ``func.func @decode`` being written: its body (the emitter's lines), its named
    arguments with the roles ``family`` gives them, and its named results."""

    family: Family
    e: Emitter = field(default_factory=Emitter)
    args: list[tuple[str, str, str]] = field(default_factory=list[tuple[str, str, str]])
    results: list[tuple[Value, str]] = field(default_factory=list[tuple[Value, str]])

    def arg(self, port_name: str, t: TensorT | str) -> Value:
        """A new entry argument named ``port_name`` (its SSA name the port name, made
        unique), in declaration order."""
        name = self.e.fresh(port_name)
        self.args.append((name, str(t), port_name))
        return Value(name, t)

    def module(self, comment: str, chips: int, config: str, before: Sequence[str] = ()) -> str:
        """The whole module: ``comment`` on top, ``tp.chips = chips``, ``tp.config =
        config``, the lines ``before`` (other functions, such as an outlined ``@layer``),
        and the function returning its results in the order they were added."""
        ret_vals = ", ".join(str(v) for v, _ in self.results)
        ret_types = ", ".join(str(v.type) for v, _ in self.results)
        args = ", ".join(f"{n}: {t} {self.family.arg_attrs(hf)}" for n, t, hf in self.args)
        res = ", ".join(f"{v.type} {result_attrs(name)}" for v, name in self.results)
        head = [
            comment,
            f"builtin.module attributes {{tp.chips = {chips} : i64, tp.config = {config}}} {{",
            *before,
            f"  func.func @decode({args}) -> ({res}) {{",
        ]
        tail = [f"    func.return {ret_vals} : {ret_types}", "  }", "}", ""]
        return "\n".join(head + self.e.lines + tail)


# -- projections and the residual -------------------------------------------------------

# A projection's contraction, by the weight's layout: nn.Linear keeps it [out, in] (Qwen3's
# checkpoints), GPT-2's Conv1D [in, out] (y = x @ W + b).
OUT_IN = "bk,ok->bo"
IN_OUT = "bk,ko->bo"


def linear(
    e: Emitter,
    hint: str,
    x: Value,
    w: Value,
    out_t: TensorT,
    spec: str,
    bias: Value | None = None,
    bias_hint: str | None = None,
) -> Value:
    """``x`` contracted with ``w`` by ``spec`` (`OUT_IN` for an ``[out, in]`` weight,
    `IN_OUT` for a Conv1D ``[in, out]`` one), named ``hint``; with ``bias``,
    that plus the bias (named ``bias_hint``) as its own elementwise generic, so a row split
    can add the bias once after its all-reduce rather than on every chip."""
    y = e.einsum(hint, spec, x, w, out_t)
    if bias is None:
        return y
    return add_bias(e, bias_hint or f"{hint}_b", y, bias)


def add_bias(e: Emitter, hint: str, y: Value, bias: Value) -> Value:
    """``y + bias``, the bias (``[n]``, any float type) broadcast over every axis of ``y``
    but its last, computed in f32 on ``y``'s chip."""
    yt, bt = y.type, bias.type
    assert isinstance(yt, TensorT) and isinstance(bt, TensorT)
    letters = "bcdefgh"[: len(yt.shape) - 1] + "o"
    ext = [] if bt.dtype == "f32" else [f"%c32 = arith.extf %c : {bt.dtype} to f32"]
    cv = "%c" if bt.dtype == "f32" else "%c32"
    return e.generic(
        hint,
        [(y, letters), (bias, "o")],
        (yt, letters),
        letters,
        "",
        [*ext, f"%r = arith.addf %y, {cv} : f32", "linalg.yield %r : f32"],
        ["y", "c", "o"],
    )


def residual(e: Emitter, hint: str, x: Value, y: Value) -> Value:
    """``x + y`` as one ``arith.addf`` on whole tensors (the residual stream's add)."""
    return e.bind(hint, x.type, f"arith.addf {x}, {y} : {x.type}")


# -- reshapes --------------------------------------------------------------------------


def split_cols(
    e: Emitter, tag: str, x: Value, widths: Sequence[int], names: Sequence[str] | None = None
) -> list[Value]:
    """Consecutive column blocks of a [b, n] tensor (a fused projection's parts), named
    ``{tag}_{names[j]}`` (default ``{tag}_part{j}``)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    out, start = [], 0
    for j, wdt in enumerate(widths):
        t = xt.reshaped((xt.shape[0], wdt))
        part = f"part{j}" if names is None else names[j]
        out.append(
            e.bind(
                f"{tag}_{part}",
                t,
                f"tensor.extract_slice {x}[0, {start}] [{xt.shape[0]}, {wdt}] [1, 1] : {xt} to {t}",
            )
        )
        start += wdt
    return out


def expand(e: Emitter, hint: str, x: Value, shape: tuple[int, int, int, int]) -> Value:
    """A [b, k*g*d] projection viewed as [b, k, g, d] (heads; ``tensor.expand_shape``)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    t = xt.reshaped(shape)
    dims = ", ".join(map(str, shape))
    return e.bind(
        hint,
        t,
        f"tensor.expand_shape {x} [[0], [1, 2, 3]] output_shape [{dims}] : {xt} into {t}",
    )


def collapse_heads(e: Emitter, hint: str, x: Value) -> Value:
    """A [b, k, g, d] tensor (attention's output per head) viewed as [b, k*g*d]."""
    xt = x.type
    assert isinstance(xt, TensorT)
    b, k, g, d = xt.shape
    t = xt.reshaped((b, k * g * d))
    return e.bind(hint, t, f"tensor.collapse_shape {x} [[0], [1, 2, 3]] : {xt} into {t}")


# -- the KV cache and attention -----------------------------------------------------------


def cache_write(e: Emitter, hint: str, kv: Value, cache: Value, idx: Value) -> Value:
    """The cache with position ``idx`` overwritten by this step's key or value."""
    kt, ct = kv.type, cache.type
    assert isinstance(kt, TensorT) and isinstance(ct, TensorT)
    b, k, _, d = kt.shape
    return e.bind(
        hint,
        ct,
        f"tensor.insert_slice {kv} into {cache}[0, 0, {idx}, 0] [{b}, {k}, 1, {d}] "
        f"[1, 1, 1, 1] : {kt} into {ct}",
    )


def attention(e: Emitter, tag: str, q: Value, keys: Value, values: Value, idx: Value) -> Value:
    """softmax(q·Kᵀ/√d, positions 0..idx) · V for q [b,k,g,d] over caches [b,k,m,d]: the
    scores masked by a ``linalg.index`` compare, a max-shifted softmax, and the weighted sum
    of values, each a ``linalg.generic`` on q's chip."""
    qt, kt = q.type, keys.type
    assert isinstance(qt, TensorT) and isinstance(kt, TensorT)
    b, k, g, d = qt.shape
    m = kt.shape[2]
    st = TensorT((b, k, g, m), "f32", qt.chip)
    scores = e.einsum(f"{tag}_scores", "bkgd,bkmd->bkgm", q, keys, st)
    scale = e.scalar("inv_sqrt_head_dim", 1.0 / math.sqrt(d))
    neg_inf = e.scalar("neg_inf", float("-inf"))
    masked = e.generic(
        f"{tag}_masked",
        [(scores, "bkgm")],
        (st, "bkgm"),
        "bkgm",
        "",
        [
            "%m = linalg.index 3 : index",
            f"%keep = arith.cmpi sle, %m, {idx} : index",
            f"%sc = arith.mulf %s, {scale} : f32",
            f"%r = arith.select %keep, %sc, {neg_inf} : f32",
            "linalg.yield %r : f32",
        ],
        ["s", "o"],
        doc="softmax",
    )
    rt = TensorT((b, k, g), "f32", qt.chip)
    neg_infs = e.filled(chip_hint("neg_infs", qt.chip), rt, neg_inf)
    mx = reduce_positions(e, f"{tag}_max", masked, neg_infs, "maximumf")
    ex = e.generic(
        f"{tag}_exp",
        [(masked, "bkgm"), (mx, "bkg")],
        (st, "bkgm"),
        "bkgm",
        "",
        ["%z = arith.subf %s, %mx : f32", "%r = math.exp %z : f32", "linalg.yield %r : f32"],
        ["s", "mx", "o"],
        doc="softmax",
    )
    zeros = e.filled(chip_hint("zeros", qt.chip), rt, e.scalar("zero", 0.0))
    total = reduce_positions(e, f"{tag}_sum", ex, zeros, "addf")
    probs = e.generic(
        f"{tag}_probs",
        [(ex, "bkgm"), (total, "bkg")],
        (st, "bkgm"),
        "bkgm",
        "",
        ["%r = arith.divf %x, %t : f32", "linalg.yield %r : f32"],
        ["x", "t", "o"],
        doc="softmax",
    )
    return e.einsum(f"{tag}_attn", "bkgm,bkmd->bkgd", probs, values, qt)


def reduce_positions(e: Emitter, hint: str, x: Value, init: Value, combine: str) -> Value:
    """``init ⊕ x`` reduced over the positions axis m of [b, k, g, m] (softmax's max/sum)."""
    return e.generic(
        hint,
        [(x, "bkgm")],
        (init, "bkg"),
        "bkgm",
        "m",
        [f"%r = arith.{combine} %acc, %s : f32", "linalg.yield %r : f32"],
        ["s", "acc"],
        doc="softmax",
    )
