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

from tp_dialect.errors import TpError
from tp_dialect.frontend.emitter import Emitter, TensorT, Value, chip_hint, float_literal
from tp_dialect.frontend.family import Family, result_attrs
from tp_dialect.grid import CHIPS_ATTR
from tp_dialect.op_tags import OpTag


class GenError(ValueError, TpError):
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
    """One entry function (``func.func @decode``, or ``@prefill`` for a whole model's prompt
    step) being written: its body (the emitter's lines), its named arguments with the roles
    ``family`` gives them, and its named results."""

    family: Family
    entry: str = "decode"
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
            f"builtin.module attributes {{{CHIPS_ATTR} = {chips} : i64, tp.config = {config}}} {{",
            *before,
            f"  func.func @{self.entry}({args}) -> ({res}) {{",
        ]
        tail = [f"    func.return {ret_vals} : {ret_types}", "  }", "}", ""]
        return "\n".join(head + self.e.lines + tail)


# -- projections and the residual -------------------------------------------------------

# A projection's contraction, by the weight's layout: nn.Linear keeps it [out, in] (Qwen3's
# checkpoints), GPT-2's Conv1D [in, out] (y = x @ W + b).
OUT_IN = "bk,ok->bo"
IN_OUT = "bk,ko->bo"


def token_spec(spec: str, rank: int) -> str:
    """A projection's ``spec`` (written for ``[b, in]`` rows) for an input of ``rank``: rank 3
    (``[b, s, in]``, a whole model's tokens) reads and writes the token axis ``s`` too."""
    if rank == 2:
        return spec
    (x, w), out = spec.split("->")[0].split(","), spec.split("->")[1]
    return f"{x[0]}s{x[1:]},{w}->{out[0]}s{out[1:]}"


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
    can add the bias once after its all-reduce rather than on every chip. ``x`` is
    ``[b, in]`` or ``[b, s, in]`` (`token_spec`)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    y = e.einsum(hint, token_spec(spec, len(xt.shape)), x, w, out_t)
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


def _slice_text(x: Value, t: TensorT, offsets: Sequence[object], sizes: Sequence[int]) -> str:
    """``tensor.extract_slice`` of ``x`` at ``offsets`` (static or SSA) into type ``t``."""
    xt = x.type
    ones = ", ".join("1" for _ in sizes)
    return (
        f"tensor.extract_slice {x}[{', '.join(map(str, offsets))}] "
        f"[{', '.join(map(str, sizes))}] [{ones}] : {xt} to {t}"
    )


def split_cols(
    e: Emitter, tag: str, x: Value, widths: Sequence[int], names: Sequence[str] | None = None
) -> list[Value]:
    """Consecutive blocks of the last axis of ``x`` (a fused projection's parts, ``[b, n]``
    or ``[b, s, n]``), named ``{tag}_{names[j]}`` (default ``{tag}_part{j}``)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    rows = list(xt.shape[:-1])
    out, start = [], 0
    for j, wdt in enumerate(widths):
        t = xt.reshaped((*rows, wdt))
        part = f"part{j}" if names is None else names[j]
        offsets = [0] * len(rows) + [start]
        out.append(e.bind(f"{tag}_{part}", t, _slice_text(x, t, offsets, [*rows, wdt])))
        start += wdt
    return out


def _groups(rank: int, last: int) -> str:
    """The reassociation ``[[0], ..., [rank-1 .. rank-1+last)]``: every leading axis kept,
    the last split into (or merged from) ``last`` axes."""
    lead = [f"[{i}]" for i in range(rank - 1)]
    tail = "[" + ", ".join(str(rank - 1 + j) for j in range(last)) + "]"
    return "[" + ", ".join([*lead, tail]) + "]"


def expand(e: Emitter, hint: str, x: Value, shape: tuple[int, ...]) -> Value:
    """A projection ``[b, n]`` (or ``[b, s, n]``) viewed into heads: its last axis split
    into the trailing axes of ``shape`` (``[b, k, g, d]``, ``[b, s, k, g, d]``; a cut stays at
    head boundaries), by ``tensor.expand_shape``."""
    xt = x.type
    assert isinstance(xt, TensorT)
    t = xt.reshaped(shape)
    dims = ", ".join(map(str, shape))
    groups = _groups(len(xt.shape), len(shape) - len(xt.shape) + 1)
    return e.bind(
        hint, t, f"tensor.expand_shape {x} {groups} output_shape [{dims}] : {xt} into {t}"
    )


def collapse_heads(e: Emitter, hint: str, x: Value) -> Value:
    """Attention's output per head (``[b, k, g, d]``, or ``[b, s, k, g, d]``) viewed as one
    row of features per token (``[b, k*g*d]``, ``[b, s, k*g*d]``)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    lead = xt.shape[: len(xt.shape) - 3]
    k, g, d = xt.shape[-3:]
    t = xt.reshaped((*lead, k * g * d))
    groups = _groups(len(lead) + 1, 3)
    return e.bind(hint, t, f"tensor.collapse_shape {x} {groups} : {xt} into {t}")


