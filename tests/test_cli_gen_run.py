"""tp-gen and tp-run as a user meets them: files in, files out, clear refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import tool
from safetensors.numpy import save_file

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def layer(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("gen")
    out, manifest = d / "layer.mlir", d / "layer.json"
    proc = tool(
        "tp-gen",
        "qwen3",
        "--preset",
        "tiny",
        "--layers",
        "2",
        "--chips",
        "4",
        "-o",
        out,
        "--manifest",
        manifest,
    )
    assert proc.returncode == 0, proc.stderr
    return out, manifest


def test_gen_writes_a_program_and_its_manifest(layer) -> None:
    out, manifest = layer
    assert out.read_text().count("tp.allreduce") == 4
    data = json.loads(manifest.read_text())
    assert data["chips"] == 4
    assert {ld["tensor"] for ld in data["loads"]} >= {"model.layers.1.mlp.down_proj.weight"}


def test_run_check_passes_and_writes_outputs_by_name(layer, tmp_path) -> None:
    out, _ = layer
    result = tmp_path / "out.npz"
    proc = tool(
        "tp-run",
        out,
        "--random-weights",
        1,
        "--random-inputs",
        2,
        "--position",
        7,
        "--outputs",
        result,
        "--check",
    )
    assert proc.returncode == 0, proc.stderr
    assert "hidden_states" in proc.stdout and "FAIL" not in proc.stdout
    with np.load(result) as data:
        assert sorted(data.files) == sorted(
            [
                "hidden_states",
                "present_key.0",
                "present_value.0",
                "present_key.1",
                "present_value.1",
            ]
        )


def test_run_from_a_checkpoint_and_inputs_file(layer, tmp_path) -> None:
    """A safetensors checkpoint under HF names and an npz of inputs run and check."""
    out, _ = layer
    from tp_dialect.runtime.checkpoint import random_inputs, random_weights
    from tp_dialect.tools.source import load_program
    from tp_dialect.universe import tp_context

    module = load_program(tp_context(), str(out))
    ckpt, inputs = tmp_path / "w.safetensors", tmp_path / "in.npz"
    save_file(random_weights(module, 4), str(ckpt))
    np.savez(inputs, **random_inputs(module, 5, position=2))
    proc = tool("tp-run", out, "--weights", ckpt, "--inputs", inputs, "--check")
    assert proc.returncode == 0, proc.stderr + proc.stdout

    # A mis-shaped input is named, with expected and found shapes; nothing else is printed.
    with np.load(inputs) as data:
        bad = {k: data[k] for k in data.files}
    bad["hidden_states"] = np.zeros((3, 64), np.float32)
    np.savez(inputs, **bad)
    proc = tool("tp-run", out, "--weights", ckpt, "--inputs", inputs)
    assert proc.returncode == 1
    assert "argument 'hidden_states': expected shape [1, 64], found [3, 64]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_names_a_missing_checkpoint_tensor(layer, tmp_path) -> None:
    out, _ = layer
    ckpt = tmp_path / "partial.safetensors"
    save_file({"model.layers.0.input_layernorm.weight": np.ones(64, np.float32)}, str(ckpt))
    proc = tool("tp-run", out, "--weights", ckpt, "--random-inputs", 1)
    assert proc.returncode == 1
    assert "checkpoint has no tensor 'model.layers.0.self_attn.q_proj.weight'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_check_fails_when_the_program_is_wrong(layer, tmp_path) -> None:
    """--check can fail: a program whose chip 1 partial is dropped is caught."""
    out, _ = layer
    text = out.read_text()
    # Swap chip 1's o_proj rows for chip 0's: a wrong split that still verifies.
    broken = text.replace(
        "ranges = [(32, 32)], full = [64, 128]", "ranges = [(0, 32)], full = [64, 128]"
    )
    assert broken != text
    bad = tmp_path / "broken.mlir"
    bad.write_text(broken)
    proc = tool("tp-run", bad, "--random-weights", 1, "--random-inputs", 2, "--check")
    assert proc.returncode == 1
    assert "FAIL" in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [
        "tp-run: error: check failed: hidden_states, present_key.1, present_value.1 beyond "
        "tolerance of the unsharded program"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chips", "3"], "3 chips do not divide the 8 KV heads"),
        (["--hidden", "0"], "hidden must be positive, got 0"),
        (["--heads", "12", "--kv-heads", "8"], "heads (12) must be a multiple of kv_heads (8)"),
        (["--head-dim", "7"], "head_dim (7) must be even for RoPE"),
        (["--preset", "nope"], "invalid choice: 'nope'"),
    ],
)
def test_gen_refuses_what_cannot_be_split(args: list[str], message: str) -> None:
    proc = tool("tp-gen", "qwen3", *args)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_refuses_a_bad_program_with_a_location(tmp_path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("builtin.module attributes {tp.chips = 1 : i64} {\n  %x = tp.nope\n}\n")
    proc = tool("tp-run", bad, "--random-weights", 1, "--random-inputs", 1)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{bad}:2:")


def test_check_against_an_explicit_unsharded_file(layer, tmp_path) -> None:
    out, _ = layer
    plain = tmp_path / "plain.mlir"
    assert (
        tool(
            "tp-gen", "qwen3", "--preset", "tiny", "--layers", "2", "--unsharded", "-o", plain
        ).returncode
        == 0
    )
    proc = tool("tp-run", out, "--random-weights", 1, "--random-inputs", 2, "--against", plain)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(" ok") == 5


def test_run_warns_on_a_missing_or_stale_certificate(layer, tmp_path) -> None:
    out, _ = layer
    proc = tool("tp-run", out, "--random-weights", 1, "--random-inputs", 1)
    assert "carries no shard-obligation certificate" in proc.stderr
    verified = tmp_path / "verified.mlir"
    assert tool("tp-opt", out, "--tp-verify", "-o", verified).returncode == 0
    proc = tool("tp-run", verified, "--random-weights", 1, "--random-inputs", 1)
    assert proc.returncode == 0 and "warning" not in proc.stderr
    # Relocation moves work onto chips: a certified program is checked again and stays
    # certified, an uncertified one stays without ...
    relocated = tmp_path / "relocated.mlir"
    assert tool("tp-opt", verified, "--tp-relocate", "-o", relocated).returncode == 0
    proc = tool("tp-run", relocated, "--random-weights", 1, "--random-inputs", 1)
    assert proc.returncode == 0 and "warning" not in proc.stderr
    assert tool("tp-opt", out, "--tp-relocate", "-o", relocated).returncode == 0
    assert (
        "carries no shard-obligation certificate"
        in tool("tp-run", relocated, "--random-weights", 1, "--random-inputs", 1).stderr
    )
    # ... and a hand edit that moves a partial to another chip's slice makes it stale.
    text = verified.read_text().replace(
        "ranges = [(32, 32)], full = [64, 128]", "ranges = [(0, 32)], full = [64, 128]"
    )
    edited = tmp_path / "edited.mlir"
    edited.write_text(text)
    proc = tool("tp-run", edited, "--random-weights", 1, "--random-inputs", 1)
    assert "certificate is stale" in proc.stderr


def test_run_models_the_step_and_writes_report_trace_timeline(layer, tmp_path) -> None:
    out, _ = layer
    report, trace, png = tmp_path / "r.json", tmp_path / "t.json", tmp_path / "t.png"
    proc = tool(
        "tp-run",
        out,
        "--dry-run",
        "--machine",
        "sn40l",
        "--mode",
        "relay",
        "--report",
        report,
        "--trace",
        trace,
        "--timeline",
        png,
    )
    assert proc.returncode == 0, proc.stderr
    assert "modelled step on 4 x sn40l (relay mode)" in proc.stdout
    data = json.loads(report.read_text())
    assert data["mode"] == "relay" and data["chips"] == 4
    assert data["step_time_s"] > 0 and data["lower_bound_s"] > 0
    assert [row["layer"] for row in data["layers"]] == ["prologue", "layer 0", "layer 1"]
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events) and any(e.get("ph") == "s" for e in events)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    proc = tool("tp-run", out, "--dry-run", "--machine", "tpu9")
    assert proc.returncode == 1 and "no machine 'tpu9'" in proc.stderr
