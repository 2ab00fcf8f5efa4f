"""The whole-model step programs of the Llama family (Hugging Face ``model_type`` llama,
mistral, qwen2, qwen3), unsharded: ``@prefill`` (a prompt of S ids at positions ``0 ..``) and
``@decode`` (one id at ``position``), each one module whose entry calls one outlined
``func.func private @layer`` (`tp_dialect.frontend.decoder`) once per layer.

Ports (issue 24, section 1): ``input_ids [B, S] i64``, ``position i64``; the checkpoint's
tensors by their Hugging Face names (``model.embed_tokens.weight``, ``model.layers.{i}.…``,
``model.norm.weight``, ``lm_head.weight`` unless the head is tied to the embedding: one
tensor, two uses); caches ``past_key.{i}``/``past_value.{i}`` ``[B, kv, P, head_dim]``.
Results: ``next_ids [B] i64`` (the greedy token after the last position), with ``logits``
also ``logits [B, V] f32``, then ``present_key.{i}``/``present_value.{i}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from xdsl.ir import Attribute

from tp_dialect.frontend.blocks import (
    DecodeFunction,
    GenError,
    config_attr_text,
    config_fields,
    last_row,
)
from tp_dialect.frontend.bounds import check_config
from tp_dialect.frontend.decoder import LayerShape, layer, weight_names
from tp_dialect.frontend.emitter import TensorT, Value
from tp_dialect.frontend.hf_config import Fields
from tp_dialect.frontend.lm import LM, Step, embedding, finish_step
from tp_dialect.frontend.norms import RopeScaling, inv_freq, rms_norm, rope_tables
from tp_dialect.frontend.outline import LayerFunction, call_layer


@dataclass(frozen=True)
class LlamaModel:
    """A Llama-family model's numbers as the writer needs them (read from a Hugging Face
    config by `tp_dialect.frontend.hf_config`), with the switches that tell the members apart.
    ``window`` 0: no sliding window; ``rope_kind`` none, linear or llama3."""

    model_type: str
    vocab: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    layers: int
    eps: float
    theta: float
    tied: bool
    dtype: str = "f32"
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    window: int = 0
    rope_kind: str = "none"
    rope_factor: float = 1.0
    rope_low: float = 1.0
    rope_high: float = 4.0
    rope_original: int = 8192

    def inv_freq(self) -> list[float]:
        """RoPE's inverse frequencies with this model's ``rope_scaling`` folded in."""
        scaling = None
        if self.rope_kind != "none":
            scaling = RopeScaling(
                self.rope_kind, self.rope_factor, self.rope_low, self.rope_high, self.rope_original
            )
        return inv_freq(self.head_dim, self.theta, scaling)

    def layer_shape(self, step: Step) -> LayerShape:
        """One layer of this model in ``step``: its dims, switches and token count."""
        window = self.window if 0 < self.window < step.max_positions else None
        return LayerShape(
            batch=step.batch,
            hidden=self.hidden,
            heads=self.heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            intermediate=self.intermediate,
            max_positions=step.max_positions,
            eps=self.eps,
            dtype=self.dtype,
            tokens=step.tokens,
            qkv_bias=self.qkv_bias,
            o_bias=self.o_bias,
            mlp_bias=self.mlp_bias,
            qk_norm=self.qk_norm,
            window=window,
        )

    def tensors(self) -> dict[str, tuple[int, ...]]:
        """Every checkpoint tensor the program reads, by Hugging Face name, in port order."""
        out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (self.vocab, self.hidden)}
        names = weight_names(self.layer_shape(Step()))
        for i in range(self.layers):
            out.update({f"model.layers.{i}.{n}": s for n, s in names.items()})
        out["model.norm.weight"] = (self.hidden,)
        if not self.tied:
            out["lm_head.weight"] = (self.vocab, self.hidden)
        return out

    def check(self, step: Step) -> None:
        """Refuse, naming the reason, a model or step that cannot be written."""
        step.check()
        sizes = {
            name: getattr(self, name)
            for name in ("vocab", "hidden", "heads", "kv_heads", "head_dim", "intermediate")
        }
        sizes.update(layers=self.layers, batch=step.batch, max_positions=step.max_positions)
        b, s, p = step.batch, step.tokens, step.max_positions
        check_config(
            sizes,
            lambda: {
                **self.tensors(),
                "cache": (b, self.kv_heads, p, self.head_dim),
                "scores": (b, self.heads, s, p),
                "mlp": (b, s, self.intermediate),
                "logits": (b, self.vocab),
            },
            lambda: {"inv_freq": self.head_dim // 2},
        )
        if self.heads % self.kv_heads:
            raise GenError(
                f"num_key_value_heads ({self.kv_heads}) must divide num_attention_heads "
                f"({self.heads})"
            )
        if self.head_dim % 2:
            raise GenError(f"head_dim ({self.head_dim}) must be even for rotate-half RoPE")
        if self.dtype not in ("f32", "bf16", "f16"):
            raise GenError(f"dtype must be f32, bf16 or f16, got {self.dtype}")

    def attr_text(self, step: Step) -> str:
        """The model and step as the module's ``tp.config`` (``family = "llama"``)."""
        return config_attr_text({**asdict(self), **asdict(step), "family": "llama"})

    @classmethod
    def from_fields(cls, fields: dict[str, object]) -> tuple[LlamaModel, Step]:
        """The model and step a recorded ``tp.config`` (as `attr_text` wrote it) names."""
        rest = {k: v for k, v in fields.items() if k != "family"}
        step = {k: rest.pop(k) for k in ("kind", "tokens", "batch", "max_positions", "logits")}
        return cls(**rest), Step(**step)  # type: ignore[arg-type]


