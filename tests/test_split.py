# ruff: noqa: E501  (IR text is written out one op per line)
"""tp-split on Qwen3 by Hugging Face's own plan: the same program as the Megatron split tp-gen
wrote by hand before it became tp-split's (`megatron`: bitwise the same numbers at every stage,
the same manifest up to names); tp-gen's sharded program is that split; plans that cannot be
read are one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import program, tiny
from megatron import NAMES, golden_name, megatron
from test_manifest_stages import STAGES, _without_names
from xdsl.dialects import tensor

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.analysis.split.plan import PlanError, load_plan, parse_plan, shipped_plans
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import AllReduceOp, ShardOp
from tp_dialect.passes.split import TpSplit, split_by_plan
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import MemorySource, place_weights, random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent


def run(module: Any, position: int = 5) -> dict[str, np.ndarray]:
    """``module`` run on seeded weights and inputs (the same for every program of a config:
    they are drawn by port name)."""
    weights = random_weights(module, 0)
    placement = place_weights(module, MemorySource(weights), random_inputs(module, 1, position))
    return run_program(module, placement.values, placement.placed, False)


def split(chips: int, **cfg: Any) -> Any:
    source = program(tiny(chips=1, **cfg).unsharded())
    return lowered(source, f'tp-split{{chips={chips} plan="qwen3"}}')


@pytest.mark.parametrize("chips", [1, 2, 4, 8])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("stage", list(STAGES))
def test_qwen3_split_by_the_hf_plan_is_the_megatron_program(
    chips: int, batch: int, stage: str
) -> None:
    """Bitwise the hand-written split's outputs, at every stage of the pipeline after it."""
    ours = split(chips, batch=batch, layers=1)
    theirs = megatron(chips=chips, batch=batch, layers=1)
    if STAGES[stage]:
        ours, theirs = lowered(ours, STAGES[stage]), lowered(theirs, STAGES[stage])
    got, want = run(ours), run(theirs)
    assert sorted(got) == sorted(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name


@pytest.mark.parametrize("chips", [2, 4])
def test_qwen3_split_has_the_megatron_manifest_up_to_names(chips: int) -> None:
    ours = read_manifest(split(chips, layers=2))
    assert _canonical(ours) == _canonical(read_manifest(megatron(chips=chips, layers=2)))
    assert len(ours.to_json()["collectives"]) == 4  # o_proj and down_proj, two layers


def _canonical(manifest: Any) -> str:
    """A manifest up to value names and the order of its entries."""
    data = _without_names(manifest.to_json())
    return json.dumps(
        {k: sorted(map(json.dumps, v)) if isinstance(v, list) else v for k, v in data.items()}
    )


@pytest.mark.parametrize(
    ("overrides", "outline"), NAMES, ids=[golden_name(o, x)[6:-8] for o, x in NAMES]
)
def test_tp_gen_writes_the_megatron_program_by_tp_split(
    overrides: dict[str, Any], outline: bool
) -> None:
    """tp-gen's sharded step (written unsharded, split by tp-split) runs bitwise as the
    hand-written split did — folds, fused checkpoints, bf16 and the outlined form included —
    with its manifest up to names and its recorded config."""
    ours = program(tiny(**overrides), outline)
    theirs = megatron(outline, **overrides)
    assert ours.attributes["tp.config"] == theirs.attributes["tp.config"]
    assert ours.attributes["tp.chips"] == theirs.attributes["tp.chips"]
    assert "tp.certificate" not in ours.attributes  # as tp-gen has always written it
    assert _canonical(read_manifest(ours)) == _canonical(read_manifest(theirs))
    got, want = run(ours), run(theirs)
    assert sorted(got) == sorted(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name
        assert got[name].dtype == want[name].dtype


@pytest.mark.parametrize(("fused", "outline"), [(False, False), (True, False), (False, True)])
def test_tp_gen_chips_is_tp_split_of_unsharded(fused: bool, outline: bool) -> None:
    """``tp-gen qwen3 --chips 4`` is ``tp-gen qwen3 --unsharded | tp-opt --tp-split`` by the
    Qwen3 plan, op for op (fused checkpoints by the packed plan `qwen3.plan` builds)."""
    from tp_dialect.frontend import qwen3

    cfg = tiny(chips=4, layers=2, fused_qkv=fused, fused_gate_up=fused)
    ours = program(cfg, outline)
    theirs = program(cfg.unsharded(), outline).clone()
    split_by_plan(theirs, qwen3.plan(cfg), 4)
    assert [str(f) for f in ours.ops] == [str(f) for f in theirs.ops]


def test_fold_allreduce_keeps_the_certificate_and_raises_back() -> None:
    """tp-fold-allreduce spells tp-split's all-reduces as folds: a certified program stays
    certified (the same sums over the same chips), runs bitwise the same, and
    tp-raise-allreduce gives the all-reduces back, op for op."""
    split_once = split(4, layers=2)
    assert status(split_once) == "valid"
    folded = lowered(split_once, "tp-fold-allreduce")
    assert status(folded) == "valid"
    assert not any(isinstance(op, AllReduceOp) for op in folded.walk())
    got, want = run(folded), run(split_once)
    for name in want:
        assert np.array_equal(got[name], want[name]), name
    back = lowered(folded, "tp-raise-allreduce")
    ops = [op.name for op in split_once.walk()]
    assert [op.name for op in back.walk() if not isinstance(op, tensor.EmptyOp)] == [
        n for n in ops if n != "tensor.empty"
    ]


def test_split_program_is_certified_and_checked_by_tp_run(tmp_path: Path) -> None:
    """The CLI path of the issue: tp-gen --unsharded | tp-opt --tp-split=... --tp-verify, then
    tp-run --check against the unsharded program."""
    gen = subprocess.run(
        [str(BIN / "tp-gen"), "qwen3", "--preset", "tiny", "--unsharded", "--layers", "2"],
        capture_output=True,
        text=True,
        check=True,
    )
    out = tmp_path / "split.mlir"
    opt = subprocess.run(
        [
            str(BIN / "tp-opt"),
            "--tp-split=chips=4 plan=plans/qwen3.json",
            "--tp-verify",
            "-o",
            str(out),
        ],
        input=gen.stdout,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert opt.returncode == 0, opt.stderr
    assert "tp.certificate" in out.read_text()
    check = subprocess.run(
        [str(BIN / "tp-run"), str(out), "--random-weights", "0", "--random-inputs", "1"]
        + ["--position", "7", "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(" ok") == 5  # hidden_states and 2 x (key, value)
    # The model and per-layer figures take it as they take a generated program.
    dry = subprocess.run(
        [str(BIN / "tp-run"), str(out), "--dry-run", "--machine", "sn40l", "--mode", "all"],
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0, dry.stderr
    assert "modelled step on 4 x sn40l" in dry.stdout
    phased = tmp_path / "phased.mlir"
    subprocess.run(
        [str(BIN / "tp-opt"), str(out), "--tp-relocate", "--tp-transfers", "--tp-phase"]
        + ["-o", str(phased)],
        check=True,
    )
    stats = subprocess.run(
        [str(BIN / "tp-run"), str(phased), "--random-weights", "0", "--random-inputs", "1"]
        + ["--stats"],
        capture_output=True,
        text=True,
    )
    assert stats.returncode == 0, stats.stderr
    rows = {line.split()[0] + line.split()[1] for line in stats.stdout.splitlines()[2:]}
    assert {"layer0", "layer1"} <= rows


def test_fused_gate_up_splits_by_packed_colwise(tmp_path: Path) -> None:
    """A packed checkpoint tensor (gate and up side by side) cut two runs a chip."""
    plan = ROOT / "plans" / "qwen3.json"
    entries = json.loads(plan.read_text())
    del entries["layers.*.mlp.gate_proj"], entries["layers.*.mlp.up_proj"]
    entries["layers.*.mlp.gate_up_proj"] = "packed_colwise"
    source = program(tiny(chips=1, fused_gate_up=True).unsharded())
    module = source.clone()
    path = tmp_path / "fused.json"
    path.write_text(json.dumps(entries))
    TpSplit(chips=4, plan=str(path)).apply(tp_context(), module)
    got, want = run(module), run(megatron(chips=4, layers=1, fused_gate_up=True))
    for name in want:
        assert np.array_equal(got[name], want[name]), name


def test_a_fused_qkv_splits_by_packed_colwise_of_unequal_blocks(tmp_path: Path) -> None:
    """q, k and v rows packed in one tensor, q twice k's (grouped KV heads): the blocks'
    relative sizes, each cut in N runs, give the hand-written split's three ranges a chip and
    its numbers (the hand-written one spells its all-reduces as folds: the same sums)."""
    entries = json.loads((ROOT / "plans" / "qwen3.json").read_text())
    for name in ("q_proj", "k_proj", "v_proj"):
        del entries[f"layers.*.self_attn.{name}"]
    entries["layers.*.self_attn.qkv_proj"] = {"style": "packed_colwise", "parts": [16, 8, 8]}
    path = tmp_path / "fused.json"
    path.write_text(json.dumps(entries))
    module = program(tiny(chips=1, fused_qkv=True).unsharded()).clone()
    TpSplit(chips=2, plan=str(path)).apply(tp_context(), module)
    theirs = megatron(chips=2, layers=1, fused_qkv=True, fold=True)

    def qkv_slices(m: Any) -> list[str]:
        return [
            str(op.slice)
            for op in m.walk()
            if isinstance(op, ShardOp) and "qkv_proj" in str(op.source.name_hint)
        ]

    assert qkv_slices(module) == qkv_slices(theirs)
    assert "ranges = [(64, 64), (160, 32), (224, 32)]" in qkv_slices(module)[1]
    got, want = run(module), run(theirs)
    assert sorted(got) == sorted(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name


def test_shipped_plans_load_by_name_and_match_hugging_face() -> None:
    assert {"qwen3", "gpt2"} <= set(shipped_plans())
    qwen3 = load_plan("qwen3")
    styles = {e.pattern: e.style for e in qwen3.entries}
    assert styles["layers.*.self_attn.o_proj"] == "rowwise"
    assert styles["layers.*.mlp.gate_proj"] == "colwise"
    assert qwen3.entry_for("model.layers.3.self_attn.q_proj.weight") is not None
    assert qwen3.entry_for("model.layers.3.input_layernorm.weight") is None
    assert qwen3.entry_for("model.layers.x.y.self_attn.q_proj.weight") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "a plan is a non-empty JSON object"),
        ("{", "not JSON"),
        ('{"a.b": "sideways"}', 'style "sideways" is not one of'),
        ('{"a.b": {"style": "colwise", "layout": "diagonal"}}', 'layout "diagonal"'),
        ('{"a.b": {"style": "colwise", "parts": 2}}', "only packed_colwise takes 'parts'"),
        ('{"a.b": {"style": "packed_colwise", "parts": 0}}', "parts must be a whole number"),
        ('{"a.b": {"style": "packed_colwise", "parts": [2, 0]}}', "or a list of 1 to 64"),
        ('{"a.b": {"style": "packed_colwise", "parts": []}}', "relative block sizes"),
        ('{"a.b": {"style": "packed_colwise", "parts": [1.5]}}', "relative block sizes"),
        ('{"a.b": {"style": "colwise", "parts": [1]}}', "only packed_colwise takes 'parts'"),
        ('{"a..b": "colwise"}', "a pattern is dotted names"),
        ('{"a.b": {"style": "colwise", "axis": 1}}', "unknown key 'axis'"),
    ],
)
def test_bad_plans_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(PlanError) as err:
        parse_plan(text, "p.json")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_plan_file_names_the_shipped_plans() -> None:
    module = program(tiny(chips=1).unsharded()).clone()
    with pytest.raises(TpDiagnostic, match="no plan file 'nope.json' \\(shipped plans: gpt2, "):
        TpSplit(chips=2, plan="nope.json").apply(tp_context(), module)


def test_tp_opt_refusal_is_located_one_line(tmp_path: Path) -> None:
    """N not dividing the KV heads: refused where the reshape into heads would cut one."""
    src = tmp_path / "u.mlir"
    gen = [str(BIN / "tp-gen"), "qwen3", "--preset", "tiny", "--unsharded", "-o", str(src)]
    subprocess.run(gen + ["--kv-heads", "2", "--heads", "8"], check=True)
    proc = subprocess.run(
        [str(BIN / "tp-opt"), str(src), "--tp-split=chips=4 plan=qwen3"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(f"{src}:"), proc.stderr
    assert "'tensor.expand_shape' reads %l0_q" in lines[0]
    assert "the cut would fall inside a head [cannot-split]" in lines[0]


MLP_WITH_BIAS = """builtin.module {
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x", tp.role = "input"}, %up: tensor<4x4xf32> {tp.name = "up.weight"}, %ub: tensor<4xf32> {tp.name = "up.bias"}, %down: tensor<4x4xf32> {tp.name = "down.weight"}) -> tensor<1x4xf32> {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x4xf32>
    %zeros = linalg.fill ins(%z : f32) outs(%e : tensor<1x4xf32>) -> tensor<1x4xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<4x4xf32>) outs(%zeros : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %hb = linalg.generic {indexing_maps = [affine_map<(b, o) -> (b, o)>, affine_map<(b, o) -> (o)>, affine_map<(b, o) -> (b, o)>], iterator_types = ["parallel", "parallel"]} ins(%h, %ub : tensor<1x4xf32>, tensor<4xf32>) outs(%e : tensor<1x4xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
    } -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%hb, %down : tensor<1x4xf32>, tensor<4x4xf32>) outs(%zeros : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    func.return %y : tensor<1x4xf32>
  }
}"""


def _split_text(text: str, plan: dict[str, Any], tmp_path: Path) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    from tp_dialect.tools.source import parse_module

    module = parse_module(tp_context(), text, "<test>")[0]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    TpSplit(chips=2, plan=str(path)).apply(tp_context(), module)
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def test_a_column_bias_is_certified_only_where_it_matches_the_row_split(tmp_path: Path) -> None:
    """Fault injection on the coverage rule tp-split leans on: a colwise bias reaching the
    row-split product is proven aligned with the weight's runs; the same program with the
    bias's runs swapped between chips is refused."""
    from tp_dialect.passes.verify import TpVerify
    from tp_dialect.tools.source import parse_module

    good = _split_text(MLP_WITH_BIAS, {"up": "colwise", "down": "rowwise"}, tmp_path)
    TpVerify().apply(tp_context(), parse_module(tp_context(), good, "<good>")[0])
    c0 = "%ub at #tp.slice<axis = 0, ranges = [(0, 2)]"
    c1 = "%ub at #tp.slice<axis = 0, ranges = [(2, 2)]"
    assert c0 in good and c1 in good
    bad = good.replace(c0, "@@").replace(c1, c0).replace("@@", c1)
    with pytest.raises(
        TpDiagnostic,
        match=r"paired differently on the way \(chip 0 shifts \+2 of 4, chip 1 -2 of 4\)"
        r".*\[slices-misaligned\]",
    ):
        TpVerify().apply(tp_context(), parse_module(tp_context(), bad, "<bad>")[0])