def heads_first(e: Emitter, hint: str, x: Value) -> Value:
    """A whole model's keys or values ``[b, s, k, d]`` laid out as the cache holds them,
    ``[b, k, s, d]`` (a copy through one parallel ``linalg.generic``)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    b, s, k, d = xt.shape
    return e.generic(
        hint,
        [(x, "bskd")],
        (xt.reshaped((b, k, s, d)), "bksd"),
        "bksd",
        "",
        [f"linalg.yield %x : {xt.dtype}"],
        ["x", "o"],
    )


def last_row(e: Emitter, hint: str, x: Value) -> Value:
    """The last token's row ``[b, h]`` of ``[b, s, h]`` (``tensor.extract_slice`` of row
    ``s - 1``, the token axis dropped)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    b, s, h = xt.shape
    t = xt.reshaped((b, h))
    return e.bind(hint, t, _slice_text(x, t, [0, s - 1, 0], [b, 1, h]))


# -- the KV cache and attention -----------------------------------------------------------


def cache_write(e: Emitter, hint: str, kv: Value, cache: Value, idx: Value) -> Value:
    """The cache ``[b, k, P, d]`` with rows ``idx ..`` overwritten by this step's keys or
    values ``[b, k, rows, d]`` (one row a decode step; a prompt's ``S``)."""
    kt, ct = kv.type, cache.type
    assert isinstance(kt, TensorT) and isinstance(ct, TensorT)
    b, k, rows, d = kt.shape
    return e.bind(
        hint,
        ct,
        f"tensor.insert_slice {kv} into {cache}[0, 0, {idx}, 0] [{b}, {k}, {rows}, {d}] "
        f"[1, 1, 1, 1] : {kt} into {ct}",
    )


