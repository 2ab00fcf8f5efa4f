"""Qwen3 decode as IR: the unsharded layer stack, or its Megatron split over N chips.

`generate(config)` writes one decode step over ``config.layers`` layers in func, linalg,
tensor, arith and math plus tp. In the tensor-parallel form chip c owns KV heads
``[c*kv/N, (c+1)*kv/N)`` with the query heads that use them and columns
``[c*I/N, (c+1)*I/N)`` of gate/up; o_proj and down_proj are split by row, summed by two
``tp.allreduce`` a layer; norms and residuals are the replicated spine. Every chip's slice
is its own value, cut from the full checkpoint tensor by ``tp.shard``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import Attribute

from tp_dialect.frontend.emitter import (
    Emitter,
    TensorT,
    Value,
    chip_hint,
    float_literal,
    slice_text,
)
from tp_dialect.frontend.family import Family, result_attrs

PRESETS: dict[str, dict[str, int | float]] = {
    # Small enough for property tests; GQA (2 query heads per KV head) and 8 KV heads,
    # so N = 1, 2, 4, 8 all split it.
    "tiny": dict(
        hidden=64,
        heads=16,
        kv_heads=8,
        head_dim=8,
        intermediate=128,
        max_positions=16,
    ),
    "qwen3-8b": dict(
        hidden=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate=12288,
        max_positions=2048,
    ),
}


# The runtime knows no model: the program states each argument's role, decided here.
QWEN3 = Family(
    name="qwen3",
    inputs=("hidden_states", "position"),
    caches=("past_key.", "past_value."),
    cache_axis=2,  # [batch, kv_heads, positions, head_dim]
)


class GenError(ValueError):
    """A configuration the generator refuses, with the reason."""


@dataclass(frozen=True)
class Qwen3Config:
    """What one generated decode step is: model dims, split and layout."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    layers: int = 1
    chips: int = 1
    batch: int = 1
    max_positions: int = 16
    eps: float = 1e-6
    theta: float = 1_000_000.0
    dtype: str = "f32"  # weights' element type: f32 or bf16 (activations are f32)
    sharded: bool = True
    fold: bool = False  # spell each all-reduce as the seed's left fold of adds
    fused_qkv: bool = False  # one qkv_proj checkpoint tensor; each chip's slice 3 ranges
    fused_gate_up: bool = False  # one gate_up_proj tensor; each chip's slice 2 ranges

    @classmethod
    def preset(cls, name: str, **overrides: int | float | str | bool) -> Qwen3Config:
        if name not in PRESETS:
            raise GenError(f"unknown preset '{name}' (known: {', '.join(PRESETS)})")
        return cls(**{**PRESETS[name], **overrides})  # type: ignore[arg-type]

    def check(self) -> None:
        """Refuse, naming the reason, what cannot be generated or split."""
        for name in (
            "hidden",
            "heads",
            "kv_heads",
            "head_dim",
            "intermediate",
            "layers",
            "chips",
            "batch",
            "max_positions",
        ):
            if getattr(self, name) <= 0:
                raise GenError(f"{name} must be positive, got {getattr(self, name)}")
        if self.heads % self.kv_heads:
            raise GenError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.head_dim % 2:
            raise GenError(f"head_dim ({self.head_dim}) must be even for RoPE")
        if self.dtype not in ("f32", "bf16"):
            raise GenError(f"dtype must be f32 or bf16, got {self.dtype}")
        if self.sharded:
            if self.kv_heads % self.chips:
                raise GenError(
                    f"{self.chips} chips do not divide the {self.kv_heads} KV heads: "
                    "each chip must own whole KV heads"
                )
            if self.intermediate % self.chips:
                raise GenError(
                    f"{self.chips} chips do not divide the intermediate size "
                    f"{self.intermediate}: each chip owns whole gate/up columns"
                )

    def unsharded(self) -> Qwen3Config:
        return replace(self, sharded=False, chips=1, fold=False)

    def attr_text(self) -> str:
        """The config as an MLIR dictionary attribute (how a module records its origin)."""
        items = []
        for key, value in sorted(asdict(self).items()):
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

    @classmethod
    def from_attr(cls, attr: Attribute) -> Qwen3Config:
        """The config a generated module recorded in its ``tp.config`` attribute."""
        if not isinstance(attr, DictionaryAttr):
            raise GenError("tp.config is not a dictionary attribute")
        values: dict[str, object] = {}
        for key, value in attr.data.items():
            if isinstance(value, IntegerAttr):
                data = value.value.data
                values[key] = bool(data) if value.type == IntegerType(1) else data
            elif isinstance(value, FloatAttr):
                values[key] = value.value.data
            elif isinstance(value, StringAttr):
                values[key] = value.data
        try:
            return cls(**values)  # type: ignore[arg-type]
        except TypeError as err:
            raise GenError(f"tp.config does not describe a Qwen3 decode step: {err}") from None


