"""tp-split on the outlined form (``@decode`` calling ``@layer`` once a layer): ``@layer`` is
split once, the calls stay, the ports do not change.

For tiny Qwen3 (Hugging Face's plan, N = 1, 2, 4, 8) and tiny GPT-2 (plans/gpt2.json, N = 1,
2, 4): split then inline, inline then split, the outlined split itself and the flat split of
the flat program run bitwise equal on random weights and inputs; tp-verify certifies the
outlined split; its manifest lists the flat split's loads (tensor, chip, slice), in the same
order. Refusals (calls that disagree on a cut, a cut value crossing a call) are located
diagnostics. A Hypothesis property does the same on random outlined MLP chains (10 examples).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import CTX, assert_bitwise, funcs, program, values_for
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.families import ModelConfig
from tp_dialect.ops import ShardOp, UnshardOp
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function, ports
from tp_dialect.tools.source import parse_module

BIN = Path(sys.executable).parent
PLANS = Path(__file__).resolve().parent.parent / "plans"

CASES: dict[str, tuple[ModelConfig, str, tuple[int, ...]]] = {
    "qwen3": (qwen3.Qwen3Config.preset("tiny", layers=2).unsharded(), "qwen3", (1, 2, 4, 8)),
    "gpt2": (gpt2.GPT2Config.preset("tiny", layers=2), "gpt2", (1, 2, 4)),
}
PARAMS = [(model, n) for model, (_, _, ns) in CASES.items() for n in ns]


def source(model: str, outline: bool) -> ModuleOp:
    return program(CASES[model][0], outline)


def split_spec(model: str, chips: int) -> str:
    return f'tp-split{{chips={chips} plan="{PLANS / (CASES[model][1] + ".json")}"}}'


def loads(module: ModuleOp) -> list[tuple[str, int, str]]:
    """The manifest's loads: (tensor, chip, slice), in the manifest's order."""
    return [(ld.tensor, ld.chip, str(ld.slice)) for ld in read_manifest(module).loads]


def stores(module: ModuleOp) -> list[tuple[str, list[tuple[int, str]]]]:
    """The manifest's stores: (output, [(chip, slice)]), without value names."""
    return [
        (st_.output, [(chip, str(slice_)) for chip, _, slice_ in st_.parts])
        for st_ in read_manifest(module).stores
    ]


@pytest.mark.parametrize(("model", "chips"), PARAMS)
def test_split_then_inline_is_inline_then_split(model: str, chips: int) -> None:
    spec = split_spec(model, chips)
    outlined = lowered(source(model, True), f"{spec},tp-verify")
    assert status(outlined) == "valid"
    split_inlined = lowered(outlined, "tp-inline")
    inlined_split = lowered(source(model, True), f"tp-inline,{spec}")
    flat = lowered(source(model, False), spec)
    values = values_for(flat)
    want = run_program(flat, values)
    for module in (outlined, split_inlined, inlined_split):
        assert_bitwise(want, run_program(module, values))
    # The same loads as the flat split, and the ports as the unsharded program states them.
    assert loads(outlined) == loads(flat) == loads(split_inlined)
    assert stores(outlined) == stores(flat)
    assert ports(entry_function(outlined)) == ports(entry_function(source(model, True)))


@pytest.mark.parametrize("model", sorted(CASES))
def test_layer_is_split_once_and_the_calls_stay(model: str) -> None:
    chips = 2
    outlined = lowered(source(model, True), split_spec(model, chips))
    layer, decode = funcs(outlined)["layer"], funcs(outlined)["decode"]
    assert layer.function_type == funcs(source(model, True))["layer"].function_type
    calls = [op for op in decode.walk() if isinstance(op, CallOp)]
    assert len(calls) == CASES[model][0].layers
    assert not any(isinstance(op, ShardOp | UnshardOp) for op in decode.walk())
    # Each shard reads one of @layer's arguments; the flat split has the layers' shards.
    shards = [op for op in layer.walk() if isinstance(op, ShardOp)]
    assert all(s.source in layer.body.block.args for s in shards)
    flat = lowered(source(model, False), split_spec(model, chips))
    assert len(shards) * len(calls) == sum(isinstance(op, ShardOp) for op in flat.walk())
    if model == "qwen3":  # the caches: stored whole by tp.unshard inside @layer
        assert sum(isinstance(op, UnshardOp) for op in layer.walk()) == 2


