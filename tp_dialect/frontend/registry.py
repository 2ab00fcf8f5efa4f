"""The model families tp serves from a Hugging Face directory, one entry each: which
``model_type`` names it serves, how its ``config.json`` is read, its unsharded whole-model
writer, and the name of the tensor-parallel plan transformers builds for its
``*ForCausalLM`` (the data is ``tp_dialect/plans/<plan>.json``; tp-split applies it).

Adding a family is one module (a reader and a writer) and one entry here: tools ask the
registry (`read_model`, `write`, `entry_of`), never the model's class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.ir import Attribute

from tp_dialect.frontend import gpt2_lm, llama
from tp_dialect.frontend.blocks import GenError, config_fields
from tp_dialect.frontend.hf_config import max_positions, read_config
from tp_dialect.frontend.lm import Step


@dataclass(frozen=True)
class Entry:
    """One family: its name (recorded as ``tp.config``'s ``family``), the HF ``model_type``
    names it serves, its config reader, its unsharded writer, its recorded-config reader,
    its HF plan's name, and the dims a split over chips must divide (by config name)."""

    name: str
    model_types: tuple[str, ...]
    read: Callable[[Mapping[str, Any]], Any]
    write: Callable[[Any, Step], str]
    from_attr: Callable[[Attribute], tuple[Any, Step]]
    plan: str
    divided: Callable[[Any], dict[str, int]]
    default_positions: Callable[[Mapping[str, Any]], int]


ENTRIES: tuple[Entry, ...] = (
    Entry(
        name="llama",
        model_types=llama.MODEL_TYPES,
        read=llama.from_hf,
        write=llama.generate,
        from_attr=llama.from_attr,
        plan="llama",
        divided=lambda m: {
            "num_attention_heads": m.heads,
            "num_key_value_heads": m.kv_heads,
            "intermediate_size": m.intermediate,
        },
        default_positions=lambda c: max_positions(c, "max_position_embeddings", 2048),
    ),
    Entry(
        name="gpt2_lm",
        model_types=gpt2_lm.MODEL_TYPES,
        read=gpt2_lm.from_hf,
        write=gpt2_lm.generate,
        from_attr=gpt2_lm.from_attr,
        plan="gpt2_lm",
        divided=lambda m: {"n_head": m.heads, "n_inner": m.intermediate},
        default_positions=lambda c: max_positions(c, "n_positions", 1024),
    ),
)

MODEL_TYPES: dict[str, Entry] = {t: e for e in ENTRIES for t in e.model_types}
BY_NAME: dict[str, Entry] = {e.name: e for e in ENTRIES}


def entry_for(model_type: object) -> Entry:
    """The family serving ``model_type``; GenError naming the supported ones otherwise."""
    if not isinstance(model_type, str) or model_type not in MODEL_TYPES:
        raise GenError(
            f"model_type {model_type!r} is not supported (supported: "
            f"{', '.join(sorted(MODEL_TYPES))})"
        )
    return MODEL_TYPES[model_type]


@dataclass(frozen=True)
class Pretrained:
    """A model directory read: its family's entry, the model, and the config as stored."""

    entry: Entry
    model: Any
    config: dict[str, Any]

    def step(
        self,
        kind: str = "prefill",
        tokens: int = 1,
        batch: int = 1,
        max_positions: int | None = None,
        logits: bool = False,
    ) -> Step:
        """A step of this model (``max_positions`` defaults to the config's maximum)."""
        if max_positions is None:
            max_positions = self.entry.default_positions(self.config)
        return Step(kind, tokens if kind == "prefill" else 1, batch, max_positions, logits)

    def write(self, step: Step) -> str:
        """The unsharded ``step`` program as MLIR text."""
        return self.entry.write(self.model, step)

    def check_chips(self, chips: int) -> None:
        """GenError naming the first dim (by its config name) ``chips`` does not divide."""
        if chips < 1:
            raise GenError(f"chips must be positive, got {chips}")
        for name, value in self.entry.divided(self.model).items():
            if value % chips:
                raise GenError(f"{name} ({value}) is not divisible by --chips {chips}")


def read_model(directory: str | Path) -> Pretrained:
    """The model ``directory/config.json`` describes. Raises GenError (one line) for an
    unreadable directory, an unsupported ``model_type`` or a field not understood."""
    config = read_config(directory)
    entry = entry_for(config.get("model_type"))
    return Pretrained(entry, entry.read(config), config)


def is_whole_model(attr: Attribute) -> bool:
    """Whether a recorded ``tp.config`` is a whole-model step's (a family of this registry)."""
    return config_fields(attr).get("family") in BY_NAME


def unsharded_text(attr: Attribute) -> str:
    """The unsharded step program a whole-model module's ``tp.config`` describes."""
    entry = BY_NAME[str(config_fields(attr).get("family"))]
    model, step = entry.from_attr(attr)
    return entry.write(model, step)
