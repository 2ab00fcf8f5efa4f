"""Independent plain-numpy greedy generation of Hugging Face ``*ForCausalLM`` models.

Reads a model directory (``config.json``, ``generation_config.json`` when present, and
``model.safetensors`` or ``model.safetensors.index.json`` with its shards) with json and
safetensors only, and runs the model as transformers' modeling files define it:

- ``llama``, ``mistral``, ``qwen2``, ``qwen3`` (``modeling_llama/mistral/qwen2/qwen3``): token
  embedding; per layer RMSNorm, q/k/v projections (biases: qwen2 always on q/k/v; llama and
  qwen3 with ``attention_bias`` on q/k/v/o; llama's ``mlp_bias`` on the MLP), qwen3's per-head
  q_norm/k_norm, rotate-half RoPE (``rope_theta``; ``rope_scaling`` none/``default``,
  ``linear``, ``llama3``), grouped-query attention (query head h reads KV head
  ``h // (heads // kv_heads)``, as ``repeat_kv``), a causal mask (with mistral's
  ``sliding_window`` on every layer, qwen2/qwen3's on layers ``>= max_window_layers`` when
  ``use_sliding_window``: key j is seen from query i iff ``i - window < j <= i``), SiLU-gated
  MLP; final RMSNorm; ``lm_head`` or the tied embedding;
- ``gpt2`` (``modeling_gpt2``, ``GPT2LMHeadModel``): token + learned position embeddings,
  LayerNorm, Conv1D (``x @ W + b`` with W ``[in, out]``), causal attention scaled by
  ``1/sqrt(head_dim)`` (and ``1/(layer+1)`` with ``scale_attn_by_inverse_layer_idx``), the
  ``activation_function`` (``gelu_new``: tanh GELU), final LayerNorm, head tied to ``wte``.

Fields absent from ``config.json`` take the config class's defaults (transformers 4.51.3).

``generate`` is ``model.generate(input_ids, do_sample=False, max_new_tokens=K)`` of a model
loaded by ``from_pretrained`` (whose default is float32: bf16/f16 weights are widened): one
prefill of the prompt, then one decode step per token with a KV cache; each step's token is the
argmax of the last position's logits (the first index of the maximum); once a row has produced
an ``eos_token_id`` it produces ``pad_token_id`` (eos when there is none) and generation ends
when every row has stopped.  Arithmetic is float32 (``dtype=np.float64`` for checks).

This module imports nothing from the project: it is the tests' independent ground truth.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file

__all__ = [
    "Reference",
    "apply_rope",
    "gelu_tanh",
    "generate",
    "inv_freq",
    "layer_norm",
    "load_tensors",
    "margin",
    "repeat_kv",
    "rms_norm",
    "rotate_half",
    "visible",
]

LLAMA_FAMILY = ("llama", "mistral", "qwen2", "qwen3")

# Config class defaults (transformers 4.51.3) of the fields the forward pass reads.
_LLAMA_DEFAULTS: dict[str, Any] = {
    "bos_token_id": None,
    "eos_token_id": None,
    "pad_token_id": None,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "sliding_window": None,
    "use_sliding_window": False,
    "max_window_layers": 28,
}
_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {**_LLAMA_DEFAULTS, "bos_token_id": 1, "eos_token_id": 2},
    "mistral": {**_LLAMA_DEFAULTS, "bos_token_id": 1, "eos_token_id": 2, "sliding_window": 4096},
    "qwen2": {**_LLAMA_DEFAULTS, "sliding_window": 4096},
    "qwen3": {**_LLAMA_DEFAULTS, "sliding_window": 4096, "head_dim": 128},
    "gpt2": {
        "n_inner": None,
        "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5,
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "tie_word_embeddings": True,
        "bos_token_id": 50256,
        "eos_token_id": 50256,
        "pad_token_id": None,
    },
}
_PREFIX = {"llama": "model.", "mistral": "model.", "qwen2": "model.", "qwen3": "model."}
_PREFIX["gpt2"] = "transformer."


# ----------------------------------------------------------------------------- pieces


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Return ``weight * x / sqrt(mean(x**2, last axis) + eps)`` in ``x``'s dtype."""
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return weight * (x / np.sqrt(variance + x.dtype.type(eps)))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Return ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (biased var)."""
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean(np.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + x.dtype.type(eps)) * weight + bias


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """Return ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (``gelu_new``)."""
    c = x.dtype.type(math.sqrt(2.0 / math.pi))
    return x.dtype.type(0.5) * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x**3)))


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1 + np.exp(-x))


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


_ACTIVATIONS = {
    "silu": _silu,
    "swish": _silu,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "gelu": _gelu_erf,
    "relu": lambda x: np.maximum(x, 0),
}


def inv_freq(head_dim: int, theta: float, scaling: dict[str, Any] | None, dtype: Any) -> np.ndarray:
    """Return RoPE's ``head_dim // 2`` inverse frequencies ``theta ** (-2i / head_dim)`` after
    ``rope_scaling`` (``linear``: divided by ``factor``; ``llama3``: long wavelengths divided
    by ``factor``, short ones kept, the band between interpolated), as ``_compute_*_parameters``
    of ``modeling_rope_utils`` compute them."""
    exponents = np.arange(0, head_dim, 2).astype(dtype) / dtype(head_dim)
    inv = (dtype(1.0) / (dtype(theta) ** exponents)).astype(dtype)
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return inv
    if kind == "linear":
        return (inv / dtype(scaling["factor"])).astype(dtype)
    if kind == "llama3":
        factor = float(scaling["factor"])
        low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
        old_len = float(scaling["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        low_wavelen, high_wavelen = old_len / low, old_len / high
        scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return np.where(medium, smoothed, scaled).astype(dtype)
    raise ValueError(f"rope_scaling type {kind!r} is not implemented by the reference")


def rotate_half(t: np.ndarray) -> np.ndarray:
    """Return ``concat(-t[..., half:], t[..., :half])`` along the last axis."""
    half = t.shape[-1] // 2
    return np.concatenate([-t[..., half:], t[..., :half]], axis=-1)


def apply_rope(t: np.ndarray, positions: np.ndarray, inv: np.ndarray) -> np.ndarray:
    """Return ``t * cos + rotate_half(t) * sin`` with angles ``position * inv_freq`` repeated
    over both halves; ``t`` is ``[..., T, head_dim]``, ``positions`` ``[T]``."""
    freqs = positions.astype(inv.dtype)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return t * np.cos(emb).astype(t.dtype) + rotate_half(t) * np.sin(emb).astype(t.dtype)


def repeat_kv(kv: np.ndarray, groups: int) -> np.ndarray:
    """Return ``[B, kv_heads * groups, T, D]``: each KV head repeated ``groups`` times in a row
    (query head h reads KV head ``h // groups``)."""
    return np.repeat(kv, groups, axis=1)


def visible(queries: np.ndarray, keys: int, window: int | None) -> np.ndarray:
    """Return the ``[T, keys]`` mask of which key positions each query position sees:
    ``j <= i``, and ``j > i - window`` with a sliding window."""
    j = np.arange(keys)[None, :]
    i = queries[:, None]
    seen = j <= i
    if window is not None:
        seen &= j > i - window
    return seen


def _attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, scale: float
) -> np.ndarray:
    """Softmax attention of ``q [B, H, T, D]`` over ``k, v [B, H, L, D]`` under ``mask [T, L]``."""
    scores = (q @ np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    scores = np.where(mask, scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (scores / scores.sum(axis=-1, keepdims=True)) @ v


# ----------------------------------------------------------------------------- loading


def load_tensors(model_dir: str | Path) -> dict[str, np.ndarray]:
    """Return every tensor of the directory's checkpoint as stored (single file or sharded
    index: each ``weight_map`` entry read from its shard, each shard holding exactly its
    entries)."""
    root = Path(model_dir)
    index = root / "model.safetensors.index.json"
    if not index.exists():
        return dict(load_file(str(root / "model.safetensors")))
    weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
    out: dict[str, np.ndarray] = {}
    for file in sorted(set(weight_map.values())):
        shard = load_file(str(root / file))
        want = {name for name, f in weight_map.items() if f == file}
        if set(shard) != want:
            raise ValueError(f"{file} holds {sorted(shard)}, the index maps {sorted(want)}")
        out.update(shard)
    return out


@dataclass
class _Config:
    model_type: str
    fields: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        if key in self.fields:
            return self.fields[key]
        return _CLASS_DEFAULTS[self.model_type][key]


# ----------------------------------------------------------------------------- families

Cache = list[tuple[np.ndarray, np.ndarray]]  # per layer (keys, values) [B, kv_heads, L, D]


class _Llama:
    """The llama/mistral/qwen2/qwen3 decoder as ``*ForCausalLM`` computes it."""

    def __init__(self, cfg: _Config, w: dict[str, np.ndarray], dtype: Any) -> None:
        kind = cfg.model_type
        self.w, self.dtype = w, dtype
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.fields.get("num_key_value_heads") or self.heads
        self.head_dim = cfg.fields.get("head_dim") or cfg["hidden_size"] // self.heads
        if kind == "qwen3":
            self.head_dim = cfg["head_dim"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = float(cfg["rms_norm_eps"])
        self.qk_norm = kind == "qwen3"
        self.qkv_bias = kind == "qwen2" or (kind in ("llama", "qwen3") and cfg["attention_bias"])
        self.o_bias = kind in ("llama", "qwen3") and bool(cfg["attention_bias"])
        self.mlp_bias = kind == "llama" and bool(cfg["mlp_bias"])
        self.act = _ACTIVATIONS[cfg["hidden_act"]]
        self.inv = inv_freq(self.head_dim, cfg["rope_theta"], cfg["rope_scaling"], dtype)
        self.windows = [self._window(cfg, i) for i in range(self.layers)]
        tied = cfg["tie_word_embeddings"]
        self.head = w["model.embed_tokens.weight" if tied else "lm_head.weight"]

    @staticmethod
    def _window(cfg: _Config, layer: int) -> int | None:
        if cfg.model_type == "mistral":
            return cfg["sliding_window"]
        if cfg.model_type in ("qwen2", "qwen3"):
            if "layer_types" in cfg.fields:
                sliding = cfg.fields["layer_types"][layer] == "sliding_attention"
            else:
                sliding = cfg["use_sliding_window"] and layer >= cfg["max_window_layers"]
            return cfg["sliding_window"] if sliding else None
        return None

    def _linear(self, x: np.ndarray, name: str, bias: bool) -> np.ndarray:
        y = x @ self.w[name + ".weight"].T
        return y + self.w[name + ".bias"] if bias else y

    def embed(self, ids: np.ndarray, start: int) -> np.ndarray:
        return self.w["model.embed_tokens.weight"][ids]

    def layer(self, i: int, x: np.ndarray, start: int, cache: Cache) -> np.ndarray:
        """Decoder layer ``i`` on ``x [B, T, H]`` at positions ``start..start+T-1``, appending
        this chunk's keys (after k_norm and RoPE) and values to ``cache[i]``."""
        pre = f"model.layers.{i}."
        b, t, _ = x.shape
        positions = np.arange(start, start + t)
        h = rms_norm(x, self.w[pre + "input_layernorm.weight"], self.eps)

        def heads(name: str, n: int) -> np.ndarray:
            y = self._linear(h, pre + f"self_attn.{name}_proj", self.qkv_bias)
            y = y.reshape(b, t, n, self.head_dim)
            if self.qk_norm and name != "v":
                y = rms_norm(y, self.w[pre + f"self_attn.{name}_norm.weight"], self.eps)
            return y.transpose(0, 2, 1, 3)  # [B, n, T, D]

        q, k, v = heads("q", self.heads), heads("k", self.kv_heads), heads("v", self.kv_heads)
        q, k = apply_rope(q, positions, self.inv), apply_rope(k, positions, self.inv)
        past_k, past_v = cache[i]
        keys, values = np.concatenate([past_k, k], axis=2), np.concatenate([past_v, v], axis=2)
        cache[i] = (keys, values)
        groups = self.heads // self.kv_heads
        mask = visible(positions, keys.shape[2], self.windows[i])
        a = _attention(
            q, repeat_kv(keys, groups), repeat_kv(values, groups), mask, self.head_dim**-0.5
        )
        a = a.transpose(0, 2, 1, 3).reshape(b, t, self.heads * self.head_dim)
        x = x + self._linear(a, pre + "self_attn.o_proj", self.o_bias)
        h = rms_norm(x, self.w[pre + "post_attention_layernorm.weight"], self.eps)
        gate = self.act(self._linear(h, pre + "mlp.gate_proj", self.mlp_bias))
        up = self._linear(h, pre + "mlp.up_proj", self.mlp_bias)
        return x + self._linear(gate * up, pre + "mlp.down_proj", self.mlp_bias)

    def logits(self, x: np.ndarray) -> np.ndarray:
        return rms_norm(x, self.w["model.norm.weight"], self.eps) @ self.head.T

    def empty_cache(self, batch: int) -> Cache:
        z = np.zeros((batch, self.kv_heads, 0, self.head_dim), self.dtype)
        return [(z, z) for _ in range(self.layers)]


class _Gpt2:
    """``GPT2LMHeadModel`` as ``modeling_gpt2`` computes it."""

    def __init__(self, cfg: _Config, w: dict[str, np.ndarray], dtype: Any) -> None:
        self.w, self.dtype = w, dtype
        self.hidden, self.heads = cfg["n_embd"], cfg["n_head"]
        self.head_dim = self.hidden // self.heads
        self.layers, self.positions = cfg["n_layer"], cfg["n_positions"]
        self.eps = float(cfg["layer_norm_epsilon"])
        self.act = _ACTIVATIONS[cfg["activation_function"]]
        self.scale = self.head_dim**-0.5 if cfg["scale_attn_weights"] else 1.0
        self.by_layer = bool(cfg["scale_attn_by_inverse_layer_idx"])
        tied = cfg["tie_word_embeddings"]
        self.head = w["transformer.wte.weight" if tied else "lm_head.weight"]

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def _conv1d(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def embed(self, ids: np.ndarray, start: int) -> np.ndarray:
        if start + ids.shape[1] > self.positions:
            raise ValueError(
                f"positions up to {start + ids.shape[1] - 1} exceed n_positions {self.positions}"
            )
        wpe = self.w["transformer.wpe.weight"][start : start + ids.shape[1]]
        return self.w["transformer.wte.weight"][ids] + wpe[None]

    def layer(self, i: int, x: np.ndarray, start: int, cache: Cache) -> np.ndarray:
        pre = f"transformer.h.{i}."
        b, t, _ = x.shape
        qkv = self._conv1d(self._ln(x, pre + "ln_1"), pre + "attn.c_attn")
        q, k, v = (
            part.reshape(b, t, self.heads, self.head_dim).transpose(0, 2, 1, 3)
            for part in np.split(qkv, 3, axis=-1)
        )
        past_k, past_v = cache[i]
        keys, values = np.concatenate([past_k, k], axis=2), np.concatenate([past_v, v], axis=2)
        cache[i] = (keys, values)
        scale = self.scale / (i + 1) if self.by_layer else self.scale
        mask = visible(np.arange(start, start + t), keys.shape[2], None)
        a = _attention(q, keys, values, mask, scale).transpose(0, 2, 1, 3).reshape(b, t, -1)
        x = x + self._conv1d(a, pre + "attn.c_proj")
        h = self.act(self._conv1d(self._ln(x, pre + "ln_2"), pre + "mlp.c_fc"))
        return x + self._conv1d(h, pre + "mlp.c_proj")

    def logits(self, x: np.ndarray) -> np.ndarray:
        return self._ln(x, "transformer.ln_f") @ self.head.T

    def empty_cache(self, batch: int) -> Cache:
        z = np.zeros((batch, self.heads, 0, self.head_dim), self.dtype)
        return [(z, z) for _ in range(self.layers)]


# ----------------------------------------------------------------------------- the model


class Reference:
    """A model directory run as transformers runs its ``*ForCausalLM``: the same logits and
    greedy tokens, from the checkpoint's weights widened to ``dtype``."""

    def __init__(self, model_dir: str | Path, dtype: Any = np.float32) -> None:
        root = Path(model_dir)
        fields = json.loads((root / "config.json").read_text())
        kind = fields.get("model_type")
        if kind not in _CLASS_DEFAULTS:
            raise ValueError(f"model_type {kind!r} is not one of {sorted(_CLASS_DEFAULTS)}")
        self.config = _Config(kind, fields)
        self.dtype = np.dtype(dtype).type
        stored = load_tensors(root)
        # A base model's checkpoint names its tensors without the prefix; from_pretrained adds it.
        prefix = _PREFIX[kind]
        self.weights = {
            (n if n.startswith(prefix) or n == "lm_head.weight" else prefix + n): np.asarray(
                t, dtype=self.dtype
            )
            for n, t in stored.items()
        }
        model_cls = _Gpt2 if kind == "gpt2" else _Llama
        self.model: _Llama | _Gpt2 = model_cls(self.config, self.weights, self.dtype)
        self.vocab = int(fields["vocab_size"])
        # generate reads its token ids from generation_config.json when the directory has
        # one, else from the model config (GenerationConfig.from_model_config).
        gen_path = root / "generation_config.json"
        if gen_path.exists():
            gen = json.loads(gen_path.read_text())
            eos, pad = gen.get("eos_token_id"), gen.get("pad_token_id")
        else:
            eos, pad = self.config["eos_token_id"], self.config["pad_token_id"]
        self.eos: tuple[int, ...] = () if eos is None else tuple(np.atleast_1d(eos).tolist())
        self.pad_set = pad is not None
        self.pad: int | None = pad if pad is not None else (self.eos[0] if self.eos else None)

    def empty_cache(self, batch: int) -> Cache:
        """Return an empty KV cache for ``batch`` rows (``DynamicCache``: it grows per step)."""
        return self.model.empty_cache(batch)

    def forward(self, ids: np.ndarray, start: int, cache: Cache) -> np.ndarray:
        """Return the last position's logits ``[B, V]`` of ``ids [B, T]`` at positions
        ``start..start+T-1``, given ``cache`` holding positions ``< start``; the chunk's keys
        and values are appended to ``cache`` (in place)."""
        ids = np.asarray(ids, dtype=np.int64)
        if cache[0][0].shape[2] != start:
            raise ValueError(f"cache holds {cache[0][0].shape[2]} positions, start is {start}")
        x = self.model.embed(ids, start)
        for i in range(len(cache)):
            x = self.model.layer(i, x, start, cache)
        return self.model.logits(x[:, -1, :])

    def generate(
        self, prompt_ids: np.ndarray, max_new_tokens: int, *, use_cache: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(ids [B, K], logits [K, B, V])`` of greedy generation from ``prompt_ids
        [B, S]``: K <= ``max_new_tokens`` (fewer when every row stopped at eos), each step's
        logits (in the reference's dtype) those transformers computes (a stopped row keeps
        being fed its pad token).
        ``use_cache=False`` recomputes the whole sequence at every step instead."""
        prompt = np.asarray(prompt_ids)
        if prompt.ndim != 2 or prompt.shape[1] == 0 or not np.issubdtype(prompt.dtype, np.integer):
            raise ValueError(f"prompt_ids must be a non-empty [B, S] integer array: {prompt!r}")
        if prompt.min() < 0 or prompt.max() >= self.vocab:
            raise ValueError(f"prompt ids must be in [0, {self.vocab})")
        if self.pad_set and self.pad not in self.eos and (prompt == self.pad).any():
            # generate would infer an attention mask hiding these positions (left padding).
            raise ValueError(f"prompt holds pad_token_id {self.pad}: left padding not modelled")
        batch = prompt.shape[0]
        seq = prompt.astype(np.int64)
        cache = self.empty_cache(batch)
        unfinished = np.ones(batch, dtype=bool)
        ids: list[np.ndarray] = []
        logits: list[np.ndarray] = []
        for _ in range(max_new_tokens):
            if not use_cache:
                step = self.forward(seq, 0, self.empty_cache(batch))
            elif not ids:
                step = self.forward(seq, 0, cache)
            else:
                step = self.forward(seq[:, -1:], seq.shape[1] - 1, cache)
            token = np.argmax(step, axis=-1).astype(np.int64)
            if self.eos:
                token = np.where(unfinished, token, self.pad)
            ids.append(token)
            logits.append(step)
            seq = np.concatenate([seq, token[:, None]], axis=1)
            unfinished &= ~np.isin(token, self.eos)
            if self.eos and not unfinished.any():
                break
        vocab = self.vocab
        return (
            np.stack(ids, axis=1) if ids else np.zeros((batch, 0), np.int64),
            np.stack(logits) if logits else np.zeros((0, batch, vocab), self.dtype),
        )


def margin(logits: np.ndarray) -> float:
    """Return the smallest gap between the largest and second-largest logit over every row of
    ``logits [..., V]``: greedy ids are certain to agree between two computations whose logits
    differ by less than half of it."""
    top2 = np.sort(np.asarray(logits, dtype=np.float64), axis=-1)[..., -2:]
    return float((top2[..., 1] - top2[..., 0]).min())


def generate(
    model_dir: str | Path, prompt_ids: np.ndarray, max_new_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(ids [B, K], logits [K, B, V])``: ``Reference(model_dir).generate(...)``."""
    return Reference(model_dir).generate(prompt_ids, max_new_tokens)
