"""The whole-model step programs of GPT-2 (``GPT2LMHeadModel``), unsharded: ``@prefill`` and
``@decode`` as `tp_dialect.frontend.llama` writes them for the Llama family (same ports, same
results, one outlined ``@layer``), with GPT-2's pieces: token plus learned position
embeddings, the pre-LayerNorm layer of `tp_dialect.frontend.gpt2`, the final ``ln_f`` and
the head tied to ``transformer.wte.weight`` (or ``lm_head.weight`` when untied).

Weights keep ``GPT2LMHeadModel``'s names (``transformer.h.{i}.…``), Conv1D ``[in, out]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from xdsl.ir import Attribute

from tp_dialect.frontend import gpt2
from tp_dialect.frontend.blocks import (
    DecodeFunction,
    GenError,
    config_attr_text,
    config_fields,
    last_row,
    residual,
)
from tp_dialect.frontend.bounds import check_config
from tp_dialect.frontend.emitter import TensorT, Value
from tp_dialect.frontend.hf_config import Fields
from tp_dialect.frontend.lm import LM, Step, embedding, finish_step, position_embedding
from tp_dialect.frontend.norms import layer_norm
from tp_dialect.frontend.outline import LayerFunction, call_layer

MODEL_TYPES = ("gpt2",)


@dataclass(frozen=True)
class GPT2Model:
    """A GPT-2's numbers as the writer needs them (`from_hf` reads them from a config)."""

    vocab: int
    positions: int  # n_positions: the rows of transformer.wpe.weight
    hidden: int
    heads: int
    intermediate: int
    layers: int
    eps: float
    tied: bool = True
    dtype: str = "f32"
    model_type: str = "gpt2"

    def layer_config(self, step: Step) -> gpt2.GPT2Config:
        """One layer's dims in ``step`` (`tp_dialect.frontend.gpt2.layer` reads them)."""
        return gpt2.GPT2Config(
            hidden=self.hidden,
            heads=self.heads,
            intermediate=self.intermediate,
            layers=self.layers,
            batch=step.batch,
            max_positions=step.max_positions,
            eps=self.eps,
            dtype=self.dtype,
        )

    def tensors(self) -> dict[str, tuple[int, ...]]:
        """Every checkpoint tensor the program reads, by Hugging Face name, in port order."""
        out: dict[str, tuple[int, ...]] = {
            "transformer.wte.weight": (self.vocab, self.hidden),
            "transformer.wpe.weight": (self.positions, self.hidden),
        }
        cfg = self.layer_config(Step())
        for i in range(self.layers):
            for name, shape in gpt2.weight_names(cfg, i).items():
                out["transformer." + name] = shape
        out["transformer.ln_f.weight"] = (self.hidden,)
        out["transformer.ln_f.bias"] = (self.hidden,)
        if not self.tied:
            out["lm_head.weight"] = (self.vocab, self.hidden)
        return out

    def check(self, step: Step) -> None:
        """Refuse, naming the reason, a model or step that cannot be written."""
        step.check()
        sizes = {n: getattr(self, n) for n in ("vocab", "positions", "hidden", "heads")}
        sizes.update(
            intermediate=self.intermediate,
            layers=self.layers,
            batch=step.batch,
            max_positions=step.max_positions,
        )
        b, s, p = step.batch, step.tokens, step.max_positions
        check_config(
            sizes,
            lambda: {
                **self.tensors(),
                "scores": (b, self.heads, s, p),
                "mlp": (b, s, self.intermediate),
                "logits": (b, self.vocab),
            },
        )
        if self.hidden % self.heads:
            raise GenError(f"n_head ({self.heads}) must divide n_embd ({self.hidden})")
        if step.max_positions > self.positions:
            raise GenError(
                f"max positions {step.max_positions} is above n_positions {self.positions}: "
                "GPT-2 has no learned position beyond it"
            )
        if self.dtype not in ("f32", "bf16", "f16"):
            raise GenError(f"dtype must be f32, bf16 or f16, got {self.dtype}")

    def attr_text(self, step: Step) -> str:
        """The model and step as the module's ``tp.config`` (``family = "gpt2_lm"``)."""
        return config_attr_text({**asdict(self), **asdict(step), "family": "gpt2_lm"})


def generate(model: GPT2Model, step: Step) -> str:
    """The unsharded ``step`` program of ``model`` as MLIR text (module docstring).
    Raises GenError for a model or step `GPT2Model.check` refuses."""
    model.check(step)
    return _Writer(model, step).module()


