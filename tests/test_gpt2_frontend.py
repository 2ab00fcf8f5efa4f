"""The GPT-2 generator (``tp-gen gpt2 --unsharded``): its program run by the reference
interpreter equals an independent plain-numpy GPT-2 (tests/gpt2_numpy_reference.py), its
ports are Hugging Face ``GPT2Model``'s, its config regenerates it, its refusals are one line,
and factoring the shared pieces out of the Qwen3 generator left Qwen3's text unchanged."""

from __future__ import annotations

import functools
import gzip
import hashlib
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from gpt2_numpy_reference import gpt2_decode, random_gpt2_weights
from helpers import tool
from megatron import FOLDER, golden_name
from safetensors.numpy import save_file
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr

from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.blocks import GenError
from tp_dialect.frontend.families import config_from_attr, family_of, unsharded_text
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import entry_function, ports
from tp_dialect.tools import tp_gen
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent


@functools.cache
def program(cfg: gpt2.GPT2Config) -> ModuleOp:
    """``cfg``'s decode step, parsed and verified (cached: the tests reuse programs)."""
    module, _ = parse_module(tp_context(), gpt2.generate(cfg), f"<{cfg}>")
    module.verify()
    return module


def tiny(**overrides: int | str) -> gpt2.GPT2Config:
    return gpt2.GPT2Config.preset("tiny", **overrides)


def reference(cfg: gpt2.GPT2Config, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return gpt2_decode(values, values, layers=cfg.layers, heads=cfg.heads, eps=cfg.eps)


def assert_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray], rtol: float) -> None:
    """Every output within ``rtol`` of its largest magnitude (f32 against float64)."""
    assert set(got) == set(want)
    for name in want:
        scale = float(np.max(np.abs(want[name]))) or 1.0
        err = float(np.max(np.abs(got[name].astype(np.float64) - want[name])))
        assert err <= rtol * scale, f"{name}: max abs err {err:.3e} (scale {scale:.3g})"


# -- numerics -------------------------------------------------------------------------


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("batch", [1, 2])
def test_program_equals_numpy_gpt2(layers: int, batch: int) -> None:
    cfg = tiny(layers=layers, batch=batch)
    module = program(cfg)
    for position in (0, 5, cfg.max_positions - 1):
        values = {
            **random_weights(module, seed=position + 1),
            **random_inputs(module, seed=position + 2, position=position),
        }
        got = run_program(module, values)
        assert_close(got, reference(cfg, values), 5e-6)
        # The caches changed exactly at `position` (the write is real, not a copy).
        for i in range(layers):
            for kind in ("key", "value"):
                past, present = values[f"past_{kind}.{i}"], got[f"present_{kind}.{i}"]
                keep = np.ones(cfg.max_positions, bool)
                keep[position] = False
                np.testing.assert_array_equal(present[:, :, keep], past[:, :, keep])
                assert not np.allclose(present[:, :, position], past[:, :, position])


def test_full_caches_beyond_position_are_masked() -> None:
    """Cache entries after ``position`` (filled here, unlike random_inputs) change nothing."""
    cfg = tiny(layers=2, batch=2)
    module = program(cfg)
    values = {**random_weights(module, 3), **random_inputs(module, 4, position=6)}
    rng = np.random.default_rng(5)
    filled = dict(values)
    for i in range(cfg.layers):
        for kind in ("key", "value"):
            cache = values[f"past_{kind}.{i}"].copy()
            cache[:, :, 6:] = 5.0 * rng.standard_normal(cache[:, :, 6:].shape)
            filled[f"past_{kind}.{i}"] = cache
    a, b = run_program(module, values), run_program(module, filled)
    np.testing.assert_array_equal(a["hidden_states"], b["hidden_states"])
    assert_close(b, reference(cfg, filled), 5e-6)


def test_reference_weights_and_storage_semantics() -> None:
    """The reference's own random weights (small biases, not the runtime's), and a run under
    storage semantics (the cache written in place) computing the same."""
    cfg = tiny(layers=2, intermediate=96)
    module = program(cfg)
    weights = random_gpt2_weights(
        np.random.default_rng(6), layers=2, hidden=cfg.hidden, intermediate=96
    )
    values = {**weights, **random_inputs(module, 7, position=9)}
    got = run_program(module, values)
    assert_close(got, reference(cfg, values), 5e-6)
    stored = run_program(module, values, storage=True)
    for name, value in got.items():
        np.testing.assert_array_equal(stored[name], value)


