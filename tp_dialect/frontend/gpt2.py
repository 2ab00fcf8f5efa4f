"""GPT-2 decode as IR: the unsharded layer stack, by Hugging Face ``GPT2Model`` names.

`generate(config)` writes one decode step over ``config.layers`` layers in func, linalg,
tensor, arith and math: pre-norm blocks of LayerNorm (eps 1e-5, biased variance), fused
q/k/v by one Conv1D ``c_attn`` (weights ``[in, out]``, ``y = x @ W + b``), multi-head
attention over a fixed-size KV cache (no RoPE: positions are already in the hidden state),
``c_proj``, and a ``c_fc`` → tanh-GELU → ``c_proj`` MLP, each with its residual. The final
``ln_f``, embeddings and LM head are not included.

Only the unsharded program is written here: its tensor-parallel form comes from
``tp-opt --tp-split="chips=N plan=gpt2"``, which partitions it by named weight ports. So the
IR is spelled as the Qwen3 generator spells it (the shared pieces of
`tp_dialect.frontend.blocks`): a split propagates through one family's layer as through the
other's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from xdsl.ir import Attribute

from tp_dialect.frontend.blocks import (
    IN_OUT,
    DecodeFunction,
    GenError,
    attention,
    cache_write,
    collapse_heads,
    config_attr_text,
    config_fields,
    expand,
    heads_first,
    linear,
    residual,
    split_cols,
)
from tp_dialect.frontend.bounds import check_config
from tp_dialect.frontend.emitter import Emitter, TensorT, Value
from tp_dialect.frontend.family import Family
from tp_dialect.frontend.norms import gelu_tanh, layer_norm
from tp_dialect.frontend.outline import LayerFunction, call_layer

PRESETS: dict[str, dict[str, int]] = {
    # Small enough for property tests; 8 heads, so N = 1, 2, 4, 8 all split it by heads.
    "tiny": dict(hidden=64, heads=8, max_positions=16),
    # GPT-2 small (124M): 12 heads of 64; n_positions 1024.
    "gpt2": dict(hidden=768, heads=12, max_positions=1024),
}

# The runtime knows no model: the program states each argument's role, decided here.
GPT2 = Family(
    name="gpt2",
    inputs=("hidden_states", "position"),
    caches=("past_key.", "past_value."),
    cache_axis=2,  # [batch, heads, positions, head_dim]
)


@dataclass(frozen=True)
class GPT2Config:
    """What one generated GPT-2 decode step is: model dims and the weights' element type.
    ``family`` is recorded with the rest in ``tp.config`` so a tool can tell the families
    apart and regenerate the program."""

    hidden: int
    heads: int
    intermediate: int
    layers: int = 1
    batch: int = 1
    max_positions: int = 16
    eps: float = 1e-5
    dtype: str = "f32"  # weights' element type: f32 or bf16 (activations are f32)
    family: str = "gpt2"

    @classmethod
    def preset(cls, name: str, **overrides: int | float | str) -> GPT2Config:
        """The preset ``name`` with ``overrides``; the intermediate size is 4·hidden (as in
        every GPT-2) unless given. Raises GenError for an unknown preset."""
        if name not in PRESETS:
            raise GenError(f"unknown gpt2 preset '{name}' (known: {', '.join(PRESETS)})")
        values: dict[str, int | float | str] = {**PRESETS[name], **overrides}
        values.setdefault("intermediate", 4 * int(values["hidden"]))
        return cls(**values)  # type: ignore[arg-type]

    @property
    def head_dim(self) -> int:
        """hidden / heads (`check` refuses a config where it is not whole)."""
        return self.hidden // self.heads

    def check(self) -> None:
        """Refuse, naming the reason, what cannot be generated: beyond tp-gen's bounds
        (`tp_dialect.frontend.bounds`), or heads not dividing hidden."""
        if self.family != "gpt2":
            raise GenError(f"a GPT-2 config's family is 'gpt2', got '{self.family}'")
        sizes = ("hidden", "heads", "intermediate", "layers", "batch", "max_positions")
        check_config({name: getattr(self, name) for name in sizes}, lambda: tensor_shapes(self))
        if self.hidden % self.heads:
            raise GenError(
                f"heads ({self.heads}) must divide hidden ({self.hidden}): "
                "head_dim is hidden / heads"
            )
        if self.dtype not in ("f32", "bf16"):
            raise GenError(f"dtype must be f32 or bf16, got {self.dtype}")

    def attr_text(self) -> str:
        """The config as an MLIR dictionary attribute (how a module records its origin),
        ``family = "gpt2"`` included."""
        return config_attr_text(asdict(self))

    @classmethod
    def from_attr(cls, attr: Attribute) -> GPT2Config:
        """The config a generated module recorded in its ``tp.config`` attribute."""
        try:
            return cls(**config_fields(attr))  # type: ignore[arg-type]
        except TypeError as err:
            raise GenError(f"tp.config does not describe a GPT-2 decode step: {err}") from None


def weight_names(cfg: GPT2Config, layer: int) -> dict[str, tuple[int, ...]]:
    """Hugging Face ``GPT2Model`` names and shapes of one layer's weights, in checkpoint
    order; Conv1D weights are ``[in, out]``."""
    p = f"h.{layer}."
    h, i = cfg.hidden, cfg.intermediate
    return {
        p + "ln_1.weight": (h,),
        p + "ln_1.bias": (h,),
        p + "attn.c_attn.weight": (h, 3 * h),
        p + "attn.c_attn.bias": (3 * h,),
        p + "attn.c_proj.weight": (h, h),
        p + "attn.c_proj.bias": (h,),
        p + "ln_2.weight": (h,),
        p + "ln_2.bias": (h,),
        p + "mlp.c_fc.weight": (h, i),
        p + "mlp.c_fc.bias": (i,),
        p + "mlp.c_proj.weight": (i, h),
        p + "mlp.c_proj.bias": (h,),
    }


def tensor_shapes(cfg: GPT2Config) -> dict[str, tuple[int, ...]]:
    """Shapes no tensor of ``cfg``'s decode step outgrows (`tp_dialect.frontend.bounds`
    holds each to the byte bound): a layer's weights and cache, the widest activations and
    attention's scores, unsharded (a chip's slice is smaller); a test generates programs to
    check that none of their tensors holds more elements than the largest listed."""
    b, h, n, m = cfg.batch, cfg.hidden, cfg.heads, cfg.max_positions
    return {
        **weight_names(cfg, 0),
        "past_key.0": (b, n, m, h // n),
        "qkv": (b, 3 * h),
        "scores": (b, n, m),  # [batch, heads, 1, positions]
        "mlp": (b, cfg.intermediate),
    }


def generate(cfg: GPT2Config, outline: bool = False) -> str:
    """The unsharded decode step of ``cfg`` as MLIR text: a module (``tp.chips = 1``, the
    config in ``tp.config``) holding one ``func.func @decode``; with ``outline``, also one
    ``func.func private @layer`` it calls once a layer (`tp_dialect.frontend.outline`).
    Raises GenError for a config `GPT2Config.check` refuses."""
    cfg.check()
    return _Writer(cfg).module(outline)


class _Writer:
    def __init__(self, cfg: GPT2Config) -> None:
        self.cfg = cfg
        self.fn = DecodeFunction(GPT2)
        self.e = self.fn.e

    def module(self, outline: bool = False) -> str:
        cfg, e = self.cfg, self.e
        x = self.fn.arg("hidden_states", TensorT((cfg.batch, cfg.hidden)))
        pos = self.fn.arg("position", "i64")
        layer_fn = self.layer_function() if outline else None
        for layer in range(cfg.layers):
            e.comment(f"---- layer {layer} ----")
            p = f"h.{layer}."
            w = {n[len(p) :]: self.weight(n, s) for n, s in weight_names(cfg, layer).items()}
            past_k = self.fn.arg(f"past_key.{layer}", self.cache_t)
            past_v = self.fn.arg(f"past_value.{layer}", self.cache_t)
            if layer_fn is None:
                x, k, v = self.layer(f"l{layer}", x, pos, w, past_k, past_v)
            else:
                hints = [f"l{layer}_{n}" for n in ("out", "present_key", "present_value")]
                x, k, v = call_layer(
                    e, layer_fn, [x, pos, *w.values(), past_k, past_v], hints, layer
                )
            self.fn.results += [(k, f"present_key.{layer}"), (v, f"present_value.{layer}")]
        self.fn.results.insert(0, (x, "hidden_states"))
        how = "" if layer_fn is None else ", outlined (@decode calls @layer once a layer)"
        return self.fn.module(
            f"// GPT-2 decode step: {cfg.layers} layer(s), unsharded{how}. Generated by tp-gen.",
            1,
            cfg.attr_text(),
            [] if layer_fn is None else layer_fn.text(),
        )

    @property
    def cache_t(self) -> TensorT:
        cfg = self.cfg
        return TensorT((cfg.batch, cfg.heads, cfg.max_positions, cfg.head_dim))

    def weight(self, name: str, shape: Sequence[int]) -> Value:
        return self.fn.arg(name, TensorT(tuple(shape), self.cfg.dtype))

    def layer_function(self) -> LayerFunction:
        """``@layer``: `layer` written once into its own function, its arguments the
        hidden state and position, then a layer's weights and caches."""
        cfg, fn = self.cfg, LayerFunction()
        x = fn.arg("hidden_states", TensorT((cfg.batch, cfg.hidden)))
        pos = fn.arg("position", "i64")
        p = "h.0."
        w = {
            name[len(p) :]: fn.arg(name[len(p) :], TensorT(shape, cfg.dtype))
            for name, shape in weight_names(cfg, 0).items()
        }
        past_k, past_v = fn.arg("past_key", self.cache_t), fn.arg("past_value", self.cache_t)
        outer, self.e = self.e, fn.e
        try:
            fn.results = list(self.layer("l", x, pos, w, past_k, past_v))
        finally:
            self.e = outer
        return fn

    def layer(
        self, t: str, x: Value, pos: Value, w: dict[str, Value], past_k: Value, past_v: Value
    ) -> tuple[Value, Value, Value]:
        """One layer on ``x`` into the current emitter (`layer`)."""
        return layer(self.e, self.cfg, t, x, pos, w, past_k, past_v)