def attention(
    e: Emitter,
    tag: str,
    q: Value,
    keys: Value,
    values: Value,
    idx: Value,
    window: int | None = None,
) -> Value:
    """softmax(q·Kᵀ/√d) · V over the caches ``[b, k, m, d]``, causal: the query at position
    ``p`` sees keys ``j <= p`` (and ``j > p - window`` with a sliding ``window``), each a
    ``linalg.generic`` on q's chip: the scores masked by a ``linalg.index`` compare, a
    max-shifted softmax, and the weighted sum of values.

    ``q`` is a decode step's ``[b, k, g, d]`` (one query, at position ``idx``) or a whole
    model's ``[b, s, k, g, d]`` (query ``s`` at position ``idx + s``); the result has
    ``q``'s shape."""
    qt, kt = q.type, keys.type
    assert isinstance(qt, TensorT) and isinstance(kt, TensorT)
    m = kt.shape[2]
    tokens = len(qt.shape) == 5
    d = qt.shape[-1]
    if tokens:
        b, s, k, g, _ = qt.shape
        q_l, sc_l, row_l, st = "bskgd", "bkgsm", "bkgs", TensorT((b, k, g, s, m), "f32", qt.chip)
        rt = TensorT((b, k, g, s), "f32", qt.chip)
        # the query's position: idx + s (linalg.index 3 of the scores' loops)
        where = ["%q = linalg.index 3 : index", f"%p = arith.addi %q, {idx} : index"]
        at = "%p"
    else:
        b, k, g, _ = qt.shape
        q_l, sc_l, row_l, st = "bkgd", "bkgm", "bkg", TensorT((b, k, g, m), "f32", qt.chip)
        rt = TensorT((b, k, g), "f32", qt.chip)
        where, at = [], str(idx)
    scores = e.einsum(f"{tag}_scores", f"{q_l},bkmd->{sc_l}", q, keys, st)
    scale = e.scalar("inv_sqrt_head_dim", 1.0 / math.sqrt(d))
    neg_inf = e.scalar("neg_inf", float("-inf"))
    mask = [*where, f"%m = linalg.index {len(sc_l) - 1} : index"]
    mask.append(f"%keep = arith.cmpi sle, %m, {at} : index")
    if window is not None:
        # Mistral's sliding window: also keys j > p - window (transformers' mask).
        w = e.scalar("window", window, "index")
        mask += [
            f"%lo = arith.subi {at}, {w} : index",
            "%near = arith.cmpi sgt, %m, %lo : index",
            "%seen = arith.andi %keep, %near : i1",
        ]
    keep = "%seen" if window is not None else "%keep"
    masked = e.generic(
        f"{tag}_masked",
        [(scores, sc_l)],
        (st, sc_l),
        sc_l,
        "",
        [
            *mask,
            f"%sc = arith.mulf %s, {scale} : f32",
            f"%r = arith.select {keep}, %sc, {neg_inf} : f32",
            "linalg.yield %r : f32",
        ],
        ["s", "o"],
        doc=OpTag.SOFTMAX,
    )
    neg_infs = e.filled(chip_hint("neg_infs", qt.chip), rt, neg_inf)
    mx = reduce_positions(e, f"{tag}_max", masked, neg_infs, "maximumf", sc_l)
    ex = e.generic(
        f"{tag}_exp",
        [(masked, sc_l), (mx, row_l)],
        (st, sc_l),
        sc_l,
        "",
        ["%z = arith.subf %s, %mx : f32", "%r = math.exp %z : f32", "linalg.yield %r : f32"],
        ["s", "mx", "o"],
        doc=OpTag.SOFTMAX,
    )
    zeros = e.filled(chip_hint("zeros", qt.chip), rt, e.scalar("zero", 0.0))
    total = reduce_positions(e, f"{tag}_sum", ex, zeros, "addf", sc_l)
    probs = e.generic(
        f"{tag}_probs",
        [(ex, sc_l), (total, row_l)],
        (st, sc_l),
        sc_l,
        "",
        ["%r = arith.divf %x, %t : f32", "linalg.yield %r : f32"],
        ["x", "t", "o"],
        doc=OpTag.SOFTMAX,
    )
    return e.einsum(f"{tag}_attn", f"{sc_l},bkmd->{q_l}", probs, values, qt)


def reduce_positions(
    e: Emitter, hint: str, x: Value, init: Value, combine: str, letters: str = "bkgm"
) -> Value:
    """``init ⊕ x`` reduced over the positions axis m, the last of ``letters`` (softmax's
    max/sum over scores ``[b, k, g, m]`` or ``[b, k, g, s, m]``)."""
    return e.generic(
        hint,
        [(x, letters)],
        (init, letters[:-1]),
        letters,
        "m",
        [f"%r = arith.{combine} %acc, %s : f32", "linalg.yield %r : f32"],
        ["s", "acc"],
        doc=OpTag.SOFTMAX,
    )
