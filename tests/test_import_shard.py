"""tp-import-shard: a program annotated with MLIR Shard as its plan says becomes, text for text,
the program tp-split writes from that plan; its numbers are the unsharded program's.

The annotations are written here from a plan, independently of the pass: every entry
argument the plan cuts along axis a gets ``shard.shard %arg to (split_axes: axis a over grid
axis 0)``, every one it keeps whole a sharding with no split, each read in the argument's
place. Programs: tiny whole-model Qwen3 and Llama steps (the Hugging Face plan), prefill and
decode, N = 2 and 4.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hf_models import config_for
from ir_helpers import apply, parse
from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    StringAttr,
    SymbolRefAttr,
    i16,
    i32,
    i64,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tp_dialect.analysis.split.plan import TpPlan, load_plan
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.registry import Pretrained, entry_for
from tp_dialect.frontend.split import split_text
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import NAME_ATTR, entry_function


def unsharded(model_type: str, kind: str) -> str:
    config = config_for(model_type, num_hidden_layers=2)
    entry = entry_for(model_type)
    pretrained = Pretrained(entry, entry.read(config), config)
    return pretrained.write(pretrained.step(kind, 4 if kind == "prefill" else 1, 1, 8, False))


def annotate(text: str, plan: TpPlan, chips: int) -> str:
    """``text`` with a 1-D grid of ``chips`` and a Shard annotation per argument ``plan``
    names (module docstring)."""
    module = parse(text)
    grid = shard.GridOp.create(
        properties={
            "sym_name": StringAttr("chips"),
            "shape": DenseArrayBase.from_list(i64, [chips]),
        }
    )
    module.body.block.insert_op_before(grid, module.body.block.first_op)  # type: ignore[arg-type]
    fn = entry_function(module)
    rewriter = Rewriter()
    at = InsertPoint.at_start(fn.body.block)
    for arg, attrs in zip(fn.args, fn.arg_attrs.data, strict=True):  # type: ignore[union-attr]
        name = attrs.data[NAME_ATTR].data  # type: ignore[attr-defined]
        entry = plan.entry_for(name)
        if entry is None:
            continue
        cut = entry.cut(name, tuple(arg.type.get_shape()), chips)  # type: ignore[attr-defined]
        assert not isinstance(cut, str), cut
        axes = [[] for _ in arg.type.get_shape()]  # type: ignore[attr-defined]
        if cut is not None:
            axes[cut.axis] = [0]
        sharding = shard.ShardingOp.create(
            properties={
                "grid": SymbolRefAttr("chips"),
                "split_axes": shard.ShardAxesArrayAttr(
                    ArrayAttr([DenseArrayBase.from_list(i16, a) for a in axes])
                ),
                "operandSegmentSizes": DenseArrayBase.from_list(i32, [0, 0]),
            },
            result_types=[shard.ShardingType()],
        )
        annotated = shard.ShardOp(arg, sharding.result, None)
        rewriter.insert_op([sharding, annotated], at)
        at = InsertPoint.after(annotated)
        arg.replace_uses_with_if(annotated.result, lambda use, a=annotated: use.operation is not a)
    return str(module)


CASES = [("qwen3", "prefill", 2), ("qwen3", "decode", 4), ("llama", "prefill", 4)]


@pytest.mark.parametrize(("model_type", "kind", "chips"), CASES)
def test_the_import_is_the_split_by_the_same_plan(model_type: str, kind: str, chips: int) -> None:
    text = unsharded(model_type, kind)
    plan = load_plan("llama")
    want = parse(split_text(text, chips, "llama"))
    got = parse(annotate(text, plan, chips))
    apply(got, "tp-import-shard")
    assert str(got) == str(want)
    assert not [op for op in got.walk() if op.dialect_name() == "shard"]
    if kind == "prefill":
        values = {**random_weights(got, 0), **random_inputs(got, 1, position=0)}
        source = parse(text)
        expect = run_program(source, values)
        result = run_program(got, values)
        for name in expect:
            np.testing.assert_allclose(result[name], expect[name], rtol=1e-5, atol=1e-5)


def test_the_annotations_are_parsed_as_mlir_writes_them() -> None:
    """The annotated text round-trips through the parser (the pass reads Shard's own ops)."""
    text = annotate(unsharded("qwen3", "decode"), load_plan("llama"), 2)
    assert "shard.sharding @chips split_axes = [[0], []]" in text
    assert str(parse(text)) == text


def test_no_grid_is_one_line() -> None:
    module = parse(unsharded("qwen3", "decode"))
    with pytest.raises(TpDiagnostic, match="tp-import-shard: the module holds no shard.grid"):
        apply(module, "tp-import-shard")


BIN = Path(sys.executable).parent
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "shard_mlp.mlir"


@pytest.mark.parametrize("ranks", [None, 2])
def test_tp_run_imports_the_annotations_and_checks_against_the_program_itself(
    ranks: int | None,
) -> None:
    """tp-run on an annotated program runs the tp program it states (in this process, or as
    2 MPI ranks) and --check compares with the program, its annotations taken out."""
    argv = [str(BIN / "tp-run"), str(EXAMPLE), "--random-weights", "0", "--random-inputs", "1"]
    argv += ["--check"] + (["--mpi", str(ranks)] if ranks else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "importing MLIR Shard annotations" in proc.stderr
    assert "check against the unsharded program" in proc.stdout
    assert " ok" in proc.stdout and "FAIL" not in proc.stdout
