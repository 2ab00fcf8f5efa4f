"""The ``doc`` tags every frontend writes are known to every shim, each with the class of the
work it tags: GPT-2's LayerNorm is a norm and its GELU an elementwise activation, as Qwen3's
RMSNorm and SiLU are, in every family's programs (decode stacks, outlined, whole models)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import hf_models
import pytest
from helpers import tiny
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.linalg import ops as linalg

from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.lm import Step
from tp_dialect.frontend.registry import ENTRIES, Entry
from tp_dialect.op_tags import OpTag, tag_of
from tp_dialect.shims import SHIMS, OpClass, QuantFormat, Support, classify
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


def _writers() -> dict[str, Callable[[], str]]:
    """Every frontend's programs by a name, each written when asked: each decode-stack family
    flat and outlined, each registry family's prefill and decode step for every model_type it
    serves (collecting the tests writes none)."""
    writers: dict[str, Callable[[], str]] = {
        "qwen3": lambda: qwen3.generate(tiny()),
        "qwen3-split": lambda: qwen3.generate(tiny(chips=2)),
        "qwen3-outlined": lambda: qwen3.generate(tiny(), True),
        "gpt2": lambda: gpt2.generate(gpt2.GPT2Config.preset("tiny")),
        "gpt2-outlined": lambda: gpt2.generate(gpt2.GPT2Config.preset("tiny"), True),
    }
    for entry in ENTRIES:
        for model_type in entry.model_types:
            for step in (Step("prefill", 3, 1, 16, logits=True), Step("decode", 1, 2, 16)):
                writers[f"{model_type}-{step.kind}"] = functools.partial(
                    _whole_model, entry, model_type, step
                )
    return writers


def _whole_model(entry: Entry, model_type: str, step: Step) -> str:
    return entry.write(entry.read(hf_models.config_for(model_type)), step)


@functools.cache
def _program(name: str) -> ModuleOp:
    return parse_module(tp_context(), _writers()[name](), f"<{name}>")[0]


def _tagged(module: ModuleOp) -> list[linalg.GenericOp]:
    return [
        op
        for op in module.walk()
        if isinstance(op, linalg.GenericOp) and isinstance(op.doc, StringAttr)
    ]


def test_every_family_is_generated() -> None:
    """Every family (both decode stacks, every registry entry) is among the programs."""
    names = set(_writers())
    assert {"qwen3", "gpt2", "llama-prefill", "gpt2-prefill", "gpt2-decode"} <= names
    tags = {op.doc.data for n in names for op in _tagged(_program(n))}  # type: ignore[union-attr]
    assert tags == set(EXPECTED), "a frontend writes a tag this test does not know"


@pytest.mark.parametrize("shim", sorted(SHIMS))
@pytest.mark.parametrize("name", sorted(_writers()))
def test_every_tag_a_frontend_writes_is_known_to_every_shim(name: str, shim: str) -> None:
    """Invariant: each tagged generic of every frontend's program is of its tag's class, a
    class the shim builds (natively or emulated), and only a matmul reads int8 activations."""
    int8 = QuantFormat("int8", "per-tensor")
    base = SHIMS[shim]
    for op in _tagged(_program(name)):
        doc = op.doc.data  # type: ignore[union-attr]
        assert classify(op) is EXPECTED[doc], f"{name}: '{doc}' classed {classify(op)}"
        assert base.supports(classify(op)) is not Support.UNSUPPORTED
        read = base.activation(op, 0)
        matmul = classify(op) is OpClass.MATMUL
        assert read != int8 or matmul, f"{name}: '{doc}' read as int8"


def test_the_tags_are_one_definition() -> None:
    """Invariant: a tag's value is the string written in the IR, `tag_of` reads it back, and
    its `OpTag.op_class` is the class its generics get."""
    assert {tag.value: tag.op_class for tag in OpTag} == EXPECTED
    for name in _writers():
        for op in _tagged(_program(name)):
            tag = tag_of(op)
            assert tag is not None and tag.op_class is classify(op)