def test_bf16_weights_compute_in_f32() -> None:
    cfg = tiny(dtype="bf16")
    module = program(cfg)
    weights = random_weights(module, 8)
    assert all(w.dtype == ml_dtypes.bfloat16 for w in weights.values())
    values = {**weights, **random_inputs(module, 9, position=4)}
    rounded = {
        k: (v.astype(np.float32) if v.dtype == ml_dtypes.bfloat16 else v) for k, v in values.items()
    }
    assert_close(run_program(module, values), reference(cfg, rounded), 5e-6)


# -- ports, config ----------------------------------------------------------------------


def test_ports_are_gpt2model_names_shapes_and_roles() -> None:
    cfg = tiny(layers=2, batch=2)
    ins, outs = ports(entry_function(program(cfg)))
    h, i, cache = 64, 256, (2, 8, 16, 8)
    want_ins = [("hidden_states", (2, h), "input"), ("position", (), "input")]
    for layer in range(2):
        p = f"h.{layer}."
        want_ins += [
            (p + "ln_1.weight", (h,), "weight"),
            (p + "ln_1.bias", (h,), "weight"),
            (p + "attn.c_attn.weight", (h, 3 * h), "weight"),
            (p + "attn.c_attn.bias", (3 * h,), "weight"),
            (p + "attn.c_proj.weight", (h, h), "weight"),
            (p + "attn.c_proj.bias", (h,), "weight"),
            (p + "ln_2.weight", (h,), "weight"),
            (p + "ln_2.bias", (h,), "weight"),
            (p + "mlp.c_fc.weight", (h, i), "weight"),
            (p + "mlp.c_fc.bias", (i,), "weight"),
            (p + "mlp.c_proj.weight", (i, h), "weight"),
            (p + "mlp.c_proj.bias", (h,), "weight"),
            (f"past_key.{layer}", cache, "cache"),
            (f"past_value.{layer}", cache, "cache"),
        ]
    assert [(p.name, p.shape, p.role) for p in ins] == want_ins
    assert [p.dtype for p in ins if p.name == "position"] == ["i64"]
    assert {p.cache_axis for p in ins if p.role == "cache"} == {2}
    want_outs = [("hidden_states", (2, h))]
    for layer in range(2):
        want_outs += [(f"present_key.{layer}", cache), (f"present_value.{layer}", cache)]
    assert [(p.name, p.shape) for p in outs] == want_outs


def test_presets_and_dims() -> None:
    real = gpt2.GPT2Config.preset("gpt2")
    assert (real.hidden, real.heads, real.head_dim, real.intermediate) == (768, 12, 64, 3072)
    assert (real.layers, real.max_positions, real.eps) == (1, 1024, 1e-5)
    small = tiny()
    assert (small.hidden, small.heads, small.head_dim, small.intermediate) == (64, 8, 8, 256)
    assert small.max_positions == 16
    # The intermediate size follows an overridden hidden (4·hidden) unless given itself.
    assert tiny(hidden=32).intermediate == 128
    assert tiny(hidden=32, intermediate=40).intermediate == 40


def test_config_regenerates_the_program() -> None:
    cfg = tiny(layers=2, batch=2, max_positions=8, dtype="bf16")
    text = gpt2.generate(cfg)
    attr = program(cfg).attributes["tp.config"]
    assert isinstance(attr, DictionaryAttr) and attr.data["family"] == StringAttr("gpt2")
    assert family_of(attr) == "gpt2"
    assert config_from_attr(attr) == cfg
    assert unsharded_text(attr) == text


@pytest.mark.parametrize(
    "cfg",
    [
        qwen3.Qwen3Config.preset("tiny", chips=4, layers=2, fused_qkv=True),
        qwen3.Qwen3Config.preset("tiny").unsharded(),
    ],
    ids=["split", "unsharded"],
)
def test_qwen3_config_without_family_regenerates_its_unsharded_program(
    cfg: qwen3.Qwen3Config,
) -> None:
    module, _ = parse_module(tp_context(), qwen3.generate(cfg), "<qwen3>")
    attr = module.attributes["tp.config"]
    assert isinstance(attr, DictionaryAttr) and "family" not in attr.data
    assert family_of(attr) == "qwen3"
    assert unsharded_text(attr) == qwen3.generate(cfg.unsharded())
    # An explicit family = "qwen3" says the same.
    named = DictionaryAttr({**attr.data, "family": StringAttr("qwen3")})
    assert unsharded_text(named) == qwen3.generate(cfg.unsharded())


