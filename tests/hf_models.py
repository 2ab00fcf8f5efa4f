"""Tiny Hugging Face model directories, written as transformers' ``save_pretrained`` writes them.

One writer per ``model_type`` the project serves: ``llama``, ``mistral``, ``qwen2``, ``qwen3``
(``*ForCausalLM``) and ``gpt2`` (``GPT2LMHeadModel``).  A directory holds

- ``config.json``: the fields transformers 4.51.3 writes for that class (its ``to_diff_dict``:
  every class field, plus the common ones that differ from ``PretrainedConfig``'s defaults),
  keys sorted, two-space indent, ``architectures``, ``torch_dtype`` and
  ``transformers_version`` included;
- ``generation_config.json``: the token ids, as ``GenerationConfig.from_model_config`` writes;
- ``model.safetensors`` (metadata ``{"format": "pt"}``), or with ``shards=n`` the files
  ``model-0000k-of-0000n.safetensors`` and ``model.safetensors.index.json`` (``metadata.total_size``
  and ``weight_map``), tensors in state-dict order, in the dtype chosen (``float32``,
  ``bfloat16`` through ml_dtypes, ``float16``).

Tensor names and layouts are the checkpoint's: Linear weights ``[out, in]``; GPT-2's Conv1D
weights ``[in, out]``; a tied head is not stored (``lm_head.weight`` absent).  Weights are seeded
random numbers scaled so that activations stay O(1) and the logits are spread by several units,
which keeps greedy ties unlikely (``tests/test_hf_reference.py`` measures the margins).

The tiny defaults (``TINY``) have two layers and dimensions that N = 1, 2 and 4 divide (heads,
KV heads, intermediate, vocab 96); ``vocab_size=101`` (``ODD_VOCAB``) gives a vocab that none of
2, 3 and 4 divides.  Any config field can be overridden by its Hugging Face name.

This module imports nothing from the project: it is the tests' independent ground truth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

__all__ = [
    "FAMILIES",
    "ODD_VOCAB",
    "TINY",
    "TRANSFORMERS_VERSION",
    "config_for",
    "expected_tensors",
    "prompt_ids",
    "random_weights",
    "write_model",
]

FAMILIES: tuple[str, ...] = ("llama", "mistral", "qwen2", "qwen3", "gpt2")
TRANSFORMERS_VERSION = "4.51.3"
ODD_VOCAB = 101  # prime: N = 2, 3, 4 do not divide it

_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "gpt2": "GPT2LMHeadModel",
}

# The tiny models: what each test directory holds unless overridden.  Every field listed for a
# family is one its transformers 4.51.3 config class writes (see the module docstring).
_LLAMA_DIMS: dict[str, Any] = {
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 128,
    "initializer_range": 0.02,
    "rms_norm_eps": 1e-6,
    "use_cache": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
    "rope_theta": 10000.0,
    "attention_dropout": 0.0,
}
TINY: dict[str, dict[str, Any]] = {
    "llama": {
        **_LLAMA_DIMS,
        "head_dim": 8,
        "pretraining_tp": 1,
        "rope_scaling": None,
        "attention_bias": False,
        "mlp_bias": False,
    },
    "mistral": {**_LLAMA_DIMS, "head_dim": 8, "sliding_window": 4096},
    "qwen2": {
        **_LLAMA_DIMS,
        "rope_scaling": None,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
    "qwen3": {
        **_LLAMA_DIMS,
        "head_dim": 16,  # not hidden / heads (8): the projections are not square
        "rope_theta": 1000000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
    "gpt2": {
        "vocab_size": 96,
        "n_positions": 64,
        "n_embd": 64,
        "n_layer": 2,
        "n_head": 4,
        "n_inner": None,
        "activation_function": "gelu_new",
        "resid_pdrop": 0.1,
        "embd_pdrop": 0.1,
        "attn_pdrop": 0.1,
        "layer_norm_epsilon": 1e-5,
        "initializer_range": 0.02,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "summary_activation": None,
        "summary_proj_to_labels": True,
        "summary_first_dropout": 0.1,
        "scale_attn_weights": True,
        "use_cache": True,
        "bos_token_id": 95,  # GPT-2's bos = eos = the last id of its vocab
        "eos_token_id": 95,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
    },
}

_DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
_TOKEN_FIELDS = ("bos_token_id", "eos_token_id", "pad_token_id")
# PretrainedConfig's defaults of the common fields the tiny configs set, and where a class's own
# defaults differ from them (transformers 4.51.3).
_BASE_DEFAULTS: dict[str, Any] = {
    "bos_token_id": None,
    "eos_token_id": None,
    "pad_token_id": None,
    "tie_word_embeddings": True,
}
_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False},
    "mistral": {"bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False},
    "qwen2": {"tie_word_embeddings": False},
    "qwen3": {"tie_word_embeddings": False},
    "gpt2": {"bos_token_id": 50256, "eos_token_id": 50256},
}


def config_for(model_type: str, dtype: str = "float32", **overrides: Any) -> dict[str, Any]:
    """Return the ``config.json`` dict ``save_pretrained`` writes for this tiny model.

    ``overrides`` are Hugging Face field names.  As the config classes do: a llama/mistral
    ``head_dim`` not given follows ``hidden_size // num_attention_heads``; a qwen2/qwen3
    ``sliding_window`` is written as null unless ``use_sliding_window``; a common field
    (token ids, ``tie_word_embeddings``) equal to both ``PretrainedConfig``'s default and the
    class's is left out.
    """
    if model_type not in TINY:
        raise ValueError(f"unknown model_type {model_type!r}; known: {', '.join(FAMILIES)}")
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(_DTYPES)}")
    cfg = dict(TINY[model_type])
    cfg.update(overrides)
    if model_type in ("llama", "mistral") and "head_dim" not in overrides:
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]
    if model_type in ("qwen2", "qwen3") and not cfg["use_sliding_window"]:
        cfg["sliding_window"] = None
    for field, base in _BASE_DEFAULTS.items():
        # to_diff_dict keeps a PretrainedConfig field only where it differs from the base
        # default or from the class's own default.
        if field in cfg and cfg[field] == base == _CLASS_DEFAULTS[model_type].get(field, base):
            del cfg[field]
    cfg["architectures"] = [_ARCHITECTURES[model_type]]
    cfg["model_type"] = model_type
    cfg["torch_dtype"] = dtype
    cfg["transformers_version"] = TRANSFORMERS_VERSION
    return dict(sorted(cfg.items()))


def _tied(cfg: dict[str, Any]) -> bool:
    return bool(cfg.get("tie_word_embeddings", cfg["model_type"] == "gpt2"))


def expected_tensors(cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Return every tensor name ``save_pretrained`` stores for ``cfg``, in state-dict order,
    with its shape."""
    if cfg["model_type"] == "gpt2":
        return _gpt2_tensors(cfg)
    return _llama_tensors(cfg)