def weight_names(cfg: Qwen3Config, layer: int) -> dict[str, tuple[int, ...]]:
    """Hugging Face checkpoint names and [out, in] shapes of one layer's weights."""
    p = f"model.layers.{layer}."
    h, d, q, kv, i = cfg.hidden, cfg.head_dim, cfg.heads, cfg.kv_heads, cfg.intermediate
    names: dict[str, tuple[int, ...]] = {p + "input_layernorm.weight": (h,)}
    if cfg.fused_qkv:
        names[p + "self_attn.qkv_proj.weight"] = ((q + 2 * kv) * d, h)
    else:
        names[p + "self_attn.q_proj.weight"] = (q * d, h)
        names[p + "self_attn.k_proj.weight"] = (kv * d, h)
        names[p + "self_attn.v_proj.weight"] = (kv * d, h)
    names[p + "self_attn.o_proj.weight"] = (h, q * d)
    names[p + "self_attn.q_norm.weight"] = (d,)
    names[p + "self_attn.k_norm.weight"] = (d,)
    names[p + "post_attention_layernorm.weight"] = (h,)
    if cfg.fused_gate_up:
        names[p + "mlp.gate_up_proj.weight"] = (2 * i, h)
    else:
        names[p + "mlp.gate_proj.weight"] = (i, h)
        names[p + "mlp.up_proj.weight"] = (i, h)
    names[p + "mlp.down_proj.weight"] = (h, i)
    return names


def generate(cfg: Qwen3Config) -> str:
    """The decode step of ``cfg`` as MLIR text: a module holding one ``func.func @decode``."""
    cfg.check()
    return _Writer(cfg).module()


