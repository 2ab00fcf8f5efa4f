"""The ``doc`` tags every frontend writes are known to every shim, each with the class of the
work it tags: GPT-2's LayerNorm is a norm and its GELU an elementwise activation, as Qwen3's
RMSNorm and SiLU are, in every family's programs (decode stacks, outlined, whole models)."""

from __future__ import annotations

import functools

import hf_models
import pytest
from programs import tiny
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.linalg import ops as linalg

from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.lm import Step
from tp_dialect.frontend.registry import ENTRIES
from tp_dialect.op_tags import OpTag, tag_of
from tp_dialect.shims import SHIMS, OpClass, Support, classify
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

# What each tag's generics are, written here independently of the code under test: the
# class a chip's compiler should see them as.
EXPECTED = {
    "rms_norm": OpClass.NORM,
    "layer_norm": OpClass.NORM,
    "softmax": OpClass.SOFTMAX,
    "rope": OpClass.ROPE,
    "silu": OpClass.ELEMENTWISE,
    "gelu": OpClass.ELEMENTWISE,
    "embedding": OpClass.GATHER,
    "position_embedding": OpClass.GATHER,
    "argmax": OpClass.REDUCTION,
}


def _texts() -> dict[str, str]:
    """Every frontend's programs by a name: each decode-stack family flat and outlined,
    each registry family's prefill and decode step for every model_type it serves."""
    texts = {
        "qwen3": qwen3.generate(tiny()),
        "qwen3-split": qwen3.generate(tiny(chips=2)),
        "qwen3-outlined": qwen3.generate(tiny(), True),
        "gpt2": gpt2.generate(gpt2.GPT2Config.preset("tiny")),
        "gpt2-outlined": gpt2.generate(gpt2.GPT2Config.preset("tiny"), True),
    }
    for entry in ENTRIES:
        for model_type in entry.model_types:
            model = entry.read(hf_models.config_for(model_type))
            for step in (Step("prefill", 3, 1, 16, logits=True), Step("decode", 1, 2, 16)):
                texts[f"{model_type}-{step.kind}"] = entry.write(model, step)
    return texts


@functools.cache
def _programs() -> dict[str, ModuleOp]:
    return {
        name: parse_module(tp_context(), text, f"<{name}>")[0] for name, text in _texts().items()
    }


def _tagged(module: ModuleOp) -> list[linalg.GenericOp]:
    return [
        op
        for op in module.walk()
        if isinstance(op, linalg.GenericOp) and isinstance(op.doc, StringAttr)
    ]


def test_every_family_is_generated() -> None:
    """Every family (both decode stacks, every registry entry) is among the programs."""
    names = _programs().keys()
    assert {"qwen3", "gpt2", "llama-prefill", "gpt2-prefill", "gpt2-decode"} <= set(names)
    tags = {op.doc.data for m in _programs().values() for op in _tagged(m)}  # type: ignore[union-attr]
    assert tags == set(EXPECTED), "a frontend writes a tag this test does not know"


@pytest.mark.parametrize("shim", sorted(SHIMS))
@pytest.mark.parametrize("name", sorted(_texts()))
def test_every_tag_a_frontend_writes_is_known_to_every_shim(name: str, shim: str) -> None:
    """Invariant: each tagged generic of every frontend's program is of its tag's class, a
    class the shim builds (natively or emulated), and only a matmul reads int8 activations."""
    base = SHIMS[shim]
    for op in _tagged(_programs()[name]):
        doc = op.doc.data  # type: ignore[union-attr]
        assert classify(op) is EXPECTED[doc], f"{name}: '{doc}' classed {classify(op)}"
        assert base.supports(classify(op)) is not Support.UNSUPPORTED
        assert base.activation(op, 0) is None, f"{name}: '{doc}' read as int8"


def test_the_tags_are_one_definition() -> None:
    """Invariant: a tag's value is the string written in the IR, `tag_of` reads it back, and
    its `OpTag.op_class` is the class its generics get."""
    assert {tag.value: tag.op_class for tag in OpTag} == EXPECTED
    for module in _programs().values():
        for op in _tagged(module):
            tag = tag_of(op)
            assert tag is not None and tag.op_class is classify(op)
