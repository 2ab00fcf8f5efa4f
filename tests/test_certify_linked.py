"""A whole model's step, lowered to per-chip programs, is certified again from scratch: each
chip program's argument stands for the one host value bound to every chip's, so the
vocab-parallel embedding's lookups (chip 0's in its program, chip 1's in its own, summed
through a link) read the same ids and table. A lookup that reads another table, or a
program bound to another host value, is still refused."""

from __future__ import annotations

from pathlib import Path

import hf_models
import pytest
from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.values import origin
from tp_dialect.errors import TpError
from tp_dialect.ops import ShardOp
from tp_dialect.passes.universe import lowered
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.tools import tp_gen
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

LINKED = "tp-relocate,tp-transfers,tp-link-points"


def _linked(directory: Path, step: str, chips: int, extra: str = "") -> ModuleOp:
    argv = ["--from-pretrained", str(directory), "--step", step, "--chips", str(chips)]
    argv += ["--logits", "--max-positions", "16"]
    argv += ["--prompt-len", "4"] if step == "prefill" else []
    text = tp_gen.pretrained_text(tp_gen.parser().parse_args(argv))
    module, _ = parse_module(tp_context(), text, f"<{step}>")
    return lowered(module, extra + LINKED)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # untied: the LM head is a second [vocab, hidden] table a faulty lookup could read
    return hf_models.write_model(
        tmp_path_factory.mktemp("qwen3"), "qwen3", tie_word_embeddings=False
    )


@pytest.mark.parametrize(
    ("step", "chips", "extra"),
    [
        ("prefill", 2, ""),
        ("prefill", 4, ""),
        ("decode", 2, ""),
        ("prefill", 2, "tp-sequence-parallel{mode=on},"),
        ("prefill", 2, "tp-fuse{shim=sn40l},"),
    ],
)
def test_linked_step_certifies_again(model_dir: Path, step: str, chips: int, extra: str) -> None:
    check_obligation(_linked(model_dir, step, chips, extra))


def _program(module: ModuleOp, chip: int) -> ChipProgramOp:
    return next(p for p in module.walk() if isinstance(p, ChipProgramOp) and p.chip_index == chip)


def _lookup_table_index(program: ChipProgramOp) -> int:
    """The index of the program argument its embedding lookup's table shard cuts."""
    for op in program.walk():
        shard = origin(op.tensor).owner if isinstance(op, tensor.ExtractOp) else None
        if isinstance(shard, ShardOp):
            source = shard.source
            assert isinstance(source, BlockArgument) and source.owner is program.body.block
            return source.index
    raise AssertionError("no lookup of a shard in the program")


def test_lookup_of_another_table_is_refused(model_dir: Path) -> None:
    module = _linked(model_dir, "prefill", 2)
    program = _program(module, 1)
    table = _lookup_table_index(program)
    args = program.body.block.args
    # chip 1's program binds its table argument to the LM head's weight (same type)
    head = next(
        i
        for i, v in enumerate(program.inputs)
        if i != table and v.type == args[table].type and "lm_head" in str(v.name_hint)
    )
    program.operands[table] = program.inputs[head]
    with pytest.raises(TpError, match="another table or row"):
        check_obligation(module)


def test_lookup_of_other_ids_is_refused(model_dir: Path) -> None:
    module = _linked(model_dir, "prefill", 2)
    program = _program(module, 1)
    ids = next(i for i, v in enumerate(program.inputs) if v.name_hint == "input_ids")
    args = program.body.block.args
    # chip 1's program reads an ids tensor of the same type the host did not bind to chip 0
    func = program.parent_op()
    assert isinstance(func, FuncOp)
    other = func.body.block.insert_arg(args[ids].type, len(func.body.block.args))
    func.update_function_type()
    program.operands[ids] = other
    module.verify()  # a well-formed module: only the binding is wrong
    with pytest.raises(TpError, match="another table or row"):
        check_obligation(module)