class _Writer:
    def __init__(self, cfg: Qwen3Config) -> None:
        self.cfg = cfg
        self.e = Emitter()
        self.args: list[tuple[str, str, str]] = []  # (ssa name, type, checkpoint name)
        self.results: list[tuple[Value, str]] = []
        self.chips: list[int | None] = list(range(cfg.chips)) if cfg.sharded else [None]

    # -- module ------------------------------------------------------------------------

    def module(self) -> str:
        cfg, e = self.cfg, self.e
        x = self.arg("hidden_states", TensorT((cfg.batch, cfg.hidden)))
        pos = self.arg("position", "i64")
        rope = self.rope_tables(pos)
        for layer in range(cfg.layers):
            e.comment(f"---- layer {layer} ----")
            x = self.layer(layer, x, pos, rope)
        self.results.insert(0, (x, "hidden_states"))
        ret_vals = ", ".join(str(v) for v, _ in self.results)
        ret_types = ", ".join(str(v.type) for v, _ in self.results)
        args = ", ".join(f"{n}: {t} {QWEN3.arg_attrs(hf)}" for n, t, hf in self.args)
        res = ", ".join(f"{v.type} {result_attrs(name)}" for v, name in self.results)
        mode = f"{cfg.chips} chips" if cfg.sharded else "unsharded"
        head = [
            f"// Qwen3 decode step: {cfg.layers} layer(s), {mode}. Generated by tp-gen.",
            f"builtin.module attributes {{tp.chips = {cfg.chips if cfg.sharded else 1} : i64, "
            f"tp.config = {cfg.attr_text()}}} {{",
            f"  func.func @decode({args}) -> ({res}) {{",
        ]
        tail = [f"    func.return {ret_vals} : {ret_types}", "  }", "}", ""]
        return "\n".join(head + e.lines + tail)

    def arg(self, hf_name: str, t: TensorT | str) -> Value:
        name = self.e.fresh(hf_name)
        self.args.append((name, str(t), hf_name))
        return Value(name, t)

    def weight(self, hf_name: str, shape: Sequence[int]) -> Value:
        return self.arg(hf_name, TensorT(tuple(shape), self.cfg.dtype))

    def shard(
        self, hint: str, full: Value, chip: int | None, axis: int, ranges: Sequence[tuple[int, int]]
    ) -> Value:
        """Chip ``chip``'s slice of ``full`` (the value itself when unsharded)."""
        if chip is None:
            return full
        ft = full.type
        assert isinstance(ft, TensorT)
        shape = list(ft.shape)
        shape[axis] = sum(n for _, n in ranges)
        t = TensorT(tuple(shape), ft.dtype, chip)
        return self.e.bind(
            hint, t, f"tp.shard {full} at {slice_text(axis, ranges, ft.shape)} : {ft} -> {t}"
        )

    # -- shared pieces -----------------------------------------------------------------

    def rope_tables(self, pos: Value) -> tuple[Value, Value]:
        """cos and sin of ``position * inv_freq`` (half width): spine, once per step."""
        e, d = self.e, self.cfg.head_dim
        half = d // 2
        t = TensorT((half,))
        inv = e.dense("inv_freq", [1.0 / (self.cfg.theta ** (2 * j / d)) for j in range(half)], t)
        posf = e.bind("pos_f32", "f32", f"arith.sitofp {pos} : i64 to f32")
        tables = []
        for fn in ("cos", "sin"):
            tables.append(
                e.generic(
                    f"rope_{fn}",
                    [(inv, "j")],
                    (t, "j"),
                    "j",
                    "",
                    [
                        f"%f = arith.mulf %inv, {posf} : f32",
                        f"%r = math.{fn} %f : f32",
                        "linalg.yield %r : f32",
                    ],
                    ["inv", "o"],
                    doc="rope",
                )
            )
        return tables[0], tables[1]

    def rms_norm(self, hint: str, x: Value, w: Value) -> Value:
        """x / sqrt(mean(x^2, last axis) + eps) * w, over a tensor of any rank."""
        e = self.e
        xt = x.type
        assert isinstance(xt, TensorT)
        letters = "bcdefgh"[: len(xt.shape) - 1] + "z"
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
            doc="rms_norm",
        )
        n = e.scalar(f"n{xt.shape[-1]}", float(xt.shape[-1]))
        eps = e.scalar("eps", self.cfg.eps)
        wt = w.type
        assert isinstance(wt, TensorT)
        ext = [] if wt.dtype == "f32" else [f"%w32 = arith.extf %w : {wt.dtype} to f32"]
        wv = "%w" if wt.dtype == "f32" else "%w32"
        return e.generic(
            hint,
            [(x, letters), (ss, rows), (w, "z")],
            (xt, letters),
            letters,
            "",
            ext
            + [
                f"%ms = arith.divf %ss, {n} : f32",
                f"%v = arith.addf %ms, {eps} : f32",
                "%r = math.rsqrt %v : f32",
                "%y = arith.mulf %x, %r : f32",
                f"%res = arith.mulf %y, {wv} : f32",
                "linalg.yield %res : f32",
            ],
            ["x", "ss", "w", "o"],
            doc="rms_norm",
        )

    def rope(self, hint: str, x: Value, cos: Value, sin: Value) -> Value:
        """Rotate-half RoPE over the last axis of a [b, k, g, d] tensor."""
        e = self.e
        xt = x.type
        assert isinstance(xt, TensorT)
        b, k, g, d = xt.shape
        half_t = xt.reshaped((b, k, g, d // 2))
        halves = [
            e.bind(
                f"{hint}_x{i + 1}",
                half_t,
                f"tensor.extract_slice {x}[0, 0, 0, {i * d // 2}] [{b}, {k}, {g}, {d // 2}] "
                f"[1, 1, 1, 1] : {xt} to {half_t}",
            )
            for i in range(2)
        ]
        outs = []
        for i, (first, second, op) in enumerate(((0, 1, "subf"), (1, 0, "addf"))):
            outs.append(
                e.generic(
                    f"{hint}_r{i + 1}",
                    [(halves[first], "bkgj"), (halves[second], "bkgj"), (cos, "j"), (sin, "j")],
                    (half_t, "bkgj"),
                    "bkgj",
                    "",
                    [
                        "%p = arith.mulf %x, %c : f32",
                        "%q = arith.mulf %y, %s : f32",
                        f"%r = arith.{op} %p, %q : f32",
                        "linalg.yield %r : f32",
                    ],
                    ["x", "y", "c", "s", "o"],
                    doc="rope",
                )
            )
        return e.bind(
            hint,
            xt,
            f"tensor.concat dim(3) {outs[0]}, {outs[1]} : ({half_t}, {half_t}) -> {xt}",
        )

    def allreduce(self, hint: str, partials: list[Value], t: TensorT) -> Value:
        """Σ partials: one ``tp.allreduce``, the seed's left fold, or the value itself."""
        e = self.e
        if not self.cfg.sharded:
            return partials[0]
        if not self.cfg.fold or len(partials) == 1:
            return e.bind(
                hint,
                t,
                f"tp.allreduce {', '.join(map(str, partials))} : "
                f"{', '.join(str(p.type) for p in partials)} -> {t}",
            )
        acc = partials[0]
        for c, p in enumerate(partials[1:], start=1):
            init = e.empty(t)
            acc = e.bind(
                hint if c == len(partials) - 1 else f"{hint}_fold{c}",
                t,
                f"linalg.add ins({acc}, {p} : {acc.type}, {p.type}) outs({init} : {t}) -> {t}",
            )
        return acc

    # -- one layer ---------------------------------------------------------------------

    def layer(self, i: int, x: Value, pos: Value, rope: tuple[Value, Value]) -> Value:
        cfg, e = self.cfg, self.e
        b, h, d = cfg.batch, cfg.hidden, cfg.head_dim
        n = len(self.chips)
        nkv, nq = cfg.kv_heads // n, cfg.heads // n
        group = cfg.heads // cfg.kv_heads
        p = f"model.layers.{i}."
        shapes = weight_names(cfg, i)
        w = {name[len(p) :]: self.weight(name, shape) for name, shape in shapes.items()}
        cache_t = TensorT((b, cfg.kv_heads, cfg.max_positions, d))
        past_k = self.arg(f"past_key.{i}", cache_t)
        past_v = self.arg(f"past_value.{i}", cache_t)

        xn = self.rms_norm(f"l{i}_input_norm", x, w["input_layernorm.weight"])
        idx = e.bind(f"l{i}_pos", "index", f"arith.index_cast {pos} : i64 to index")
        partials, keys, values = [], [], []
        for c in self.chips:
            tag = f"l{i}" if c is None else f"l{i}_c{c}"
            ch = 0 if c is None else c
            q_rows = (ch * nq * d, nq * d)
            k_rows = (ch * nkv * d, nkv * d)
            if cfg.fused_qkv:
                qd, kd = cfg.heads * d, cfg.kv_heads * d
                wqkv = self.shard(
                    f"{tag}_qkv_w",
                    w["self_attn.qkv_proj.weight"],
                    c,
                    0,
                    [q_rows, (qd + k_rows[0], nkv * d), (qd + kd + k_rows[0], nkv * d)],
                )
                qkv = e.einsum(
                    f"{tag}_qkv", "bk,ok->bo", xn, wqkv, TensorT((b, (nq + 2 * nkv) * d), "f32", c)
                )
                q2, k2, v2 = self.split_cols(tag, qkv, [nq * d, nkv * d, nkv * d])
            else:
                wq = self.shard(f"{tag}_q_w", w["self_attn.q_proj.weight"], c, 0, [q_rows])
                wk = self.shard(f"{tag}_k_w", w["self_attn.k_proj.weight"], c, 0, [k_rows])
                wv = self.shard(f"{tag}_v_w", w["self_attn.v_proj.weight"], c, 0, [k_rows])
                q2 = e.einsum(f"{tag}_q", "bk,ok->bo", xn, wq, TensorT((b, nq * d), "f32", c))
                k2 = e.einsum(f"{tag}_k", "bk,ok->bo", xn, wk, TensorT((b, nkv * d), "f32", c))
                v2 = e.einsum(f"{tag}_v", "bk,ok->bo", xn, wv, TensorT((b, nkv * d), "f32", c))
            q4 = self.expand(f"{tag}_q4", q2, (b, nkv, group, d))
            k4 = self.expand(f"{tag}_k4", k2, (b, nkv, 1, d))
            v4 = self.expand(f"{tag}_v4", v2, (b, nkv, 1, d))
            q4 = self.rms_norm(f"{tag}_q_norm", q4, w["self_attn.q_norm.weight"])
            k4 = self.rms_norm(f"{tag}_k_norm", k4, w["self_attn.k_norm.weight"])
            q4 = self.rope(f"{tag}_q_rope", q4, *rope)
            k4 = self.rope(f"{tag}_k_rope", k4, *rope)
            kc = self.shard(f"{tag}_past_k", past_k, c, 1, [(ch * nkv, nkv)])
            vc = self.shard(f"{tag}_past_v", past_v, c, 1, [(ch * nkv, nkv)])
            kc = self.cache_write(f"{tag}_present_k", k4, kc, idx)
            vc = self.cache_write(f"{tag}_present_v", v4, vc, idx)
            keys.append(kc)
            values.append(vc)
            attn = self.attention(tag, q4, kc, vc, idx)
            flat = e.bind(
                f"{tag}_attn_flat",
                attn.type.reshaped((b, nq * d)),  # type: ignore[union-attr]
                f"tensor.collapse_shape {attn} [[0], [1, 2, 3]] : {attn.type} into "
                f"{attn.type.reshaped((b, nq * d))}",  # type: ignore[union-attr]
            )
            wo = self.shard(f"{tag}_o_w", w["self_attn.o_proj.weight"], c, 1, [q_rows])
            partials.append(e.einsum(f"{tag}_o", "bk,ok->bo", flat, wo, TensorT((b, h), "f32", c)))
        attn_sum = self.allreduce(f"l{i}_attn_sum", partials, TensorT((b, h)))
        x = e.bind(f"l{i}_attn_res", x.type, f"arith.addf {x}, {attn_sum} : {x.type}")
        self.results.extend(
            [
                (self.unshard(f"l{i}_present_key", keys, cache_t), f"present_key.{i}"),
                (self.unshard(f"l{i}_present_value", values, cache_t), f"present_value.{i}"),
            ]
        )
        xn2 = self.rms_norm(f"l{i}_post_norm", x, w["post_attention_layernorm.weight"])
        cols = cfg.intermediate // n
        partials = []
        for c in self.chips:
            tag = f"l{i}" if c is None else f"l{i}_c{c}"
            ch = 0 if c is None else c
            rows = (ch * cols, cols)
            if cfg.fused_gate_up:
                wgu = self.shard(
                    f"{tag}_gate_up_w",
                    w["mlp.gate_up_proj.weight"],
                    c,
                    0,
                    [rows, (cfg.intermediate + rows[0], cols)],
                )
                gu = e.einsum(
                    f"{tag}_gate_up", "bk,ok->bo", xn2, wgu, TensorT((b, 2 * cols), "f32", c)
                )
                g, u = self.split_cols(tag, gu, [cols, cols])
            else:
                wg = self.shard(f"{tag}_gate_w", w["mlp.gate_proj.weight"], c, 0, [rows])
                wu = self.shard(f"{tag}_up_w", w["mlp.up_proj.weight"], c, 0, [rows])
                g = e.einsum(f"{tag}_gate", "bk,ok->bo", xn2, wg, TensorT((b, cols), "f32", c))
                u = e.einsum(f"{tag}_up", "bk,ok->bo", xn2, wu, TensorT((b, cols), "f32", c))
            one = e.scalar("one", 1.0)
            act = e.generic(
                f"{tag}_act",
                [(g, "bj"), (u, "bj")],
                (g.type, "bj"),
                "bj",
                "",  # type: ignore[arg-type]
                [
                    "%ng = arith.negf %g : f32",
                    "%ex = math.exp %ng : f32",
                    f"%den = arith.addf {one}, %ex : f32",
                    "%silu = arith.divf %g, %den : f32",
                    "%y = arith.mulf %silu, %u : f32",
                    "linalg.yield %y : f32",
                ],
                ["g", "u", "o"],
                doc="silu",
            )
            wd = self.shard(f"{tag}_down_w", w["mlp.down_proj.weight"], c, 1, [rows])
            partials.append(
                e.einsum(f"{tag}_down", "bk,ok->bo", act, wd, TensorT((b, h), "f32", c))
            )
        mlp_sum = self.allreduce(f"l{i}_mlp_sum", partials, TensorT((b, h)))
        return e.bind(f"l{i}_out", x.type, f"arith.addf {x}, {mlp_sum} : {x.type}")

    def split_cols(self, tag: str, x: Value, widths: Sequence[int]) -> list[Value]:
        """Consecutive column blocks of a [b, n] tensor (a fused projection's parts)."""
        xt = x.type
        assert isinstance(xt, TensorT)
        out, start = [], 0
        for j, wdt in enumerate(widths):
            t = xt.reshaped((xt.shape[0], wdt))
            out.append(
                self.e.bind(
                    f"{tag}_part{j}",
                    t,
                    f"tensor.extract_slice {x}[0, {start}] [{xt.shape[0]}, {wdt}] [1, 1] : "
                    f"{xt} to {t}",
                )
            )
            start += wdt
        return out

    def expand(self, hint: str, x: Value, shape: tuple[int, int, int, int]) -> Value:
        xt = x.type
        assert isinstance(xt, TensorT)
        t = xt.reshaped(shape)
        dims = ", ".join(map(str, shape))
        return self.e.bind(
            hint,
            t,
            f"tensor.expand_shape {x} [[0], [1, 2, 3]] output_shape [{dims}] : {xt} into {t}",
        )

    def cache_write(self, hint: str, kv: Value, cache: Value, idx: Value) -> Value:
        """The cache with position ``idx`` overwritten by this step's key or value."""
        kt, ct = kv.type, cache.type
        assert isinstance(kt, TensorT) and isinstance(ct, TensorT)
        b, k, _, d = kt.shape
        return self.e.bind(
            hint,
            ct,
            f"tensor.insert_slice {kv} into {cache}[0, 0, {idx}, 0] [{b}, {k}, 1, {d}] "
            f"[1, 1, 1, 1] : {kt} into {ct}",
        )

    def attention(self, tag: str, q: Value, keys: Value, values: Value, idx: Value) -> Value:
        """softmax(q·Kᵀ/√d, positions 0..p) · V for q [b,k,g,d] over caches [b,k,m,d]."""
        e, cfg = self.e, self.cfg
        qt = q.type
        assert isinstance(qt, TensorT)
        b, k, g, d = qt.shape
        m = cfg.max_positions
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
        mx = self.reduce_positions(f"{tag}_max", masked, neg_infs, "maximumf")
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
        total = self.reduce_positions(f"{tag}_sum", ex, zeros, "addf")
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

    def reduce_positions(self, hint: str, x: Value, init: Value, combine: str) -> Value:
        """``init ⊕ x`` reduced over the positions axis m of [b, k, g, m] (softmax's max/sum)."""
        return self.e.generic(
            hint,
            [(x, "bkgm")],
            (init, "bkg"),
            "bkgm",
            "m",
            [f"%r = arith.{combine} %acc, %s : f32", "linalg.yield %r : f32"],
            ["s", "acc"],
            doc="softmax",
        )

    def unshard(self, hint: str, parts: list[Value], t: TensorT) -> Value:
        """The chips' caches stored back into the full host tensor."""
        if not self.cfg.sharded:
            return parts[0]
        nkv = self.cfg.kv_heads // self.cfg.chips
        slices = ", ".join(slice_text(1, [(c * nkv, nkv)], t.shape) for c in range(len(parts)))
        return self.e.bind(
            hint,
            t,
            f"tp.unshard {', '.join(map(str, parts))} slices [{slices}] : "
            f"{', '.join(str(p.type) for p in parts)} -> {t}",
        )