def test_unknown_family_is_refused() -> None:
    attr = program(tiny()).attributes["tp.config"]
    assert isinstance(attr, DictionaryAttr)
    with pytest.raises(GenError, match="unknown model family 'phi3'"):
        unsharded_text(DictionaryAttr({**attr.data, "family": StringAttr("phi3")}))
    # a whole model's family (the registry's) with a decode stack's fields: refused, named
    with pytest.raises(GenError, match="does not describe a Llama-family step: no 'kind'"):
        unsharded_text(DictionaryAttr({**attr.data, "family": StringAttr("llama")}))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"heads": 7}, r"heads \(7\) must divide hidden \(64\)"),
        ({"hidden": 0}, "hidden must be positive, got 0"),
        ({"intermediate": -1}, "intermediate must be positive, got -1"),
        ({"dtype": "f16"}, "dtype must be f32 or bf16, got f16"),
    ],
)
def test_generator_refusals(overrides: dict[str, int | str], message: str) -> None:
    with pytest.raises(GenError, match=message):
        gpt2.generate(tiny(**overrides))


# -- the CLI ----------------------------------------------------------------------------


def gen(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = tp_gen.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_writes_the_unsharded_program(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = gen(
        capsys, "gpt2", "--unsharded", "--layers", "2", "--batch", "2", "--max-positions", "8"
    )
    assert (code, err) == (0, "")
    assert out == gpt2.generate(tiny(layers=2, batch=2, max_positions=8))
    code, out, _ = gen(capsys, "gpt2", "--preset", "gpt2", "--unsharded", "--chips", "1")
    assert code == 0 and out == gpt2.generate(gpt2.GPT2Config.preset("gpt2"))
    code, out, _ = gen(capsys, "gpt2", "--unsharded", "--hidden", "32", "--heads", "4")
    assert code == 0 and "intermediate = 128 : i64" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], 'the split program comes from tp-opt --tp-split="chips=N plan=gpt2"'),
        (["--chips", "1"], 'tp-opt --tp-split="chips=N plan=gpt2"'),
        (["--unsharded", "--chips", "4"], 'tp-opt --tp-split="chips=N plan=gpt2"'),
        (["--unsharded", "--kv-heads", "4"], "--kv-heads does not apply to gpt2"),
        (["--unsharded", "--head-dim", "8"], "--head-dim does not apply to gpt2"),
        (["--unsharded", "--fused-qkv"], "--fused-qkv does not apply to gpt2"),
        (["--unsharded", "--fused-gate-up"], "--fused-gate-up does not apply to gpt2"),
        (["--unsharded", "--fold"], "--fold does not apply to gpt2"),
        (["--unsharded", "--heads", "7"], "heads (7) must divide hidden (64)"),
        (["--unsharded", "--preset", "qwen3-8b"], "unknown gpt2 preset 'qwen3-8b'"),
    ],
)
def test_cli_refusals_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = gen(capsys, "gpt2", *args)
    assert code == 1 and out == ""
    assert err.startswith("tp-gen: error: ") and message in err
    assert err.count("\n") == 1, err


def test_cli_qwen3_refuses_a_gpt2_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = gen(capsys, "qwen3", "--preset", "gpt2")
    assert code == 1 and "unknown preset 'gpt2'" in err and err.count("\n") == 1


# -- Qwen3's text is what it was before the shared pieces moved out ----------------------