def _llama_tensors(cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    kind = cfg["model_type"]
    hid, vocab, inter = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or hid // heads
    qkv_bias = kind == "qwen2" or (kind in ("llama", "qwen3") and cfg.get("attention_bias"))
    o_bias = kind in ("llama", "qwen3") and bool(cfg.get("attention_bias"))
    mlp_bias = kind == "llama" and bool(cfg.get("mlp_bias"))
    out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (vocab, hid)}
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        for proj, rows in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            out[f"{pre}self_attn.{proj}_proj.weight"] = (rows, hid)
            if qkv_bias:
                out[f"{pre}self_attn.{proj}_proj.bias"] = (rows,)
        out[f"{pre}self_attn.o_proj.weight"] = (hid, heads * hd)
        if o_bias:
            out[f"{pre}self_attn.o_proj.bias"] = (hid,)
        if kind == "qwen3":
            out[f"{pre}self_attn.q_norm.weight"] = (hd,)
            out[f"{pre}self_attn.k_norm.weight"] = (hd,)
        for proj, shape in (("gate", (inter, hid)), ("up", (inter, hid)), ("down", (hid, inter))):
            out[f"{pre}mlp.{proj}_proj.weight"] = shape
            if mlp_bias:
                out[f"{pre}mlp.{proj}_proj.bias"] = (shape[0],)
        out[f"{pre}input_layernorm.weight"] = (hid,)
        out[f"{pre}post_attention_layernorm.weight"] = (hid,)
    out["model.norm.weight"] = (hid,)
    if not _tied(cfg):
        out["lm_head.weight"] = (vocab, hid)
    return out