def generate(model: LlamaModel, step: Step) -> str:
    """The unsharded ``step`` program of ``model`` as MLIR text (see the module docstring).
    Raises GenError for a model or step `LlamaModel.check` refuses."""
    model.check(step)
    return _Writer(model, step).module()


def from_attr(attr: Attribute) -> tuple[LlamaModel, Step]:
    """The model and step a generated module recorded in ``tp.config``."""
    try:
        return LlamaModel.from_fields(config_fields(attr))
    except KeyError as err:
        raise GenError(f"tp.config does not describe a Llama-family step: no {err}") from None
    except TypeError as err:
        raise GenError(f"tp.config does not describe a Llama-family step: {err}") from None


class _Writer:
    def __init__(self, model: LlamaModel, step: Step) -> None:
        self.m, self.step = model, step
        self.shape = model.layer_shape(step)
        self.fn = DecodeFunction(LM, entry=step.kind)
        self.e = self.fn.e

    def module(self) -> str:
        m, st, fn, e = self.m, self.step, self.fn, self.e
        ids = fn.arg("input_ids", TensorT((st.batch, st.tokens), "i64"))
        pos = fn.arg("position", "i64")
        table = self.weight("model.embed_tokens.weight")
        x = embedding(e, "embed", ids, table)
        tables = rope_tables(e, pos, m.inv_freq(), st.tokens)
        layer_fn = self.layer_function()
        presents: list[tuple[Value, str]] = []
        for i in range(m.layers):
            e.comment(f"---- layer {i} ----")
            p = f"model.layers.{i}."
            w = [self.weight(p + n) for n in weight_names(self.shape)]
            past_k = fn.arg(f"past_key.{i}", self.shape.cache)
            past_v = fn.arg(f"past_value.{i}", self.shape.cache)
            hints = [f"l{i}_{n}" for n in ("out", "present_key", "present_value")]
            x, k, v = call_layer(e, layer_fn, [x, pos, *tables, *w, past_k, past_v], hints, i)
            presents += [(k, f"present_key.{i}"), (v, f"present_value.{i}")]
        last = last_row(e, "last", x)
        normed = rms_norm(e, "final_norm", last, self.weight("model.norm.weight"), m.eps)
        head = table if m.tied else self.weight("lm_head.weight")
        return finish_step(
            fn,
            e,
            normed,
            head,
            st,
            presents,
            m.model_type,
            m.layers,
            m.attr_text(st),
            layer_fn.text(),
        )

    def weight(self, name: str) -> Value:
        return self.fn.arg(name, TensorT(self._shapes[name], self.m.dtype))

    @property
    def _shapes(self) -> dict[str, tuple[int, ...]]:
        if not hasattr(self, "_tensor_shapes"):
            self._tensor_shapes = self.m.tensors()
        return self._tensor_shapes

    def layer_function(self) -> LayerFunction:
        """``@layer``: one layer written once, its arguments the hidden state, position and
        RoPE tables, then a layer's weights and caches."""
        s, fn = self.shape, LayerFunction()
        x = fn.arg("hidden_states", TensorT((*s.rows, s.hidden)))
        pos = fn.arg("position", "i64")
        half = TensorT((self.step.tokens, s.head_dim // 2))
        tables = (fn.arg("rope_cos", half), fn.arg("rope_sin", half))
        w = {n: fn.arg(n, TensorT(shape, s.dtype)) for n, shape in weight_names(s).items()}
        past_k, past_v = fn.arg("past_key", s.cache), fn.arg("past_value", s.cache)
        fn.results = list(layer(fn.e, s, "l", x, pos, tables, w, past_k, past_v))
        return fn


# transformers 4.51.3's config-class defaults of the fields `from_hf` reads.
_DEFAULTS: dict[str, Any] = {
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "use_sliding_window": False,
    "max_window_layers": 28,
}
_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": _DEFAULTS,
    "mistral": {**_DEFAULTS, "sliding_window": 4096},
    "qwen2": _DEFAULTS,
    "qwen3": {**_DEFAULTS, "head_dim": 128},
}
MODEL_TYPES = tuple(_CLASS_DEFAULTS)
_ROPE_KEYS = {
    "linear": ("factor",),
    "llama3": (
        "factor",
        "low_freq_factor",
        "high_freq_factor",
        "original_max_position_embeddings",
    ),
}


def from_hf(config: Mapping[str, Any]) -> LlamaModel:
    """The model a Llama-family ``config.json`` describes. Raises GenError naming a field
    that is not understood, or a value tp does not implement."""
    model_type = str(config["model_type"])
    f = Fields(config, _CLASS_DEFAULTS[model_type])
    heads = f.integer("num_attention_heads")
    hidden = f.integer("hidden_size")
    kv = f.integer("num_key_value_heads") if f.has("num_key_value_heads") else heads
    f.read.add("num_key_value_heads")
    if f.has("head_dim") or model_type == "qwen3":
        head_dim = f.integer("head_dim")
    else:
        f.read.add("head_dim")
        head_dim = hidden // heads
    f.one_of("hidden_act", ("silu",), "the Llama family's MLP is SiLU-gated")
    attention_bias = f.flag("attention_bias") if model_type in ("llama", "qwen3") else False
    mlp_bias = f.flag("mlp_bias") if model_type == "llama" else False
    layers = f.integer("num_hidden_layers")
    model = LlamaModel(
        model_type=model_type,
        vocab=f.integer("vocab_size"),
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate=f.integer("intermediate_size"),
        layers=layers,
        eps=f.number("rms_norm_eps"),
        theta=f.number("rope_theta"),
        tied=f.flag("tie_word_embeddings"),
        dtype=f.dtype(),
        qkv_bias=model_type == "qwen2" or attention_bias,
        o_bias=attention_bias,
        mlp_bias=mlp_bias,
        qk_norm=model_type == "qwen3",
        window=_window(f, model_type, layers),
        **_rope_scaling(f),
    )
    f.refuse_rest(model_type)
    return model


def _window(f: Fields, model_type: str, layers: int) -> int:
    """The sliding window every layer keeps (0: none). Mistral's applies to every layer;
    Qwen2's and Qwen3's (``use_sliding_window``) to layers from ``max_window_layers`` on,
    which one outlined ``@layer`` cannot hold unless that is every layer or none."""
    if model_type == "mistral":
        return f.integer("sliding_window") if f.get("sliding_window") is not None else 0
    if model_type not in ("qwen2", "qwen3"):
        return 0
    # without use_sliding_window, neither the window nor its first layer is read
    f.read.update(("sliding_window", "max_window_layers"))
    if not f.flag("use_sliding_window"):
        return 0
    first = f.get("max_window_layers")
    if not isinstance(first, int) or isinstance(first, bool) or first < 0:
        raise GenError(f"config field 'max_window_layers' must be an integer, got {first!r}")
    if first >= layers:
        return 0
    if first > 0:
        raise GenError(
            f"config field 'use_sliding_window' with 'max_window_layers' = {first} is not "
            f"understood: a window on layers {first}.. only (tp's layers are one function)"
        )
    return f.integer("sliding_window")


def _rope_scaling(f: Fields) -> dict[str, Any]:
    """The `LlamaModel` fields of ``rope_scaling`` (none, ``linear``, ``llama3``)."""
    scaling = f.get("rope_scaling")
    if scaling is None:
        return {}
    if not isinstance(scaling, dict):
        raise GenError(f"config field 'rope_scaling' must be an object or null, got {scaling!r}")
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return {}
    if kind not in _ROPE_KEYS:
        raise GenError(
            f"config field 'rope_scaling' of type {kind!r} is not understood "
            "(tp implements none, 'default', 'linear' and 'llama3')"
        )
    extra = sorted(set(scaling) - {"rope_type", "type", *_ROPE_KEYS[kind]})
    if extra:
        raise GenError(f"config field 'rope_scaling.{extra[0]}' is not understood")
    sub = Fields(scaling, {})
    out: dict[str, Any] = {"rope_kind": kind, "rope_factor": sub.number("factor")}
    if kind == "llama3":
        out.update(
            rope_low=sub.number("low_freq_factor"),
            rope_high=sub.number("high_freq_factor"),
            rope_original=sub.integer("original_max_position_embeddings"),
        )
        if out["rope_low"] >= out["rope_high"]:
            raise GenError("config field 'rope_scaling': low_freq_factor must be below high")
    return out