def test_cli_outlined_split_is_certified_and_checked_by_tp_run(tmp_path: Path) -> None:
    """tp-gen --unsharded --outline | tp-opt --tp-split=... --tp-verify, then tp-run --check
    against the unsharded program."""
    gen = [str(BIN / "tp-gen"), "qwen3", "--preset", "tiny", "--layers", "2", "--unsharded"]
    text = subprocess.run([*gen, "--outline"], capture_output=True, text=True, check=True)
    out = tmp_path / "split.mlir"
    opt = subprocess.run(
        [str(BIN / "tp-opt"), "--tp-split=chips=4 plan=plans/qwen3.json", "--tp-verify"]
        + ["-o", str(out)],
        input=text.stdout,
        capture_output=True,
        text=True,
        cwd=PLANS.parent,
    )
    assert opt.returncode == 0, opt.stderr
    assert "tp.certificate" in out.read_text() and "func.call @layer" in out.read_text()
    check = subprocess.run(
        [str(BIN / "tp-run"), str(out), "--random-weights", "0", "--random-inputs", "1"]
        + ["--position", "7", "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(" ok") == 5  # hidden_states and 2 x (key, value)


def plan_file(tmp_path: Path, plan: dict[str, Any]) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return str(path)


def test_calls_that_disagree_on_a_cut_are_a_located_plan_mismatch(tmp_path: Path) -> None:
    plan = {"layers.0.mlp.down_proj": "colwise", "layers.*.mlp.down_proj": "rowwise"}
    spec = f'tp-split{{chips=2 plan="{plan_file(tmp_path, plan)}"}}'
    with pytest.raises(TpDiagnostic) as err:
        lowered(source("qwen3", True), spec)
    msg = str(err.value)
    assert "[plan-mismatch]" in msg and "@layer's argument %mlp.down_proj.weight" in msg
    assert "call 0 (%l0_out) hands 'model.layers.0.mlp.down_proj.weight'" in msg
    assert "call 1 (%l1_out) hands 'model.layers.1.mlp.down_proj.weight'" in msg
    assert isinstance(err.value.op, CallOp)  # located at the second call
    # The flat program takes the same plan: its layers are split apart.
    lowered(source("qwen3", False), spec)


def test_a_plan_naming_only_some_layers_is_a_plan_mismatch(tmp_path: Path) -> None:
    plan = {"layers.0.mlp.gate_proj": "colwise"}
    spec = f'tp-split{{chips=2 plan="{plan_file(tmp_path, plan)}"}}'
    with pytest.raises(TpDiagnostic, match=r"whole \(no plan entry names it\).*\[plan-mismatch\]"):
        lowered(source("qwen3", True), spec)


_PORTS = (
    '%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, '
    '%down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}'
)
_SIG = "(tensor<1x4xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>"
_CALL = f"func.call @layer(%x, %up) : {_SIG}"
_ARGS = "%x: tensor<1x4xf32>, %up: tensor<8x4xf32>"
_UNFOLLOWED = {
    "a declaration": f"  func.func private @layer{_SIG}",
    "a recursion": f"""  func.func private @layer({_ARGS}) -> tensor<1x4xf32> {{
    %y = {_CALL}
    func.return %y : tensor<1x4xf32>
  }}""",
}


@pytest.mark.parametrize("case", sorted(_UNFOLLOWED))
def test_a_cut_port_handed_to_a_callee_it_cannot_split_is_refused(
    tmp_path: Path, case: str
) -> None:
    text = f"""builtin.module {{
{_UNFOLLOWED[case]}
  func.func @decode({_PORTS}) -> tensor<1x4xf32> {{
    %l = {_CALL}
    func.return %l : tensor<1x4xf32>
  }}
}}"""
    module, _ = parse_module(CTX, text, "<case>")
    plan = plan_file(tmp_path, {"mlp.up": "colwise", "mlp.down": "rowwise"})
    spec = f'tp-split{{chips=2 plan="{plan}"}}'
    with pytest.raises(TpDiagnostic, match=r"'func.call' reads %up .*\[cannot-split\]") as err:
        lowered(module, spec)
    assert isinstance(err.value.op, CallOp) and err.value.op.parent_op() is not None


# -- a property: random outlined MLP chains -------------------------------------------

_MATMUL = (
    "indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, "
    'affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]'
)
_BODY = (
    "    ^bb0(%a: f32, %w: f32, %acc: f32):\n      %m = arith.mulf %a, %w : f32\n"
    "      %s = arith.addf %acc, %m : f32\n      linalg.yield %s : f32\n"
)


def mlp_program(hidden: int, inter: int, layers: int, ret_h: bool) -> str:
    """An outlined chain of ``layers`` MLPs (``x + down·relu(up·x)``); with ``ret_h``, each
    layer also returns its ``up`` product (a cut result when ``up`` is colwise)."""
    x, h = f"tensor<1x{hidden}xf32>", f"tensor<1x{inter}xf32>"
    up, down = f"tensor<{inter}x{hidden}xf32>", f"tensor<{hidden}x{inter}xf32>"
    outs = [x, h] if ret_h else [x]
    ret = ", ".join(outs)
    sig = f"({x}, {up}, {down}) -> ({ret})"
    layer = f"""  func.func private @layer(%x: {x}, %up: {up}, %down: {down}) -> ({ret}) {{
    %z = arith.constant 0.0 : f32
    %eh = tensor.empty() : {h}
    %zh = linalg.fill ins(%z : f32) outs(%eh : {h}) -> {h}
    %h = linalg.generic {{{_MATMUL}}} ins(%x, %up : {x}, {up}) outs(%zh : {h}) {{
{_BODY}    }} -> {h}
    %act = arith.maximumf %h, %zh : {h}
    %ex = tensor.empty() : {x}
    %zx = linalg.fill ins(%z : f32) outs(%ex : {x}) -> {x}
    %y = linalg.generic {{{_MATMUL}}} ins(%act, %down : {h}, {down}) outs(%zx : {x}) {{
{_BODY}    }} -> {x}
    %out = arith.addf %x, %y : {x}
    func.return {"%out, %h" if ret_h else "%out"} : {ret}
  }}
"""
    args = [f'%x: {x} {{tp.name = "x", tp.role = "input"}}']
    lines, results, prev = [], [], "%x"
    for i in range(layers):
        for w, t in (("up", up), ("down", down)):
            name = f"layers.{i}.mlp.{w}.weight"
            args.append(f'%{w}.{i}: {t} {{tp.name = "{name}", tp.role = "weight"}}')
        res = f"%l{i}, %h{i}" if ret_h else f"%l{i}"
        lines.append(f"    {res} = func.call @layer({prev}, %up.{i}, %down.{i}) : {sig}")
        prev = f"%l{i}"
        if ret_h:
            results.append((f"%h{i}", h, f"h.{i}"))
    results.insert(0, (prev, x, "x"))
    res_types = ", ".join(f'{t} {{tp.name = "{n}"}}' for _, t, n in results)
    values, types = (", ".join(r[k] for r in results) for k in (0, 1))
    lines.append(f"    func.return {values} : {types}")
    decode = f"  func.func @decode({', '.join(args)}) -> ({res_types}) {{\n" + "\n".join(lines)
    return f"builtin.module {{\n{layer}{decode}\n  }}\n}}\n"


STYLE_PAIRS = [("colwise", "rowwise"), ("replicate", "rowwise"), ("colwise", "replicate")]


@settings(max_examples=10, deadline=None)
@given(
    hidden=st.sampled_from([4, 8]),
    mult=st.sampled_from([1, 2]),
    layers=st.integers(1, 3),
    chips=st.sampled_from([1, 2, 4]),
    styles=st.sampled_from(STYLE_PAIRS),
    ret_h=st.booleans(),
)
def test_property_outlined_split_is_the_flat_split(
    tmp_path_factory: pytest.TempPathFactory,
    hidden: int,
    mult: int,
    layers: int,
    chips: int,
    styles: tuple[str, str],
    ret_h: bool,
) -> None:
    inter = hidden * mult
    module, _ = parse_module(CTX, mlp_program(hidden, inter, layers, ret_h), "<mlp>")
    plan = {"mlp.up": styles[0], "mlp.down": styles[1]}
    spec = f'tp-split{{chips={chips} plan="{plan_file(tmp_path_factory.mktemp("p"), plan)}"}}'
    outlined = lowered(module, f"{spec},tp-verify")
    assert status(outlined) == "valid"
    flat = lowered(module, f"tp-inline,{spec}")
    values = values_for(module)
    want = run_program(flat, values)
    assert_bitwise(want, run_program(outlined, values))
    assert_bitwise(want, run_program(lowered(outlined, "tp-inline"), values))
    assert loads(outlined) == loads(flat)
    assert sum(isinstance(op, ShardOp) for op in funcs(outlined)["decode"].walk()) == 0