# sha256 of the text the Qwen3 generator writes: the unsharded step's as it was before
# blocks.py existed; a sharded step's since it became tp-split of the unsharded one (issue 24).
QWEN3_TEXT = {
    "tiny-c2": "43bc327c0213370e278b12c3483fe092ad2121d1dc4857344dff836e720689ee",
    "tiny-c4-l2-fold-fused-qkv": "3613467a5f3f3d38f55da5e3c3de5b757c7e0d7771925e1a0856289132301adc",
    "tiny-c2-gate-up-bf16": "84bed9c51f78cbae331e85bed2bcad89520c3469939f15f76959f3adc8c5ede2",
    "tiny-unsharded-l2-b2": "e25d95288f2dbc372c02786baa62fb4c1e3325ff7b837250024a9e3cea17ea4f",
}
# sha256 of the hand-written split's text before blocks.py existed: the programs kept as the
# sharded steps' bitwise reference (`megatron`) are that text.
MEGATRON_TEXT = {
    "tiny-c2": "32e3ae25e48b29cd48b7f932461596b9c95ec949f600c7221c23ec3472a94549",
    "tiny-c4-l2-fold-fused-qkv": "4e8786d7a5b5f7aad0bdb27ea2cc22b4a668dfe62deaa460683a2b83f412e28b",
    "tiny-c2-gate-up-bf16": "321b2c0756c597d161e85e0ef94f6b0ee27d4b278894ee6be75050b0d5313af8",
}
MEGATRON_OVERRIDES: dict[str, dict[str, Any]] = {
    "tiny-c2": dict(chips=2, batch=1, layers=1),
    "tiny-c4-l2-fold-fused-qkv": dict(chips=4, layers=2, fold=True, fused_qkv=True),
    "tiny-c2-gate-up-bf16": dict(chips=2, layers=1, fused_gate_up=True, dtype="bf16"),
}
QWEN3_CONFIGS = {
    "tiny-c2": qwen3.Qwen3Config.preset("tiny", chips=2),
    "tiny-c4-l2-fold-fused-qkv": qwen3.Qwen3Config.preset(
        "tiny", chips=4, layers=2, fold=True, fused_qkv=True
    ),
    "tiny-c2-gate-up-bf16": qwen3.Qwen3Config.preset(
        "tiny", chips=2, fused_gate_up=True, dtype="bf16"
    ),
    "tiny-unsharded-l2-b2": qwen3.Qwen3Config.preset("tiny", layers=2, batch=2).unsharded(),
}


@pytest.mark.parametrize("name", sorted(QWEN3_TEXT))
def test_qwen3_text_unchanged(name: str) -> None:
    text = qwen3.generate(QWEN3_CONFIGS[name])
    assert hashlib.sha256(text.encode()).hexdigest() == QWEN3_TEXT[name]


@pytest.mark.parametrize("name", sorted(MEGATRON_TEXT))
def test_the_kept_megatron_programs_are_the_hand_written_text(name: str) -> None:
    """The reference the sharded steps are compared against (tests/test_split.py) is the
    hand-written split's text itself, and the config it kept is the one pinned here."""
    path = FOLDER / golden_name(MEGATRON_OVERRIDES[name], False)
    text = gzip.decompress(path.read_bytes())
    assert hashlib.sha256(text).hexdigest() == MEGATRON_TEXT[name]
    assert qwen3.Qwen3Config.preset("tiny", **MEGATRON_OVERRIDES[name]) == QWEN3_CONFIGS[name]


def test_qwen3_cli_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    """The default N is still 2, with or without --unsharded beside it."""
    code, out, _ = gen(capsys, "qwen3", "--preset", "tiny")
    assert code == 0 and hashlib.sha256(out.encode()).hexdigest() == QWEN3_TEXT["tiny-c2"]
    code, out, _ = gen(capsys, "qwen3", "--unsharded", "--layers", "2", "--batch", "2")
    assert code == 0
    assert hashlib.sha256(out.encode()).hexdigest() == QWEN3_TEXT["tiny-unsharded-l2-b2"]


# -- tp-run on the generated program ---------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gpt2") / "gpt2.mlir"
    proc = tool("tp-gen", "gpt2", "--preset", "tiny", "--layers", "2", "--unsharded", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_tp_run_random_weights_and_inputs(generated: Path, tmp_path: Path) -> None:
    result = tmp_path / "out.npz"
    proc = tool(
        "tp-run",
        generated,
        "--random-weights",
        0,
        "--random-inputs",
        1,
        "--position",
        3,
        "--outputs",
        result,
    )
    assert proc.returncode == 0, proc.stderr
    module = program(tiny(layers=2))
    values = {**random_weights(module, 0), **random_inputs(module, 1, position=3)}
    with np.load(result) as got:
        assert_close({k: got[k] for k in got.files}, reference(tiny(layers=2), values), 5e-6)


def test_tp_run_loads_a_gpt2_safetensors_checkpoint_by_name(
    generated: Path, tmp_path: Path
) -> None:
    cfg = tiny(layers=2)
    weights = random_gpt2_weights(
        np.random.default_rng(11), layers=2, hidden=cfg.hidden, intermediate=cfg.intermediate
    )
    ckpt, result = tmp_path / "gpt2.safetensors", tmp_path / "out.npz"
    save_file(weights, str(ckpt))
    proc = tool(
        "tp-run",
        generated,
        "--weights",
        ckpt,
        "--random-inputs",
        1,
        "--position",
        7,
        "--outputs",
        result,
    )
    assert proc.returncode == 0, proc.stderr
    values = {**weights, **random_inputs(program(cfg), 1, position=7)}
    with np.load(result) as got:
        assert_close({k: got[k] for k in got.files}, reference(cfg, values), 5e-6)
