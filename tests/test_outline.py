"""The outlined form (``tp-gen --outline``: one private ``@layer`` that ``@decode`` calls
once a layer) against the flat program, and ``tp-inline``, which gives the flat one back.

Outlined and flat programs have the same ports and loading map and give bitwise the same
outputs on the same weights and inputs (tiny Qwen3 at N = 1, 2, 4, 8 and unsharded, GPT-2;
a Hypothesis property over layers and chips). tp-inline of the outlined program is the flat
program up to SSA names and the constants and filled tensors the flat generator writes once
per function, which every inlined layer writes again: once CSE has merged those (and
identical ``linalg.fill``s, which xDSL's CSE leaves since they are not pure) the two print
the same with names erased, and they run bitwise equal.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CTX, assert_bitwise, program, tiny, values_for
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.analysis.schedule.stats import pipeline_stats
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.families import ModelConfig, generate
from tp_dialect.names import LAYER_ATTR
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function, ports
from tp_dialect.tools import tp_gen
from tp_dialect.tools.source import parse_module

CONFIGS: dict[str, ModelConfig] = {
    **{f"c{n}": tiny(chips=n, layers=2) for n in (1, 2, 4, 8)},
    "unsharded": tiny(layers=2, batch=2).unsharded(),
    "c4-fold-fused-bf16": tiny(
        chips=4, layers=2, fold=True, fused_qkv=True, fused_gate_up=True, dtype="bf16"
    ),
    "gpt2": gpt2.GPT2Config.preset("tiny", layers=2),
}


def normal_form(module: ModuleOp) -> str:
    """``module`` printed after CSE, identical fills merged and every SSA name erased."""
    m = module.clone()
    CommonSubexpressionElimination().apply(CTX, m)
    for f in m.ops:
        if isinstance(f, FuncOp) and f.body.blocks:
            first: dict[tuple[Any, ...], Any] = {}
            for op in list(f.body.block.ops):
                if op.name != "linalg.fill":
                    continue
                key = (tuple(op.operands), op.results[0].type)
                if key in first:
                    op.results[0].replace_all_uses_with(first[key].results[0])
                    op.detach()
                    op.erase()
                else:
                    first[key] = op
    CommonSubexpressionElimination().apply(CTX, m)
    for op in m.walk():
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            value.name_hint = None
    return str(m)


def loading_map(module: ModuleOp) -> tuple[list[Any], list[Any]]:
    """The manifest's loads and stores without value names (which name the callee's values
    in an outlined program)."""
    m = read_manifest(module).to_json()
    loads = [{k: v for k, v in ld.items() if k != "value"} for ld in m["loads"]]
    stores = [
        (st_["output"], [{k: v for k, v in p.items() if k != "value"} for p in st_["parts"]])
        for st_ in m["stores"]
    ]
    return loads, stores


# -- the outlined program ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_outlined_runs_bitwise_as_flat(name: str) -> None:
    flat, outlined = program(CONFIGS[name], False), program(CONFIGS[name], True)
    values = values_for(flat)
    assert_bitwise(run_program(flat, values), run_program(outlined, values))


@pytest.mark.parametrize("name", ["c2", "unsharded"])
def test_outlined_runs_bitwise_as_flat_under_storage_semantics(name: str) -> None:
    flat, outlined = program(CONFIGS[name], False), program(CONFIGS[name], True)
    values = values_for(flat, position=9)
    a = run_program(flat, values, storage=True)
    assert_bitwise(a, run_program(outlined, values, storage=True))
    assert_bitwise(a, run_program(flat, values))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_ports_and_loading_map_are_the_flat_programs(name: str) -> None:
    flat, outlined = program(CONFIGS[name], False), program(CONFIGS[name], True)
    assert ports(entry_function(flat)) == ports(entry_function(outlined))
    assert entry_function(flat).arg_attrs == entry_function(outlined).arg_attrs
    assert entry_function(flat).res_attrs == entry_function(outlined).res_attrs
    assert loading_map(flat) == loading_map(outlined)


def test_one_private_layer_called_once_a_layer_with_its_weights() -> None:
    cfg = tiny(chips=2, layers=3)
    module = program(cfg, True)
    layer, decode = [op for op in module.ops if isinstance(op, FuncOp)]
    assert (layer.sym_name.data, decode.sym_name.data) == ("layer", "decode")
    assert layer.sym_visibility is not None and layer.sym_visibility.data == "private"
    assert layer.arg_attrs is None  # ports are the entry's alone
    weights = list(qwen3.weight_names(cfg, 0))
    # hidden state, position, cos, sin, the weights, the two caches -> hidden, two caches
    assert len(layer.args) == 4 + len(weights) + 2 and len(layer.function_type.outputs) == 3
    calls = [op for op in decode.walk() if isinstance(op, CallOp)]
    assert [c.callee.string_value() for c in calls] == ["layer"] * 3
    names = [p.name for p in ports(decode)[0]]
    for i, call in enumerate(calls):
        handed = [names[a.index] for a in call.arguments[4:]]  # type: ignore[attr-defined]
        assert handed == [*qwen3.weight_names(cfg, i), f"past_key.{i}", f"past_value.{i}"]
    # the next layer reads this one's hidden state
    assert all(calls[i + 1].arguments[0] is calls[i].results[0] for i in range(2))
    # each call states the layer it runs
    assert [c.attributes[LAYER_ATTR] for c in calls] == [IntegerAttr(i, 64) for i in range(3)]


def test_a_calls_layer_is_the_one_it_states_whatever_its_results_are_named() -> None:
    """With every value of @decode renamed (no ``l<k>_`` left), tp-inline still names each
    copy's values by its call's ``tp.layer``, and the per-layer figures of the lowered
    program are the same, row for row."""
    module = program(CONFIGS["c2"], True)
    renamed = module.clone()
    for i, op in enumerate(entry_function(renamed).walk()):
        for r in op.results:
            r.name_hint = f"v{i}_{r.index}"
    inlined = lowered(renamed, "tp-inline")
    names = {r.name_hint for op in inlined.walk() for r in op.results}
    assert {"l0_q_weight_c0", "l1_q_weight_c0", "l0_o_sum", "l1_o_sum"} <= names
    assert not any(n and n.startswith("l0_out") for n in names)  # a call's results: renamed
    pipeline = "tp-relocate,tp-transfers,tp-phase"
    rows = pipeline_stats(lowered(renamed, pipeline))
    assert [r.layer for r in rows] == ["prologue", "layer 0", "layer 1"]
    assert rows == pipeline_stats(lowered(module, pipeline))


def test_flat_is_still_the_default() -> None:
    cfg = tiny(chips=2, layers=2)
    assert generate(cfg) == generate(cfg, outline=False)
    assert "func.call" not in generate(cfg) and "@layer" not in generate(cfg)


# -- tp-inline --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_inline_gives_the_flat_program_back(name: str) -> None:
    flat, outlined = program(CONFIGS[name], False), program(CONFIGS[name], True)
    inlined = lowered(outlined, "tp-inline")
    assert [f.sym_name.data for f in inlined.ops if isinstance(f, FuncOp)] == ["decode"]
    assert not any(isinstance(op, CallOp) for op in inlined.walk())
    assert normal_form(inlined) == normal_form(flat)
    values = values_for(flat)
    assert_bitwise(run_program(flat, values), run_program(inlined, values))


def test_inline_leaves_a_flat_program_as_it_is() -> None:
    flat = program(CONFIGS["c2"], False)
    assert str(lowered(flat, "tp-inline")) == str(flat)


def test_inline_keeps_a_certificate() -> None:
    """tp-verify certifies the outlined program (it follows calls); inlining moves no work
    between chips, so the certificate stays valid, as tp-verify of the result agrees."""
    verified = lowered(program(CONFIGS["c4"], True), "tp-verify")
    assert status(verified) == "valid"
    inlined = lowered(verified, "tp-inline")
    assert status(inlined) == "valid"
    assert status(lowered(inlined, "tp-verify")) == "valid"


def test_cli_outline_writes_the_same_manifest(tmp_path: Any) -> None:
    out: dict[bool, Any] = {}
    for outline in (False, True):
        mlir, manifest = tmp_path / f"{outline}.mlir", tmp_path / f"{outline}.json"
        argv = ["qwen3", "--chips", "2", "--layers", "2", "-o", str(mlir)]
        argv += ["--manifest", str(manifest)] + (["--outline"] if outline else [])
        assert tp_gen.main(argv) == 0
        out[outline] = parse_module(CTX, mlir.read_text(), str(mlir))[0]
    assert loading_map(out[False]) == loading_map(out[True])
    assert "func.call @layer" in (tmp_path / "True.mlir").read_text()


# -- the property -----------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(
    layers=st.integers(1, 3),
    chips=st.sampled_from([1, 2, 4]),
    unsharded=st.booleans(),
    fold=st.booleans(),
    fused=st.booleans(),
    position=st.integers(0, 15),
)
def test_flat_and_outlined_agree(
    layers: int, chips: int, unsharded: bool, fold: bool, fused: bool, position: int
) -> None:
    cfg = tiny(layers=layers, chips=chips, fold=fold, fused_qkv=fused, fused_gate_up=fused)
    if unsharded:
        cfg = cfg.unsharded()
    flat, outlined = program(cfg, False), program(cfg, True)
    values = values_for(flat, position)
    assert_bitwise(run_program(flat, values), run_program(outlined, values))


@pytest.mark.parametrize("stated", ['"first"', "-1 : i64", "2.0 : f32"])
def test_a_call_stating_a_bad_layer_is_refused_at_the_call(stated: str) -> None:
    text = generate(tiny(chips=2, layers=1), outline=True).replace(
        "{tp.layer = 0 : i64}", f"{{tp.layer = {stated}}}"
    )
    module, _ = parse_module(CTX, text, "<bad layer>")
    with pytest.raises(TpDiagnostic) as err:
        lowered(module, "tp-inline")
    assert err.value.message.endswith(": a layer is an integer >= 0")
    assert isinstance(err.value.op, CallOp)
