"""tp-gen --from-pretrained: a Hugging Face directory's step programs (their form: entry,
outlined @layer, ports, results, certificate) and every refusal, one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hf_models
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from tp_dialect.frontend.hf_config import HARMLESS
from tp_dialect.passes.verify import TpVerify
from tp_dialect.signature import BindError, entry_function, ports
from tp_dialect.tools import tp_gen
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context


def gen(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = tp_gen.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refusal(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    """tp-gen's one-line error for ``argv`` (exit 1, nothing written)."""
    code, out, err = gen(capsys, *argv)
    assert code == 1 and out == "", (code, out[:200], err)
    assert err.startswith("tp-gen: error: ") and err.count("\n") == 1, err
    return err


def model(tmp_path: Path, model_type: str, **overrides: Any) -> Path:
    return hf_models.write_model(tmp_path / model_type, model_type, **overrides)


@pytest.mark.parametrize("model_type", hf_models.FAMILIES)
@pytest.mark.parametrize(("step", "tokens"), [("prefill", 7), ("decode", 1)])
def test_the_step_program_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_type: str, step: str, tokens: int
) -> None:
    """Entry @prefill/@decode calling one private @layer per layer; input_ids [B, S] i64 and
    position i64 in; next_ids [B] i64, logits [B, V] f32, then the present caches out; the
    checkpoint's names as weight ports; tp-verify certifies it."""
    d = model(tmp_path, model_type)
    argv = ["--from-pretrained", d, "--step", step, "--batch", 2, "--max-positions", 32]
    if step == "prefill":
        argv += ["--prompt-len", tokens]
    code, out, err = gen(capsys, *argv, "--logits")
    assert code == 0, err
    module, _ = parse_module(tp_context(), out, "<gen>")
    entry = entry_function(module)
    assert entry.sym_name.data == step
    layer = [f for f in module.ops if isinstance(f, FuncOp) and f.sym_name.data == "layer"]
    assert len(layer) == 1 and layer[0].sym_visibility is not None
    ins, outs = ports(entry)
    by_name = {p.name: p for p in ins}
    assert by_name["input_ids"].shape == (2, tokens) and by_name["input_ids"].role == "input"
    assert by_name["position"].shape == () and by_name["position"].role == "input"
    assert by_name["past_key.1"].role == "cache"
    cfg = hf_models.config_for(model_type)
    weights = {p.name: p.shape for p in ins if p.role == "weight"}
    assert weights == hf_models.expected_tensors(cfg)
    assert [p.name for p in outs[:2]] == ["next_ids", "logits"]
    assert outs[0].shape == (2,) and outs[1].shape == (2, cfg["vocab_size"])
    assert [p.name for p in outs[2:4]] == ["present_key.0", "present_value.0"]
    TpVerify().apply(Context(), module)
    assert "tp.certificate" in module.attributes


def test_a_tied_head_is_one_tensor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = model(tmp_path, "llama", tie_word_embeddings=True)
    code, out, _ = gen(capsys, "--from-pretrained", d)
    assert code == 0
    assert "lm_head.weight" not in out and "model.embed_tokens.weight" in out


def test_an_unknown_model_type_names_the_supported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = model(tmp_path, "llama")
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "model_type": "phi3"}))
    err = refusal(capsys, "--from-pretrained", d)
    assert (
        "model_type 'phi3' is not supported (supported: gpt2, llama, mistral, qwen2, qwen3)" in err
    )


