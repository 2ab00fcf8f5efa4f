"""Qwen3 decode as IR: the unsharded layer stack, and its Megatron split over N chips.

`generate(config)` writes one decode step over ``config.layers`` layers in func, linalg,
tensor, arith and math. The writer here writes the unsharded step only; the tensor-parallel
form is always tp-split of it by Qwen3's plan (`plan`: Hugging Face's ``base_model_tp_plan``
for Qwen3, packed entries for the fused checkpoints), so chip c owns KV heads
``[c*kv/N, (c+1)*kv/N)`` with the query heads that use them and columns
``[c*I/N, (c+1)*I/N)`` of gate/up; o_proj and down_proj are split by row, summed by two
``tp.allreduce`` a layer (``fold``: spelled as the seed's left folds, tp-fold-allreduce);
norms and residuals are the replicated spine. The pieces every family spells alike
(projections, reshapes into heads, the cache write, attention) are
`tp_dialect.frontend.blocks`'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from xdsl.ir import Attribute

from tp_dialect.analysis.split.plan import PlanError, TpPlan, parse_plan, shipped_plan_text
from tp_dialect.frontend import norms
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
from tp_dialect.frontend.emitter import TensorT, Value
from tp_dialect.frontend.family import Family
from tp_dialect.frontend.outline import LayerFunction, call_layer
from tp_dialect.frontend.split import split_text

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


def plan(cfg: Qwen3Config) -> TpPlan:
    """The plan tp-split cuts ``cfg``'s step by: Hugging Face's Qwen3 plan (the shipped
    ``qwen3``), with a fused checkpoint's tensor as one packed entry — ``qkv_proj`` three
    blocks of q, k and v rows (``heads : kv_heads : kv_heads``), ``gate_up_proj`` two equal
    ones — so chip c's slice is its run of each block, as vLLM's merged linears cut them."""
    entries: dict[str, object] = json.loads(shipped_plan_text("qwen3"))
    fused: list[str] = []
    if cfg.fused_qkv:
        for name in ("q_proj", "k_proj", "v_proj"):
            del entries[f"layers.*.self_attn.{name}"]
        parts = [cfg.heads, cfg.kv_heads, cfg.kv_heads]
        entries["layers.*.self_attn.qkv_proj"] = {"style": "packed_colwise", "parts": parts}
        fused.append("qkv_proj")
    if cfg.fused_gate_up:
        del entries["layers.*.mlp.gate_proj"], entries["layers.*.mlp.up_proj"]
        entries["layers.*.mlp.gate_up_proj"] = {"style": "packed_colwise", "parts": 2}
        fused.append("gate_up_proj")
    how = f" with packed {' and '.join(fused)}" if fused else ""
    try:
        return parse_plan(json.dumps(entries), f"plan 'qwen3'{how}")
    except PlanError as err:
        raise GenError(str(err)) from None


def generate(cfg: Qwen3Config, outline: bool = False) -> str:
    """The decode step of ``cfg`` as MLIR text: a module holding one ``func.func @decode``,
    every layer written out in it; with ``outline``, one ``func.func private @layer`` that
    ``@decode`` calls once per layer (`tp_dialect.frontend.outline`), the same ports. A
    sharded config's step is the unsharded one split by tp-split by `plan` (its all-reduces
    spelled as folds with ``fold``); like every program tp-gen writes, it is not yet
    certified (tp-verify certifies it)."""
    cfg.check()
    text = _Writer(cfg).module(outline)
    if not cfg.sharded:
        return text
    by = plan(cfg)
    how = ", outlined (@decode calls @layer once a layer)" if outline else ""
    comment = (
        f"// Qwen3 decode step: {cfg.layers} layer(s), {cfg.chips} chips{how}. Generated by "
        f"tp-gen: written unsharded, split by tp-split ({by.source})"
        + (", all-reduces spelled as folds." if cfg.fold else ".")
    )
    return split_text(text, cfg.chips, by, fold=cfg.fold, certified=False, comment=comment)


class _Writer:
    def __init__(self, cfg: Qwen3Config) -> None:
        self.cfg = cfg
        self.fn = DecodeFunction(QWEN3)
        self.e = self.fn.e
        self.results = self.fn.results

    # -- module ------------------------------------------------------------------------

    def module(self, outline: bool = False) -> str:
        """The unsharded step (over one chip), recording ``cfg`` as it is: a sharded config's
        step is this text split (`generate`)."""
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
                x, k, v = call_layer(e, layer_fn, operands, hints, layer)
            self.results += [(k, f"present_key.{layer}"), (v, f"present_value.{layer}")]
        self.results.insert(0, (x, "hidden_states"))
        how = "" if layer_fn is None else ", outlined (@decode calls @layer once a layer)"
        return self.fn.module(
            f"// Qwen3 decode step: {cfg.layers} layer(s), unsharded{how}. Generated by tp-gen.",
            1,
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

    # -- shared pieces -----------------------------------------------------------------

    # The pieces every family spells alike (`tp_dialect.frontend.norms`), with this config.

    def rope_tables(self, pos: Value) -> tuple[Value, Value]:
        """cos and sin of ``position * inv_freq`` (half width): spine, once per step."""
        return norms.rope_tables(self.e, pos, norms.inv_freq(self.cfg.head_dim, self.cfg.theta))

    def rms_norm(self, hint: str, x: Value, w: Value) -> Value:
        """x / sqrt(mean(x^2, last axis) + eps) * w, over a tensor of any rank."""
        return norms.rms_norm(self.e, hint, x, w, self.cfg.eps)

    def rope(self, hint: str, x: Value, cos: Value, sin: Value) -> Value:
        """Rotate-half RoPE over the last axis of a [b, k, g, d] tensor."""
        return norms.rope(self.e, hint, x, cos, sin)

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
        hidden state and the two updated caches."""
        cfg, e = self.cfg, self.e
        b, h, d = cfg.batch, cfg.hidden, cfg.head_dim
        nkv, nq = cfg.kv_heads, cfg.heads
        group = cfg.heads // cfg.kv_heads

        xn = self.rms_norm(f"{t}_input_norm", x, w["input_layernorm.weight"])
        idx = e.bind(f"{t}_pos", "index", f"arith.index_cast {pos} : i64 to index")
        if cfg.fused_qkv:
            qkv_t = TensorT((b, (nq + 2 * nkv) * d))
            qkv = linear(e, f"{t}_qkv", xn, w["self_attn.qkv_proj.weight"], qkv_t, OUT_IN)
            q2, k2, v2 = split_cols(e, t, qkv, [nq * d, nkv * d, nkv * d])
        else:
            q2 = linear(e, f"{t}_q", xn, w["self_attn.q_proj.weight"], TensorT((b, nq * d)), OUT_IN)
            k2 = linear(
                e, f"{t}_k", xn, w["self_attn.k_proj.weight"], TensorT((b, nkv * d)), OUT_IN
            )
            v2 = linear(
                e, f"{t}_v", xn, w["self_attn.v_proj.weight"], TensorT((b, nkv * d)), OUT_IN
            )
        q4 = expand(e, f"{t}_q4", q2, (b, nkv, group, d))
        k4 = expand(e, f"{t}_k4", k2, (b, nkv, 1, d))
        v4 = expand(e, f"{t}_v4", v2, (b, nkv, 1, d))
        q4 = self.rms_norm(f"{t}_q_norm", q4, w["self_attn.q_norm.weight"])
        k4 = self.rms_norm(f"{t}_k_norm", k4, w["self_attn.k_norm.weight"])
        q4 = self.rope(f"{t}_q_rope", q4, *rope)
        k4 = self.rope(f"{t}_k_rope", k4, *rope)
        present_k = cache_write(e, f"{t}_present_k", k4, past_k, idx)
        present_v = cache_write(e, f"{t}_present_v", v4, past_v, idx)
        attn = attention(e, t, q4, present_k, present_v, idx)
        flat = collapse_heads(e, f"{t}_attn_flat", attn)
        o = linear(e, f"{t}_o", flat, w["self_attn.o_proj.weight"], TensorT((b, h)), OUT_IN)
        x = residual(e, f"{t}_attn_res", x, o)
        xn2 = self.rms_norm(f"{t}_post_norm", x, w["post_attention_layernorm.weight"])
        cols = cfg.intermediate
        if cfg.fused_gate_up:
            gu_w = w["mlp.gate_up_proj.weight"]
            gu = linear(e, f"{t}_gate_up", xn2, gu_w, TensorT((b, 2 * cols)), OUT_IN)
            g, u = split_cols(e, t, gu, [cols, cols])
        else:
            g = linear(e, f"{t}_gate", xn2, w["mlp.gate_proj.weight"], TensorT((b, cols)), OUT_IN)
            u = linear(e, f"{t}_up", xn2, w["mlp.up_proj.weight"], TensorT((b, cols)), OUT_IN)
        act = norms.silu_mul(e, f"{t}_act", g, u)
        down = linear(e, f"{t}_down", act, w["mlp.down_proj.weight"], TensorT((b, h)), OUT_IN)
        return residual(e, f"{t}_out", x, down), present_k, present_v