def layer(
    e: Emitter,
    cfg: GPT2Config,
    t: str,
    x: Value,
    pos: Value,
    w: dict[str, Value],
    past_k: Value,
    past_v: Value,
) -> tuple[Value, Value, Value]:
    """One GPT-2 layer on ``x`` into ``e``, its values named ``{t}_…``: the new hidden state
    and the two updated caches. ``x`` is a decode stack's ``[b, h]`` or a whole model's
    tokens ``[b, s, h]`` at positions ``pos ..``; ``w`` holds the layer's weights by their
    names within the layer (``ln_1.weight``)."""
    xt = x.type
    assert isinstance(xt, TensorT)
    rows = xt.shape[:-1]
    tokens = len(rows) == 2
    h, d, heads = cfg.hidden, cfg.head_dim, cfg.heads

    xn = layer_norm(e, f"{t}_ln_1", x, w["ln_1.weight"], w["ln_1.bias"], cfg.eps)
    idx = e.bind(f"{t}_pos", "index", f"arith.index_cast {pos} : i64 to index")
    # One Conv1D gives q, k and v side by side: columns [0, h), [h, 2h), [2h, 3h).
    qkv = linear(
        e,
        f"{t}_c_attn",
        xn,
        w["attn.c_attn.weight"],
        TensorT((*rows, 3 * h)),
        IN_OUT,
        w["attn.c_attn.bias"],
        f"{t}_qkv",
    )
    q2, k2, v2 = split_cols(e, t, qkv, [h, h, h], ["q", "k", "v"])
    # Every head its own KV head (g = 1): the same [b, k, g, d] layout as Qwen3's GQA; a
    # whole model's keys [b, s, k, d] are laid out heads-first as the cache holds them.
    kv_shape = (*rows, heads, d) if tokens else (*rows, heads, 1, d)
    q4 = expand(e, f"{t}_q4", q2, (*rows, heads, 1, d))
    k4 = expand(e, f"{t}_k4", k2, kv_shape)
    v4 = expand(e, f"{t}_v4", v2, kv_shape)
    if tokens:
        k4 = heads_first(e, f"{t}_k_heads", k4)
        v4 = heads_first(e, f"{t}_v_heads", v4)
    kc = cache_write(e, f"{t}_present_k", k4, past_k, idx)
    vc = cache_write(e, f"{t}_present_v", v4, past_v, idx)
    attn = attention(e, t, q4, kc, vc, idx)
    flat = collapse_heads(e, f"{t}_attn_flat", attn)
    out = linear(
        e,
        f"{t}_attn_c_proj",
        flat,
        w["attn.c_proj.weight"],
        TensorT((*rows, h)),
        IN_OUT,
        w["attn.c_proj.bias"],
        f"{t}_attn_out",
    )
    x = residual(e, f"{t}_attn_res", x, out)

    xn2 = layer_norm(e, f"{t}_ln_2", x, w["ln_2.weight"], w["ln_2.bias"], cfg.eps)
    fc = linear(
        e,
        f"{t}_c_fc",
        xn2,
        w["mlp.c_fc.weight"],
        TensorT((*rows, cfg.intermediate)),
        IN_OUT,
        w["mlp.c_fc.bias"],
        f"{t}_fc",
    )
    act = gelu_tanh(e, f"{t}_gelu", fc)
    mlp = linear(
        e,
        f"{t}_mlp_c_proj",
        act,
        w["mlp.c_proj.weight"],
        TensorT((*rows, h)),
        IN_OUT,
        w["mlp.c_proj.bias"],
        f"{t}_mlp_out",
    )
    return residual(e, f"{t}_out", x, mlp), kc, vc
