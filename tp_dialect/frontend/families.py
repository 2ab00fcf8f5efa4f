"""The decode-stack families by name (``tp-gen qwen3|gpt2``): a recorded ``tp.config`` back
to its config and its unsharded program, whichever family wrote it (a whole model's step
program is the registry's: `tp_dialect.frontend.registry`).

A generated module records its config in ``tp.config``; a GPT-2 config says
``family = "gpt2"``, while a Qwen3 config (written before there were two families) says
nothing, or ``family = "qwen3"``.
"""

from __future__ import annotations

from xdsl.dialects.builtin import DictionaryAttr
from xdsl.ir import Attribute

from tp_dialect.frontend import gpt2, qwen3, registry
from tp_dialect.frontend.blocks import GenError, config_fields

ModelConfig = qwen3.Qwen3Config | gpt2.GPT2Config

FAMILIES = ("qwen3", "gpt2")
# Each decode-stack family's writer, by its config's class.
_WRITERS = {qwen3.Qwen3Config: qwen3.generate, gpt2.GPT2Config: gpt2.generate}


def family_of(attr: Attribute) -> str:
    """The family a recorded ``tp.config`` names: its ``family`` entry, ``qwen3`` when it
    has none. Raises GenError when ``attr`` is not a dictionary or names no known family."""
    family = config_fields(attr).get("family", "qwen3")
    if family not in FAMILIES:
        raise GenError(f"tp.config names an unknown model family '{family}'")
    return str(family)


def config_from_attr(attr: Attribute) -> ModelConfig:
    """The config a generated module recorded in ``tp.config``, of its own family. Raises
    GenError when it describes no decode step of that family."""
    if family_of(attr) == "gpt2":
        return gpt2.GPT2Config.from_attr(attr)
    assert isinstance(attr, DictionaryAttr)  # family_of read it as one
    # Qwen3Config has no family field: drop an explicit "qwen3" before building it.
    rest = DictionaryAttr({k: v for k, v in attr.data.items() if k != "family"})
    return qwen3.Qwen3Config.from_attr(rest)


def generate(cfg: ModelConfig, outline: bool = False) -> str:
    """``cfg``'s decode step as MLIR text, by its family's generator (as it stands: a
    sharded Qwen3 config gives the split program); with ``outline``, one ``@layer`` called
    once a layer (`tp_dialect.frontend.outline`)."""
    return _WRITERS[type(cfg)](cfg, outline)  # type: ignore[operator]


def unsharded_text(attr: Attribute) -> str:
    """The unsharded step, as MLIR text, of the model a module's ``tp.config`` describes (a
    decode stack of either family, or a whole model's step of a registry family; a split
    program's config gives its unsharded original, the reference ``tp-run --check`` compares
    against). Raises GenError when ``attr`` describes no generated step or its config is
    refused."""
    if registry.is_whole_model(attr):
        return registry.unsharded_text(attr)
    cfg = config_from_attr(attr)
    if isinstance(cfg, qwen3.Qwen3Config):
        cfg = cfg.unsharded()
    return generate(cfg)