def _gpt2_tensors(cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    hid, vocab = cfg["n_embd"], cfg["vocab_size"]
    inner = cfg.get("n_inner") or 4 * hid
    out: dict[str, tuple[int, ...]] = {
        "transformer.wte.weight": (vocab, hid),
        "transformer.wpe.weight": (cfg["n_positions"], hid),
    }
    for i in range(cfg["n_layer"]):
        pre = f"transformer.h.{i}."
        # Conv1D stores its weight [in, out] (the transpose of nn.Linear's).
        for name, shape in (
            ("ln_1.weight", (hid,)),
            ("ln_1.bias", (hid,)),
            ("attn.c_attn.weight", (hid, 3 * hid)),
            ("attn.c_attn.bias", (3 * hid,)),
            ("attn.c_proj.weight", (hid, hid)),
            ("attn.c_proj.bias", (hid,)),
            ("ln_2.weight", (hid,)),
            ("ln_2.bias", (hid,)),
            ("mlp.c_fc.weight", (hid, inner)),
            ("mlp.c_fc.bias", (inner,)),
            ("mlp.c_proj.weight", (inner, hid)),
            ("mlp.c_proj.bias", (hid,)),
        ):
            out[pre + name] = shape
    out["transformer.ln_f.weight"] = (hid,)
    out["transformer.ln_f.bias"] = (hid,)
    if not _tied(cfg):
        out["lm_head.weight"] = (vocab, hid)
    return out


def random_weights(cfg: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Return seeded float32 weights for every tensor of ``cfg`` (``expected_tensors`` order).

    The generator is seeded with ``(seed, family)``.  Matrices are ``N(0, 1) / sqrt(fan_in)``
    (activations stay O(1)), the ones writing into the residual stream (``o_proj``,
    ``down_proj``, GPT-2's ``c_proj``) twice that; layer norm gains ``1 + 0.1 N``, biases
    ``0.1 N``; the embedding ``N(0, 1)``, an untied head ``N(0, 1) * 4 / sqrt(H)``, GPT-2's
    positions ``0.5 N``.  The final norm's gain is ``N(0, 1)``: with a tied head a positive
    gain makes each token's own embedding its largest logit, and greedy repeats one token.
    """
    rng = np.random.default_rng([seed, FAMILIES.index(cfg["model_type"])])
    out: dict[str, np.ndarray] = {}
    for name, shape in expected_tensors(cfg).items():
        z = rng.standard_normal(shape)
        if name.endswith(("embed_tokens.weight", "wte.weight")) or name in _FINAL_GAINS:
            w = z
        elif name == "lm_head.weight":
            w = z * 4.0 / np.sqrt(shape[1])
        elif name.endswith("wpe.weight"):
            w = 0.5 * z
        elif len(shape) == 1 and ("norm" in name or ".ln_" in name):
            w = 1.0 + 0.1 * z if name.endswith("weight") else 0.1 * z
        elif name.endswith("bias"):
            w = 0.1 * z
        else:
            # Linear [out, in] reads its fan-in on axis 1; Conv1D [in, out] on axis 0.
            fan_in = shape[0] if cfg["model_type"] == "gpt2" else shape[1]
            gain = 2.0 if name.endswith(_RESIDUAL_WRITERS) else 1.0
            w = z * gain / np.sqrt(fan_in)
        out[name] = w.astype(np.float32)
    return out


_FINAL_GAINS = ("model.norm.weight", "transformer.ln_f.weight")
_RESIDUAL_WRITERS = ("o_proj.weight", "down_proj.weight", "c_proj.weight")


def _unprefixed(name: str) -> str:
    for prefix in ("model.", "transformer."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _shard_groups(names: list[str], sizes: dict[str, int], shards: int) -> list[list[str]]:
    """Split ``names`` (in order) into ``shards`` non-empty runs of about equal bytes, as
    ``save_pretrained`` fills one shard after another up to ``max_shard_size``."""
    if not 1 <= shards <= len(names):
        raise ValueError(f"shards must be in [1, {len(names)}], got {shards}")
    budget = sum(sizes.values()) / shards
    groups: list[list[str]] = [[]]
    used = 0
    for k, name in enumerate(names):
        left_names, left_groups = len(names) - k, shards - len(groups)
        full = groups[-1] and (used + sizes[name] > budget or left_names <= left_groups)
        if full and len(groups) < shards:
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += sizes[name]
    return groups


def _write_json(path: Path, data: dict[str, Any]) -> None:
    # transformers' to_json_string: indent 2, sorted keys, a final newline.
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_model(
    directory: str | Path,
    model_type: str,
    *,
    dtype: str = "float32",
    shards: int = 1,
    seed: int = 0,
    prefixed: bool = True,
    weights: dict[str, np.ndarray] | None = None,
    **overrides: Any,
) -> Path:
    """Write a tiny ``model_type`` model directory at ``directory`` and return its path.

    ``dtype`` is the stored dtype (``float32``, ``bfloat16``, ``float16``; the config's
    ``torch_dtype``); ``shards > 1`` writes a sharded checkpoint with its index; ``seed``
    seeds ``random_weights`` unless ``weights`` (float32, by checkpoint name) are given;
    ``prefixed=False`` drops the ``model.``/``transformer.`` prefix (as a base model's
    checkpoint names them); ``overrides`` are config fields (``config_for``).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config_for(model_type, dtype, **overrides)
    tensors = weights if weights is not None else random_weights(cfg, seed)
    expected = expected_tensors(cfg)
    if set(tensors) != set(expected):
        raise ValueError(f"weights do not name the tensors of {model_type}: {sorted(expected)}")
    stored = {
        (name if prefixed else _unprefixed(name)): np.ascontiguousarray(
            np.asarray(tensors[name], dtype=np.float32).astype(_DTYPES[dtype])
        )
        for name in expected
    }
    _write_json(out / "config.json", cfg)
    _write_json(out / "generation_config.json", _generation_config(cfg))
    meta = {"format": "pt"}
    if shards == 1:
        save_file(stored, str(out / "model.safetensors"), metadata=meta)
        return out
    sizes = {name: t.nbytes for name, t in stored.items()}
    groups = _shard_groups(list(stored), sizes, shards)
    weight_map: dict[str, str] = {}
    for k, group in enumerate(groups, start=1):
        file = f"model-{k:05d}-of-{len(groups):05d}.safetensors"
        save_file({name: stored[name] for name in group}, str(out / file), metadata=meta)
        weight_map.update(dict.fromkeys(group, file))
    index = {"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}
    _write_json(out / "model.safetensors.index.json", index)
    return out


def _generation_config(cfg: dict[str, Any]) -> dict[str, Any]:
    gen: dict[str, Any] = {"_from_model_config": True}
    gen.update({f: cfg[f] for f in _TOKEN_FIELDS if cfg.get(f) is not None})
    gen["transformers_version"] = TRANSFORMERS_VERSION
    return gen


def prompt_ids(vocab: int, batch: int, length: int, seed: int = 0) -> np.ndarray:
    """Return seeded prompt ids ``[batch, length]`` (int64) in ``[3, vocab - 1)``: clear of the
    tiny models' special ids (bos/eos 1, 2; GPT-2's ``vocab - 1``)."""
    rng = np.random.default_rng([seed, batch, length])
    return rng.integers(3, vocab - 1, size=(batch, length), dtype=np.int64)
