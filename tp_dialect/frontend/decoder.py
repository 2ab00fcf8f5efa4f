"""One Llama-style decoder layer as IR, written once for the whole family: the whole-model
step of Llama, Mistral, Qwen2 and Qwen3 (`tp_dialect.frontend.llama`: tokens ``[b, S, h]`` at
positions ``position .. position + S - 1``); it also takes a decode stack's rows ``[b, h]``
(``tokens`` None), the form `tp_dialect.frontend.qwen3` still writes with its own split
(no program writes that form through this module yet).

The layer is pre-norm: RMSNorm, q/k/v projections (biases for Qwen2 or Llama's
``attention_bias``; Qwen3's per-head q/k RMSNorm), rotate-half RoPE, the KV-cache write, causal
attention (a sliding window for Mistral), ``o_proj`` and the residual; then RMSNorm, the
SiLU-gated MLP (biases for Llama's ``mlp_bias``) and the residual. Weights keep Hugging Face's
``[out, in]`` layout and names within a layer (``self_attn.q_proj.weight``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tp_dialect.frontend.blocks import (
    OUT_IN,
    attention,
    cache_write,
    collapse_heads,
    expand,
    heads_first,
    linear,
    residual,
    split_cols,
)
from tp_dialect.frontend.emitter import Emitter, TensorT, Value
from tp_dialect.frontend.norms import rms_norm, rope, silu_mul


@dataclass(frozen=True)
class LayerShape:
    """What one Llama-style layer is: its dims, its switches, and whether it runs on a decode
    stack's rows (``tokens`` None: ``[b, h]``) or a whole model's tokens (``[b, S, h]``)."""

    batch: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    max_positions: int
    eps: float
    dtype: str  # the weights' element type (activations are f32)
    tokens: int | None = None
    qkv_bias: bool = False  # q/k/v biases (Qwen2; Llama's and Qwen3's attention_bias)
    o_bias: bool = False  # an o_proj bias (Llama's and Qwen3's attention_bias)
    mlp_bias: bool = False  # gate/up/down biases (Llama's mlp_bias)
    qk_norm: bool = True  # Qwen3's per-head RMSNorm of q and k
    fused_qkv: bool = False  # one qkv_proj tensor (q, k, v rows side by side)
    fused_gate_up: bool = False  # one gate_up_proj tensor (gate, up rows side by side)
    window: int | None = None  # a sliding window: keys j > p - window only (Mistral)

    @property
    def rows(self) -> tuple[int, ...]:
        """The leading axes of every activation: ``(b,)`` or ``(b, S)``."""
        return (self.batch,) if self.tokens is None else (self.batch, self.tokens)

    @property
    def cache(self) -> TensorT:
        """A layer's key or value cache: ``[b, kv_heads, max_positions, head_dim]``."""
        return TensorT((self.batch, self.kv_heads, self.max_positions, self.head_dim))


def weight_names(shape: LayerShape) -> dict[str, tuple[int, ...]]:
    """A layer's Hugging Face weight names (within the layer) and shapes, in the order its
    ports are declared."""
    h, d, q, kv, i = shape.hidden, shape.head_dim, shape.heads, shape.kv_heads, shape.intermediate
    names: dict[str, tuple[int, ...]] = {"input_layernorm.weight": (h,)}
    projections = {"q": q * d, "k": kv * d, "v": kv * d}
    if shape.fused_qkv:
        names["self_attn.qkv_proj.weight"] = ((q + 2 * kv) * d, h)
        if shape.qkv_bias:
            names["self_attn.qkv_proj.bias"] = ((q + 2 * kv) * d,)
    else:
        for x, rows in projections.items():
            names[f"self_attn.{x}_proj.weight"] = (rows, h)
            if shape.qkv_bias:
                names[f"self_attn.{x}_proj.bias"] = (rows,)
    names["self_attn.o_proj.weight"] = (h, q * d)
    if shape.o_bias:
        names["self_attn.o_proj.bias"] = (h,)
    if shape.qk_norm:
        names["self_attn.q_norm.weight"] = (d,)
        names["self_attn.k_norm.weight"] = (d,)
    names["post_attention_layernorm.weight"] = (h,)
    if shape.fused_gate_up:
        names["mlp.gate_up_proj.weight"] = (2 * i, h)
    else:
        names["mlp.gate_proj.weight"] = (i, h)
        names["mlp.up_proj.weight"] = (i, h)
    names["mlp.down_proj.weight"] = (h, i)
    if shape.mlp_bias:
        if shape.fused_gate_up:
            names["mlp.gate_up_proj.bias"] = (2 * i,)
        else:
            names["mlp.gate_proj.bias"] = (i,)
            names["mlp.up_proj.bias"] = (i,)
        names["mlp.down_proj.bias"] = (h,)
    return names


