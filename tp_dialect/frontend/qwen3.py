"""Qwen3 decode as IR: the unsharded layer stack, or its Megatron split over N chips.

`generate(config)` writes one decode step over ``config.layers`` layers in func, linalg,
tensor, arith and math plus tp. In the tensor-parallel form chip c owns KV heads
``[c*kv/N, (c+1)*kv/N)`` with the query heads that use them and columns
``[c*I/N, (c+1)*I/N)`` of gate/up; o_proj and down_proj are split by row, summed by two
``tp.allreduce`` a layer; norms and residuals are the replicated spine. Every chip's slice
is its own value, cut from the full checkpoint tensor by ``tp.shard``. The pieces every
family spells alike (projections, reshapes into heads, the cache write, attention) are
`tp_dialect.frontend.blocks`'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from xdsl.ir import Attribute

from tp_dialect.frontend.blocks import (
    OUT_IN,
    DecodeFunction,
    GenError,
    attention,
    cache_write,
    collapse_heads,
    config_attr_text,
    config_fields,
    expand,
    linear,
    residual,
    split_cols,
)
from tp_dialect.frontend.bounds import check_config
from tp_dialect.frontend.emitter import TensorT, Value, chip_hint, slice_text
from tp_dialect.frontend.family import Family
from tp_dialect.frontend.outline import LayerFunction, call_layer

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


# Every size a config states, in the order its refusals are checked.
_SIZES = (
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "layers",
    "chips",
    "batch",
    "max_positions",
)

# The runtime knows no model: the program states each argument's role, decided here.
QWEN3 = Family(
    name="qwen3",
    inputs=("hidden_states", "position"),
    caches=("past_key.", "past_value."),
    cache_axis=2,  # [batch, kv_heads, positions, head_dim]
)


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
        """The preset ``name`` with ``overrides``; GenError for an unknown preset."""
        if name not in PRESETS:
            raise GenError(f"unknown preset '{name}' (known: {', '.join(PRESETS)})")
        return cls(**{**PRESETS[name], **overrides})  # type: ignore[arg-type]

    def check(self) -> None:
        """Refuse, naming the reason, what cannot be generated or split: beyond tp-gen's
        bounds (`tp_dialect.frontend.bounds`), or not a Qwen3 split."""
        check_config(
            {name: getattr(self, name) for name in _SIZES},
            lambda: tensor_shapes(self),
            lambda: {"the RoPE table 'inv_freq' (head_dim / 2 values)": self.head_dim // 2},
        )
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
        return config_attr_text(asdict(self))

    @classmethod
    def from_attr(cls, attr: Attribute) -> Qwen3Config:
        """The config a generated module recorded in its ``tp.config`` attribute."""
        values = config_fields(attr)
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


def tensor_shapes(cfg: Qwen3Config) -> dict[str, tuple[int, ...]]:
    """Shapes no tensor of ``cfg``'s decode step outgrows (`tp_dialect.frontend.bounds`
    holds each to the byte bound): a layer's weights and cache, the widest activations and
    attention's scores, unsharded (a chip's slice is smaller); a test generates programs to
    check that none of their tensors holds more elements than the largest listed."""
    b, h, d, m = cfg.batch, cfg.hidden, cfg.head_dim, cfg.max_positions
    q, kv, i = cfg.heads, cfg.kv_heads, cfg.intermediate
    return {
        **weight_names(cfg, 0),
        "past_key.0": (b, kv, m, d),
        "hidden_states": (b, h),
        "qkv": (b, (q + 2 * kv if cfg.fused_qkv else q) * d),
        "scores": (b, q, m),  # [batch, kv_heads, group, positions]
        "gate_up": (b, 2 * i if cfg.fused_gate_up else i),
    }


def generate(cfg: Qwen3Config, outline: bool = False) -> str:
    """The decode step of ``cfg`` as MLIR text: a module holding one ``func.func @decode``,
    every layer written out in it; with ``outline``, one ``func.func private @layer`` that
    ``@decode`` calls once per layer (`tp_dialect.frontend.outline`), the same ports."""
    cfg.check()
    return _Writer(cfg).module(outline)


class _Writer:
    def __init__(self, cfg: Qwen3Config) -> None:
        self.cfg = cfg
        self.fn = DecodeFunction(QWEN3)
        self.e = self.fn.e
        self.results = self.fn.results
        self.chips: list[int | None] = list(range(cfg.chips)) if cfg.sharded else [None]

    # -- module ------------------------------------------------------------------------

    def module(self, outline: bool = False) -> str:
        cfg, e = self.cfg, self.e
        x = self.arg("hidden_states", TensorT((cfg.batch, cfg.hidden)))
        pos = self.arg("position", "i64")
        rope = self.rope_tables(pos)
        layer_fn = self.layer_function() if outline else None
        for layer in range(cfg.layers):
            e.comment(f"---- layer {layer} ----")
            w, past_k, past_v = self.layer_ports(layer)
            if layer_fn is None:
                x, k, v = self.layer(f"l{layer}", x, pos, rope, w, past_k, past_v)
            else:
                operands = [x, pos, *rope, *w.values(), past_k, past_v]
                hints = [f"l{layer}_{n}" for n in ("out", "present_key", "present_value")]
                x, k, v = call_layer(e, layer_fn, operands, hints)
            self.results += [(k, f"present_key.{layer}"), (v, f"present_value.{layer}")]
        self.results.insert(0, (x, "hidden_states"))
        mode = f"{cfg.chips} chips" if cfg.sharded else "unsharded"
        how = "" if layer_fn is None else ", outlined (@decode calls @layer once a layer)"
        return self.fn.module(
            f"// Qwen3 decode step: {cfg.layers} layer(s), {mode}{how}. Generated by tp-gen.",
            cfg.chips if cfg.sharded else 1,
            cfg.attr_text(),
            [] if layer_fn is None else layer_fn.text(),
        )

    def layer_ports(self, i: int) -> tuple[dict[str, Value], Value, Value]:
        """Layer ``i``'s entry arguments: its weights (by name within the layer) and its
        two caches, declared in checkpoint order."""
        cfg = self.cfg
        p = f"model.layers.{i}."
        w = {
            name[len(p) :]: self.weight(name, shape) for name, shape in weight_names(cfg, i).items()
        }
        cache_t = TensorT((cfg.batch, cfg.kv_heads, cfg.max_positions, cfg.head_dim))
        return w, self.arg(f"past_key.{i}", cache_t), self.arg(f"past_value.{i}", cache_t)

    def layer_function(self) -> LayerFunction:
        """``@layer``: `layer` written once into its own function, its arguments the
        hidden state, position and RoPE tables, then a layer's weights and caches."""
        cfg, fn = self.cfg, LayerFunction()
        x = fn.arg("hidden_states", TensorT((cfg.batch, cfg.hidden)))
        pos = fn.arg("position", "i64")
        half = TensorT((cfg.head_dim // 2,))
        rope = (fn.arg("rope_cos", half), fn.arg("rope_sin", half))
        p = "model.layers.0."
        w = {
            name[len(p) :]: fn.arg(name[len(p) :], TensorT(shape, cfg.dtype))
            for name, shape in weight_names(cfg, 0).items()
        }
        cache_t = TensorT((cfg.batch, cfg.kv_heads, cfg.max_positions, cfg.head_dim))
        past_k, past_v = fn.arg("past_key", cache_t), fn.arg("past_value", cache_t)
        outer, self.e = self.e, fn.e
        try:
            fn.results = list(self.layer("l", x, pos, rope, w, past_k, past_v))
        finally:
            self.e = outer
        return fn

    def arg(self, hf_name: str, t: TensorT | str) -> Value:
        return self.fn.arg(hf_name, t)

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

    def layer(
        self,
        t: str,
        x: Value,
        pos: Value,
        rope: tuple[Value, Value],
        w: dict[str, Value],
        past_k: Value,
        past_v: Value,
    ) -> tuple[Value, Value, Value]:
        """One layer on ``x`` into the current emitter, its values named ``{t}_…``: the new
        hidden state and the two updated caches (full host tensors)."""
        cfg, e = self.cfg, self.e
        b, h, d = cfg.batch, cfg.hidden, cfg.head_dim
        n = len(self.chips)
        nkv, nq = cfg.kv_heads // n, cfg.heads // n
        group = cfg.heads // cfg.kv_heads
        cache_t = TensorT((b, cfg.kv_heads, cfg.max_positions, d))

        xn = self.rms_norm(f"{t}_input_norm", x, w["input_layernorm.weight"])
        idx = e.bind(f"{t}_pos", "index", f"arith.index_cast {pos} : i64 to index")
        partials, keys, values = [], [], []
        for c in self.chips:
            tag = t if c is None else f"{t}_c{c}"
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
                qkv_t = TensorT((b, (nq + 2 * nkv) * d), "f32", c)
                qkv = linear(e, f"{tag}_qkv", xn, wqkv, qkv_t, OUT_IN)
                q2, k2, v2 = split_cols(e, tag, qkv, [nq * d, nkv * d, nkv * d])
            else:
                wq = self.shard(f"{tag}_q_w", w["self_attn.q_proj.weight"], c, 0, [q_rows])
                wk = self.shard(f"{tag}_k_w", w["self_attn.k_proj.weight"], c, 0, [k_rows])
                wv = self.shard(f"{tag}_v_w", w["self_attn.v_proj.weight"], c, 0, [k_rows])
                q2 = linear(e, f"{tag}_q", xn, wq, TensorT((b, nq * d), "f32", c), OUT_IN)
                k2 = linear(e, f"{tag}_k", xn, wk, TensorT((b, nkv * d), "f32", c), OUT_IN)
                v2 = linear(e, f"{tag}_v", xn, wv, TensorT((b, nkv * d), "f32", c), OUT_IN)
            q4 = expand(e, f"{tag}_q4", q2, (b, nkv, group, d))
            k4 = expand(e, f"{tag}_k4", k2, (b, nkv, 1, d))
            v4 = expand(e, f"{tag}_v4", v2, (b, nkv, 1, d))
            q4 = self.rms_norm(f"{tag}_q_norm", q4, w["self_attn.q_norm.weight"])
            k4 = self.rms_norm(f"{tag}_k_norm", k4, w["self_attn.k_norm.weight"])
            q4 = self.rope(f"{tag}_q_rope", q4, *rope)
            k4 = self.rope(f"{tag}_k_rope", k4, *rope)
            kc = self.shard(f"{tag}_past_k", past_k, c, 1, [(ch * nkv, nkv)])
            vc = self.shard(f"{tag}_past_v", past_v, c, 1, [(ch * nkv, nkv)])
            kc = cache_write(e, f"{tag}_present_k", k4, kc, idx)
            vc = cache_write(e, f"{tag}_present_v", v4, vc, idx)
            keys.append(kc)
            values.append(vc)
            attn = attention(e, tag, q4, kc, vc, idx)
            flat = collapse_heads(e, f"{tag}_attn_flat", attn)
            wo = self.shard(f"{tag}_o_w", w["self_attn.o_proj.weight"], c, 1, [q_rows])
            partials.append(linear(e, f"{tag}_o", flat, wo, TensorT((b, h), "f32", c), OUT_IN))
        attn_sum = self.allreduce(f"{t}_attn_sum", partials, TensorT((b, h)))
        x = residual(e, f"{t}_attn_res", x, attn_sum)
        present_k = self.unshard(f"{t}_present_key", keys, cache_t)
        present_v = self.unshard(f"{t}_present_value", values, cache_t)
        xn2 = self.rms_norm(f"{t}_post_norm", x, w["post_attention_layernorm.weight"])
        cols = cfg.intermediate // n
        partials = []
        for c in self.chips:
            tag = t if c is None else f"{t}_c{c}"
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
                gu = linear(e, f"{tag}_gate_up", xn2, wgu, TensorT((b, 2 * cols), "f32", c), OUT_IN)
                g, u = split_cols(e, tag, gu, [cols, cols])
            else:
                wg = self.shard(f"{tag}_gate_w", w["mlp.gate_proj.weight"], c, 0, [rows])
                wu = self.shard(f"{tag}_up_w", w["mlp.up_proj.weight"], c, 0, [rows])
                g = linear(e, f"{tag}_gate", xn2, wg, TensorT((b, cols), "f32", c), OUT_IN)
                u = linear(e, f"{tag}_up", xn2, wu, TensorT((b, cols), "f32", c), OUT_IN)
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
            partials.append(linear(e, f"{tag}_down", act, wd, TensorT((b, h), "f32", c), OUT_IN))
        mlp_sum = self.allreduce(f"{t}_mlp_sum", partials, TensorT((b, h)))
        return residual(e, f"{t}_out", x, mlp_sum), present_k, present_v

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
