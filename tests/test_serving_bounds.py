"""The step's bound: the compute bound (useful FLOPs over N x peak) beside the physical
(memory) bound, the larger naming itself; a whole-model prefill is modelled no faster than it."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import hf_models
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.machine import MACHINES
from tp_dialect.runtime.model import ComputeBound, PhysicalBound, StepBound, model
from tp_dialect.tools import tp_gen, tp_run
from tp_dialect.tools.run_model import model_modes
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

SN40L = MACHINES["sn40l"]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# y[b, o] = sum_k x[b, k] * w[o, k] (2 x 4 outputs over 8 terms) and a sum of squares
# s[b] = sum_k x[b, k]^2 (a norm's: one operand, not a product of two).
MATMUL_AND_NORM = """
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2x4xf32>
    %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>,
        affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : tensor<2x8xf32>, tensor<4x8xf32>) outs(%i : tensor<2x4xf32>) {
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %m = arith.mulf %a, %c : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4xf32>
    %e2 = tensor.empty() : tensor<2xf32>
    %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %ss = linalg.generic {indexing_maps = [affine_map<(b, k) -> (b, k)>,
        affine_map<(b, k) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<2x8xf32>) outs(%i2 : tensor<2xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %m = arith.mulf %a, %a : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2xf32>
    func.return %y, %ss : tensor<2x4xf32>, tensor<2xf32>
  }
}
"""


def parsed(text: str) -> ModuleOp:
    return parse_module(tp_context(), text, "<test>")[0]


def test_compute_bound_counts_the_products_by_hand() -> None:
    """One chip: the matmul's 2 x 4 x 8 multiply-adds are 128 FLOPs; the sum of squares is
    left out. The bound is 128 / (1 x peak)."""
    report, _ = model_modes(parsed(MATMUL_AND_NORM), SN40L, ["sequential"])["sequential"]
    assert report.compute.flops == 2 * (2 * 4 * 8)
    assert report.compute.seconds == pytest.approx(128 / SN40L.peak_flops)


def test_compute_bound_of_a_split_program_sums_the_chips_by_hand() -> None:
    """examples/megatron_mlp.mlir: each of 2 chips multiplies x [1, 8] by its 8 x 8 slices of
    gate, up and down (3 x 64 multiply-adds): 2 x 3 x 64 x 2 = 768 FLOPs, the unsharded MLP's
    (3 matmuls of 1 x 16 x 8), over 2 chips' peak — at every stage the model runs."""
    module = parsed((EXAMPLES / "megatron_mlp.mlir").read_text())
    for mode in ("phase", "dataflow"):
        report, _ = model_modes(module, SN40L, [mode])[mode]
        assert report.compute.flops == 3 * (2 * 1 * 16 * 8), mode
        assert report.compute.seconds == pytest.approx(768 / (2 * SN40L.peak_flops)), mode


def test_the_step_bound_is_the_larger_and_names_it() -> None:
    """max(compute, physical); the physical bound names its larger part (HBM or links)."""
    hbm = PhysicalBound(seconds=2.0, hbm_s=1.5, link_s=0.5)
    link = PhysicalBound(seconds=2.0, hbm_s=0.5, link_s=1.5)
    assert StepBound(ComputeBound(3.0), hbm).seconds == 3.0
    assert StepBound(ComputeBound(3.0), hbm).binding == "compute-bound"
    assert StepBound(ComputeBound(1.0), hbm).seconds == 2.0
    assert StepBound(ComputeBound(1.0), hbm).binding == "HBM-bound"
    assert StepBound(ComputeBound(1.0), link).binding == "link-bound"


@pytest.mark.parametrize(
    ("fields", "binding"),
    [
        ({}, "link-bound"),
        ({"link_latency": 0.0, "link_bandwidth": 1e15}, "HBM-bound"),
        ({"peak_flops": 1e6}, "compute-bound"),
    ],
)
def test_the_report_names_the_binding_bound(fields: dict[str, float], binding: str) -> None:
    """The MLP's 768 FLOPs, ~1.5 KB a chip and one all-reduce: on sn40l the all-reduce's
    5 us latency outweighs the rest (link-bound); on instant links the HBM time does; on a
    chip of 1 MFLOP/s its 384 FLOPs a chip take 384 us (compute-bound). Summary and JSON say
    which, the step no faster than the bound in each case."""
    machine = replace(SN40L, **fields)
    module = parsed((EXAMPLES / "megatron_mlp.mlir").read_text())
    report, _ = model_modes(module, machine, ["phase"])["phase"]
    data = report.to_json()
    assert data["binding"] == binding and binding in report.summary()
    compute = 768 / (2 * machine.peak_flops)
    assert data["compute_bound_s"] == pytest.approx(compute)
    assert data["step_bound_s"] == pytest.approx(max(compute, report.physical.seconds))
    assert report.step_time >= report.bound.seconds


def whole_model(tmp_path: Path, step: str, tokens: int, chips: int = 1) -> Path:
    """The tiny qwen3's step program (tp-gen --from-pretrained), batch 1, 32 positions."""
    d = hf_models.write_model(tmp_path / "qwen3", "qwen3")
    out = tmp_path / f"{step}{tokens}.mlir"
    argv = ["--from-pretrained", str(d), "--step", step, "--max-positions", "32"]
    argv += ["--prompt-len", str(tokens)] if step == "prefill" else []
    argv += ["--chips", str(chips)] if chips > 1 else []
    assert tp_gen.main([*argv, "-o", str(out)]) == 0
    return out


def tiny_flops(tokens: int, positions: int = 32, batch: int = 1) -> int:
    """The tiny qwen3's products by hand (tests/hf_models.TINY): per layer the q, k, v, o
    projections and the gate, up, down MLP over ``tokens`` tokens, attention's scores and
    weighted values over every cache position for each head; the head on the last token."""
    cfg = hf_models.TINY["qwen3"]
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    projections = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * i
    attention = 2 * heads * tokens * positions * hd
    layer = 2 * batch * tokens * projections + 2 * batch * attention
    return cfg["num_hidden_layers"] * layer + 2 * batch * v * h


@pytest.mark.parametrize("chips", [1, 2])
@pytest.mark.parametrize(("step", "tokens"), [("prefill", 16), ("decode", 1)])
def test_a_whole_model_step_is_no_faster_than_its_bound(
    tmp_path: Path, step: str, tokens: int, chips: int
) -> None:
    """The tiny qwen3's prefill of 16 tokens and its decode step, unsharded and split over 2
    chips by the HF plan: the FLOPs counted by hand (the split's chips add up to the
    unsharded count), and in every mode the modelled step is no faster than
    max(compute, physical)."""
    path = whole_model(tmp_path, step, tokens, chips)
    module = parsed(path.read_text())
    modes = ["sequential", "phase"] if chips == 1 else ["phase", "dataflow"]
    for mode, (report, _) in model_modes(module, SN40L, modes, "auto").items():
        assert report.compute.flops == tiny_flops(tokens), mode
        assert report.compute.seconds == pytest.approx(
            tiny_flops(tokens) / (chips * SN40L.peak_flops)
        )
        assert report.step_time >= report.bound.seconds > 0, mode
        assert report.step_time >= report.compute.seconds, mode


def test_a_compute_bound_prefill_says_so_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tp-run --dry-run on a prefill, on a machine whose HBM is fast beside its compute:
    the one line says compute-bound; --report holds the compute bound and the binding."""
    path = whole_model(tmp_path, "prefill", 16)
    spec = tmp_path / "slow.json"
    spec.write_text(json.dumps({"base": "sn40l", "peak_flops": 1e9}))
    report = tmp_path / "r.json"
    argv = [str(path), "--dry-run", "--machine", str(spec), "--report", str(report)]
    assert tp_run.main(argv) == 0
    out = capsys.readouterr().out
    assert "compute-bound" in out
    data = json.loads(report.read_text())
    assert data["binding"] == "compute-bound"
    assert data["compute_bound"]["flops"] == tiny_flops(16)
    assert data["compute_bound_s"] == pytest.approx(tiny_flops(16) / 1e9)
    assert data["step_time_s"] >= data["step_bound_s"] == data["compute_bound_s"]


def test_model_of_a_whole_model_step_runs_its_layers(tmp_path: Path) -> None:
    """A one-chip whole-model prefill runs each @layer call inside a section: the model
    charges the callee's work (the step is no faster than the FLOPs over one chip's peak)."""
    path = whole_model(tmp_path, "prefill", 16)
    module = parsed(path.read_text())
    machine = replace(SN40L, peak_flops=1e9)
    report, _ = model_modes(module, machine, ["sequential"])["sequential"]
    assert report.step_time >= tiny_flops(16) / 1e9


@pytest.mark.parametrize("algorithm", ["twoshot", "ring"])
def test_outlined_programs_count_each_sliced_all_reduce_once(algorithm: str) -> None:
    """Per-chip programs calling per-chip @layer functions, each all-reduce spelled as N
    folds of 1/N slices: the bound counts one all-reduce per sum — two a layer, as the flat
    program does — not one per slice (the bug that doubled a prefill's link time at N = 2)."""
    from tp_dialect.frontend.qwen3 import Qwen3Config, generate
    from tp_dialect.passes.universe import lowered
    from tp_dialect.runtime.model.bounds import allreduces
    from tp_dialect.signature import entry_function

    cfg = Qwen3Config.preset("tiny", layers=3, chips=2)
    module = parsed(generate(cfg, outline=True))
    spec = f"tp-relocate{{allreduce={algorithm}}},tp-transfers,tp-link-points"
    outlined = lowered(module, spec)
    flat = lowered(module, f"tp-inline,{spec}")
    assert len(allreduces(entry_function(flat))) == 2 * 3
    assert allreduces(entry_function(outlined)) == allreduces(entry_function(flat))


def test_the_physical_bound_reads_the_rows_an_embedding_gathers(tmp_path: Path) -> None:
    """The tiny qwen3's decode step (f32, 32 positions) on one chip moves, by hand: every
    weight but the embedding table whole, the one row of the table its token looks up, every
    layer's key and value caches read whole and one entry of each written, the token id read
    (input_ids [1, 1] i64) and next_ids [1] i64 written."""
    path = whole_model(tmp_path, "decode", 1)
    report, _ = model_modes(parsed(path.read_text()), SN40L, ["sequential"])["sequential"]
    cfg = hf_models.config_for("qwen3")
    shapes = hf_models.expected_tensors(cfg)
    h, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    kv, hd, p = cfg["num_key_value_heads"], cfg["head_dim"], 32
    weights = sum(np.prod(s) for name, s in shapes.items() if "embed_tokens" not in name)
    caches = layers * 2 * (kv * p * hd + kv * 1 * hd)
    assert report.physical.hbm_bytes == [4 * (weights + h + caches) + 8 + 8]


_SPLIT_PREFILL: dict[str, ModuleOp] = {}


def split_prefill(mode: str) -> ModuleOp:
    """The tiny qwen3's prefill of 16 tokens split over 2 chips, lowered once per mode's
    stage (one-shot all-reduces: the lowering does not depend on the machine)."""
    if mode not in _SPLIT_PREFILL:
        from tp_dialect.passes.universe import lowered

        d = hf_models.write_model(Path(tempfile.mkdtemp()) / "qwen3", "qwen3")
        argv = ["--from-pretrained", str(d), "--prompt-len", "16", "--max-positions", "32"]
        text = tp_gen.pretrained_text(tp_gen.parser().parse_args([*argv, "--chips", "2"]))
        spec = "tp-relocate{allreduce=oneshot},tp-transfers"
        spec += ",tp-link-points" if mode == "dataflow" else ",tp-phase"
        _SPLIT_PREFILL[mode] = lowered(parsed(text), spec)
    return _SPLIT_PREFILL[mode]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(["phase", "dataflow"]),
    peak=st.floats(1e6, 1e16),
    hbm=st.floats(1e6, 1e14),
    link=st.floats(1e6, 1e13),
    latency=st.floats(0.0, 1e-3),
    topology=st.sampled_from(["all-to-all", "ring"]),
)
def test_no_machine_models_a_step_below_its_bound(
    mode: str, peak: float, hbm: float, link: float, latency: float, topology: str
) -> None:
    """Invariant: on any machine (peak FLOPs, HBM and link bandwidths, link latency,
    topology), the split prefill is modelled no faster than max(compute, physical)."""
    machine = replace(
        SN40L,
        peak_flops=peak,
        hbm_bandwidth=hbm,
        link_bandwidth=link,
        link_latency=latency,
        topology=topology,
    )
    report, _ = model(split_prefill(mode), machine, mode)
    assert report.step_time >= report.bound.seconds * (1 - 1e-9)