def _project(
    e: Emitter, hint: str, x: Value, w: dict[str, Value], name: str, width: int, rows: tuple
) -> Value:
    """``x`` through the projection ``name`` (``self_attn.q_proj``), its bias added when the
    layer has one."""
    return linear(
        e, hint, x, w[f"{name}.weight"], TensorT((*rows, width)), OUT_IN, w.get(f"{name}.bias")
    )


def layer(
    e: Emitter,
    shape: LayerShape,
    t: str,
    x: Value,
    pos: Value,
    rope_tables: tuple[Value, Value],
    w: dict[str, Value],
    past_k: Value,
    past_v: Value,
) -> tuple[Value, Value, Value]:
    """One layer on ``x`` into ``e``, its values named ``{t}_…``: the new hidden state and
    the two updated caches. ``w`` holds the layer's weights by `weight_names`."""
    s = shape
    rows, d = s.rows, s.head_dim
    group = s.heads // s.kv_heads
    xn = rms_norm(e, f"{t}_input_norm", x, w["input_layernorm.weight"], s.eps)
    idx = e.bind(f"{t}_pos", "index", f"arith.index_cast {pos} : i64 to index")
    qd, kd = s.heads * d, s.kv_heads * d
    if s.fused_qkv:
        qkv = _project(e, f"{t}_qkv", xn, w, "self_attn.qkv_proj", qd + 2 * kd, rows)
        q2, k2, v2 = split_cols(e, t, qkv, [qd, kd, kd])
    else:
        q2 = _project(e, f"{t}_q", xn, w, "self_attn.q_proj", qd, rows)
        k2 = _project(e, f"{t}_k", xn, w, "self_attn.k_proj", kd, rows)
        v2 = _project(e, f"{t}_v", xn, w, "self_attn.v_proj", kd, rows)
    # A decode step's one key [b, kv, 1, d] is already the cache's layout (its unit axis the
    # one row written); a whole model's keys [b, S, kv, d] are laid out heads-first below.
    kv_shape = (*rows, s.kv_heads, d) if s.tokens else (*rows, s.kv_heads, 1, d)
    q4 = expand(e, f"{t}_q4", q2, (*rows, s.kv_heads, group, d))
    k4 = expand(e, f"{t}_k4", k2, kv_shape)
    v4 = expand(e, f"{t}_v4", v2, kv_shape)
    if s.qk_norm:
        q4 = rms_norm(e, f"{t}_q_norm", q4, w["self_attn.q_norm.weight"], s.eps)
        k4 = rms_norm(e, f"{t}_k_norm", k4, w["self_attn.k_norm.weight"], s.eps)
    q4 = rope(e, f"{t}_q_rope", q4, *rope_tables)
    k4 = rope(e, f"{t}_k_rope", k4, *rope_tables)
    if s.tokens:
        k4 = heads_first(e, f"{t}_k_heads", k4)
        v4 = heads_first(e, f"{t}_v_heads", v4)
    kc = cache_write(e, f"{t}_present_k", k4, past_k, idx)
    vc = cache_write(e, f"{t}_present_v", v4, past_v, idx)
    attn = attention(e, t, q4, kc, vc, idx, s.window)
    flat = collapse_heads(e, f"{t}_attn_flat", attn)
    o = _project(e, f"{t}_o", flat, w, "self_attn.o_proj", s.hidden, rows)
    x = residual(e, f"{t}_attn_res", x, o)
    xn2 = rms_norm(e, f"{t}_post_norm", x, w["post_attention_layernorm.weight"], s.eps)
    i = s.intermediate
    if s.fused_gate_up:
        gu = _project(e, f"{t}_gate_up", xn2, w, "mlp.gate_up_proj", 2 * i, rows)
        g, u = split_cols(e, t, gu, [i, i])
    else:
        g = _project(e, f"{t}_gate", xn2, w, "mlp.gate_proj", i, rows)
        u = _project(e, f"{t}_up", xn2, w, "mlp.up_proj", i, rows)
    act = silu_mul(e, f"{t}_act", g, u)
    down = _project(e, f"{t}_down", act, w, "mlp.down_proj", s.hidden, rows)
    return residual(e, f"{t}_out", x, down), kc, vc
