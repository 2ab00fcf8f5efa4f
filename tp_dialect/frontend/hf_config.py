"""A Hugging Face model directory's ``config.json`` read into what a family's writer needs,
refusing by name whatever would change the numbers and is not understood.

Every field of a config is one of: understood (read into the model, each value checked),
known harmless (it changes no number of a greedy forward pass: the architecture's name, the
dtype the weights were saved in, dropout probabilities, initialisation, token ids, ...), or
refused as "not understood". A value of an understood field that tp does not implement (an
activation other than the family's, a ``rope_scaling`` type other than none, ``linear`` or
``llama3``, ...) is refused naming the field and its value. Nothing is ignored silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tp_dialect.frontend.blocks import GenError
from tp_dialect.jsonfile import parse_json, read_json_text

# Fields that change no number of a greedy forward pass, whatever their value.
HARMLESS = frozenset(
    {
        "_name_or_path",
        "architectures",
        "torch_dtype",
        "transformers_version",
        "model_type",
        "initializer_range",
        "use_cache",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "attention_dropout",
        "hidden_dropout",
        "resid_pdrop",
        "embd_pdrop",
        "attn_pdrop",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "tokenizer_class",
        "pretraining_tp",  # only a training-time slicing of the same matmuls
        "max_position_embeddings",  # the longest position trained; P is the user's choice
        "n_ctx",
        "base_model_tp_plan",
        "base_model_pp_plan",
        # GPT2DoubleHeadsModel's sequence-summary head: GPT2LMHeadModel has none
        "summary_type",
        "summary_use_proj",
        "summary_activation",
        "summary_proj_to_labels",
        "summary_first_dropout",
        "reorder_and_upcast_attn",  # computes attention in f32: tp's activations are f32
    }
)

DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


def read_config(directory: str | Path) -> dict[str, Any]:
    """``directory/config.json`` as a dict, read within `MAX_JSON_BYTES`. Raises GenError
    (one line) when the directory or the file cannot be read or is not a JSON object."""
    path = Path(directory) / "config.json"
    if not Path(directory).is_dir():
        raise GenError(f"cannot read model directory '{directory}': not a directory")
    text = read_json_text(str(path), "model config", GenError)
    fields = parse_json(text, str(path), "a model config is a JSON object", "field", GenError)
    if not isinstance(fields, dict):
        raise GenError(f"'{path}' does not hold a JSON object")
    return fields


def max_positions(config: Mapping[str, Any], key: str, default: int) -> int:
    """The longest position a config states (``key``), the default P of a step."""
    return Fields(config, {key: default}).integer(key)


class Fields:
    """A config's fields as a family reads them: each read marks its field understood, so
    `refuse_rest` can refuse the ones nothing read (and that are not harmless)."""

    def __init__(self, fields: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
        self.fields = dict(fields)
        self.defaults = dict(defaults)
        self.read: set[str] = set()

    def has(self, key: str) -> bool:
        """Whether the config states ``key`` (a null counts as absent)."""
        return self.fields.get(key) is not None

    def get(self, key: str) -> Any:
        """``key``'s value, else the config class's default; marks it understood."""
        self.read.add(key)
        value = self.fields.get(key)
        return self.defaults.get(key) if value is None else value

    def integer(self, key: str) -> int:
        """``key`` as a positive integer; GenError naming it otherwise."""
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise GenError(f"config field '{key}' must be a positive integer, got {value!r}")
        return value

    def number(self, key: str) -> float:
        """``key`` as a positive number; GenError naming it otherwise."""
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise GenError(f"config field '{key}' must be a positive number, got {value!r}")
        return float(value)

    def flag(self, key: str) -> bool:
        """``key`` as a bool; GenError naming it otherwise."""
        value = self.get(key)
        if not isinstance(value, bool):
            raise GenError(f"config field '{key}' must be true or false, got {value!r}")
        return value

    def one_of(self, key: str, allowed: tuple[Any, ...], why: str) -> Any:
        """``key``'s value when it is one of ``allowed``; else GenError naming the field,
        its value and ``why`` tp implements only those."""
        value = self.get(key)
        if value not in allowed:
            shown = ", ".join(repr(a) for a in allowed)
            raise GenError(f"config field '{key}' = {value!r} is not understood ({why}: {shown})")
        return value

    def dtype(self) -> str:
        """The weights' element type from ``torch_dtype`` (f32 when absent)."""
        value = self.fields.get("torch_dtype") or "float32"
        if value not in DTYPES:
            shown = ", ".join(DTYPES)
            raise GenError(f"config field 'torch_dtype' = {value!r} is not understood ({shown})")
        return DTYPES[value]

    def refuse_rest(self, model_type: str) -> None:
        """GenError naming the first field (sorted) neither read nor harmless."""
        rest = sorted(k for k in self.fields if k not in self.read and k not in HARMLESS)
        if rest:
            raise GenError(
                f"config field '{rest[0]}' of model_type '{model_type}' is not understood: "
                "it may change the numbers, so tp refuses it rather than ignore it"
            )