def from_attr(attr: Attribute) -> tuple[GPT2Model, Step]:
    """The model and step a generated module recorded in ``tp.config``."""
    fields = {k: v for k, v in config_fields(attr).items() if k != "family"}
    try:
        step = {k: fields.pop(k) for k in ("kind", "tokens", "batch", "max_positions", "logits")}
        return GPT2Model(**fields), Step(**step)  # type: ignore[arg-type]
    except KeyError as err:
        raise GenError(f"tp.config does not describe a GPT-2 step: no {err}") from None
    except TypeError as err:
        raise GenError(f"tp.config does not describe a GPT-2 step: {err}") from None


_DEFAULTS: dict[str, Any] = {
    "n_inner": None,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-5,
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "tie_word_embeddings": True,
}


def from_hf(config: Mapping[str, Any]) -> GPT2Model:
    """The model a GPT-2 ``config.json`` describes. Raises GenError naming a field that is
    not understood, or a value tp does not implement."""
    f = Fields(config, _DEFAULTS)
    hidden = f.integer("n_embd")
    inner = f.integer("n_inner") if f.has("n_inner") else 4 * hidden
    f.read.add("n_inner")
    f.one_of("activation_function", ("gelu_new", "gelu_pytorch_tanh"), "GPT-2's MLP is tanh-GELU")
    f.one_of("scale_attn_weights", (True,), "scores are scaled by 1/sqrt(head_dim)")
    f.one_of("scale_attn_by_inverse_layer_idx", (False,), "every layer's scores alike")
    model = GPT2Model(
        vocab=f.integer("vocab_size"),
        positions=f.integer("n_positions"),
        hidden=hidden,
        heads=f.integer("n_head"),
        intermediate=inner,
        layers=f.integer("n_layer"),
        eps=f.number("layer_norm_epsilon"),
        tied=f.flag("tie_word_embeddings"),
        dtype=f.dtype(),
    )
    f.refuse_rest("gpt2")
    return model


class _Writer:
    def __init__(self, model: GPT2Model, step: Step) -> None:
        self.m, self.step = model, step
        self.cfg = model.layer_config(step)
        self.fn = DecodeFunction(LM, entry=step.kind)
        self.e = self.fn.e
        self.shapes = model.tensors()

    @property
    def cache_t(self) -> TensorT:
        m, st = self.m, self.step
        return TensorT((st.batch, m.heads, st.max_positions, m.hidden // m.heads))

    def weight(self, name: str) -> Value:
        return self.fn.arg(name, TensorT(self.shapes[name], self.m.dtype))

    def module(self) -> str:
        m, st, fn, e = self.m, self.step, self.fn, self.e
        ids = fn.arg("input_ids", TensorT((st.batch, st.tokens), "i64"))
        pos = fn.arg("position", "i64")
        wte = self.weight("transformer.wte.weight")
        wpe = self.weight("transformer.wpe.weight")
        tok = embedding(e, "embed", ids, wte)
        x = residual(e, "embed_pos", tok, position_embedding(e, "pos_embed", ids, pos, wpe))
        layer_fn = self.layer_function()
        presents: list[tuple[Value, str]] = []
        for i in range(m.layers):
            e.comment(f"---- layer {i} ----")
            w = [self.weight("transformer." + n) for n in gpt2.weight_names(self.cfg, i)]
            past_k = fn.arg(f"past_key.{i}", self.cache_t)
            past_v = fn.arg(f"past_value.{i}", self.cache_t)
            hints = [f"l{i}_{n}" for n in ("out", "present_key", "present_value")]
            x, k, v = call_layer(e, layer_fn, [x, pos, *w, past_k, past_v], hints, i)
            presents += [(k, f"present_key.{i}"), (v, f"present_value.{i}")]
        last = last_row(e, "last", x)
        normed = layer_norm(
            e,
            "ln_f",
            last,
            self.weight("transformer.ln_f.weight"),
            self.weight("transformer.ln_f.bias"),
            m.eps,
        )
        head = wte if m.tied else self.weight("lm_head.weight")
        return finish_step(
            fn, e, normed, head, st, presents, "gpt2", m.layers, m.attr_text(st), layer_fn.text()
        )

    def layer_function(self) -> LayerFunction:
        """``@layer``: one GPT-2 layer written once, its arguments the hidden state and
        position, then a layer's weights and caches."""
        cfg, st, fn = self.cfg, self.step, LayerFunction()
        x = fn.arg("hidden_states", TensorT((st.batch, st.tokens, cfg.hidden)))
        pos = fn.arg("position", "i64")
        p = "h.0."
        w = {
            n[len(p) :]: fn.arg(n[len(p) :], TensorT(shape, cfg.dtype))
            for n, shape in gpt2.weight_names(cfg, 0).items()
        }
        past_k, past_v = fn.arg("past_key", self.cache_t), fn.arg("past_value", self.cache_t)
        fn.results = list(gpt2.layer(fn.e, cfg, "l", x, pos, w, past_k, past_v))
        return fn