@pytest.mark.parametrize(
    ("model_type", "overrides", "named"),
    [
        ("llama", {"some_new_switch": 1}, "config field 'some_new_switch'"),
        ("qwen3", {"layer_types": ["full_attention"] * 2}, "config field 'layer_types'"),
        ("llama", {"hidden_act": "gelu"}, "config field 'hidden_act' = 'gelu'"),
        ("llama", {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, "of type 'yarn'"),
        (
            "llama",
            {"rope_scaling": {"rope_type": "linear", "factor": 2.0, "attention_factor": 2}},
            "'rope_scaling.attention_factor'",
        ),
        (
            "qwen2",
            {"use_sliding_window": True, "max_window_layers": 1, "sliding_window": 4},
            "'use_sliding_window' with 'max_window_layers' = 1",
        ),
        ("gpt2", {"scale_attn_by_inverse_layer_idx": True}, "'scale_attn_by_inverse_layer_idx'"),
        ("gpt2", {"activation_function": "relu"}, "'activation_function' = 'relu'"),
        ("mistral", {"torch_dtype": "int8"}, "'torch_dtype' = 'int8'"),
        ("llama", {"num_key_value_heads": 0}, "'num_key_value_heads' must be a positive integer"),
    ],
)
def test_a_field_not_understood_is_refused_by_name(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    model_type: str,
    overrides: dict[str, Any],
    named: str,
) -> None:
    d = tmp_path / model_type
    d.mkdir()
    dtype = overrides.pop("torch_dtype", "float32")
    cfg = hf_models.config_for(model_type, **overrides)
    (d / "config.json").write_text(json.dumps({**cfg, "torch_dtype": dtype}))
    assert named in refusal(capsys, "--from-pretrained", d)


def test_the_harmless_fields_of_the_tiny_configs_are_accepted() -> None:
    """Every field hf_models writes is either read or harmless (the writers accept them:
    tests/test_hf_programs.py); a dropout is among the harmless."""
    assert {"attention_dropout", "resid_pdrop", "architectures", "torch_dtype"} <= HARMLESS


@pytest.mark.parametrize(
    ("model_type", "overrides", "chips", "named"),
    [
        ("llama", {}, 3, "num_attention_heads (8) is not divisible by --chips 3"),
        ("llama", {"num_key_value_heads": 2}, 4, "num_key_value_heads (2) is not divisible"),
        ("qwen2", {"intermediate_size": 130}, 4, "intermediate_size (130) is not divisible"),
        ("gpt2", {"n_inner": 98}, 4, "n_inner (98) is not divisible by --chips 4"),
    ],
)
def test_dims_the_chips_do_not_divide_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    model_type: str,
    overrides: dict[str, Any],
    chips: int,
    named: str,
) -> None:
    d = model(tmp_path, model_type, **overrides)
    assert named in refusal(capsys, "--from-pretrained", d, "--chips", chips)


def test_unreadable_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a directory" in refusal(capsys, "--from-pretrained", tmp_path / "nowhere")
    assert "config.json" in refusal(capsys, "--from-pretrained", tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    assert "not JSON" in refusal(capsys, "--from-pretrained", tmp_path)
    (tmp_path / "config.json").write_text("[1, 2]")
    assert "does not hold a JSON object" in refusal(capsys, "--from-pretrained", tmp_path)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--layers", 3], "--layers does not apply with --from-pretrained"),
        (["--dtype", "bf16"], "--dtype does not apply with --from-pretrained"),
        (["--step", "decode", "--prompt-len", 4], "--prompt-len applies to --step prefill"),
        (["--prompt-len", 40, "--max-positions", 32], "does not fit a cache of 32 positions"),
        (["--unsharded", "--chips", 2], "--unsharded writes the single-chip program"),
        (["--max-positions", 100], "above n_positions 64"),
    ],
)
def test_flags_that_do_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[object], named: str
) -> None:
    d = model(tmp_path, "gpt2")
    assert named in refusal(capsys, "--from-pretrained", d, *argv)


def test_the_decode_stack_flags_stay_theirs(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--step applies only with --from-pretrained" in refusal(
        capsys, "qwen3", "--step", "decode"
    )
    assert "name one model family" in refusal(capsys)


def test_the_entry_is_decode_then_prefill_then_the_one_function_no_call_reaches() -> None:
    text = """
    func.func private @layer(%x: i64) -> i64 { func.return %x : i64 }
    func.func @step(%x: i64) -> i64 {
      %y = func.call @layer(%x) : (i64) -> i64
      func.return %y : i64
    }
    """
    module, _ = parse_module(tp_context(), text, "<t>")
    assert entry_function(module).sym_name.data == "step"
    two = text + "func.func @other(%x: i64) -> i64 { func.return %x : i64 }"
    module, _ = parse_module(tp_context(), two, "<t>")
    with pytest.raises(BindError, match="cannot pick an entry function among 3"):
        entry_function(module)
    named = two.replace("@other", "@prefill")
    module, _ = parse_module(tp_context(), named, "<t>")
    assert entry_function(module).sym_name.data == "prefill"
