"""tp-gen's bounds (`tp_dialect.frontend.bounds`): Qwen3 and GPT-2 are held to the same
rules, refused up front in one line, before any IR is written; what is within them is
written in a form the tools read back; and each family's list of tensor shapes, which the
byte bound is checked on, covers every tensor its program holds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, TensorType

from tp_dialect.frontend import bounds, gpt2, qwen3
from tp_dialect.frontend.blocks import GenError
from tp_dialect.frontend.families import config_from_attr, generate
from tp_dialect.tools import tp_gen
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

BIN = Path(sys.executable).parent
I64_MAX = 2**63 - 1


def gen(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = tp_gen.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refusal(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    """tp-gen's one-line error for ``argv`` (exit 1, nothing written)."""
    code, out, err = gen(capsys, *argv)
    assert code == 1 and out == "", (code, out[:200], err)
    assert err.startswith("tp-gen: error: ") and err.count("\n") == 1, err
    return err.strip()


FAMILIES = {"qwen3": ["qwen3"], "gpt2": ["gpt2", "--unsharded"]}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--layers", 0], "layers must be positive, got 0"),
        (["--batch", -2], "batch must be positive, got -2"),
        (["--chips", 0], "chips must be positive, got 0"),
        (["--chips", -1], "chips must be positive, got -1"),
        (["--hidden", 2**64], f"hidden {2**64} does not fit an i64 (at most {I64_MAX})"),
        (["--max-positions", 10**20], f"max_positions {10**20} does not fit an i64"),
        (["--layers", 10**9], "layers 1000000000 is above 256"),
        (["--layers", bounds.MAX_LAYERS + 1], "layers 257 is above 256"),
        (["--hidden", 2**60], "bytes in f32, above 9223372036854775807 (2**63 - 1)"),
        (["--max-positions", 2**58], "tensor 'past_key.0' of shape [1, 8, 288230376151711744, 8]"),
    ],
)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_both_families_refuse_alike(
    capsys: pytest.CaptureFixture[str], family: str, flags: list[object], message: str
) -> None:
    unsharded = ["--unsharded"] if family == "qwen3" and "--chips" not in flags else []
    err = refusal(capsys, *FAMILIES[family], *unsharded, *flags)
    assert message in err


def test_gpt2_refuses_qwen3_flags_whatever_their_value(capsys: pytest.CaptureFixture[str]) -> None:
    # 0 == False: a zero used to pass for "not given".
    for flag in ("--kv-heads", "--head-dim"):
        for value in (0, -1, 8):
            err = refusal(capsys, "gpt2", "--unsharded", flag, value)
            assert err == f"tp-gen: error: {flag} does not apply to gpt2"


def test_unsharded_with_a_split_is_refused_by_both(capsys: pytest.CaptureFixture[str]) -> None:
    for family in ("qwen3", "gpt2"):
        err = refusal(capsys, family, "--unsharded", "--chips", 4)
        assert "--unsharded writes the single-chip program: --chips 4 does not apply" in err
        assert f'tp-opt --tp-split="chips=N plan={family}"' in err
        assert gen(capsys, family, "--unsharded", "--chips", 1)[0] == 0


def test_head_dim_is_bounded_by_the_rope_table(capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, "qwen3", "--head-dim", 10**9)
    assert "the RoPE table 'inv_freq' (head_dim / 2 values) holds 500000000 values" in err
    edge = 2 * bounds.MAX_WRITTEN_VALUES
    qwen3.Qwen3Config.preset("tiny", head_dim=edge).check()
    with pytest.raises(GenError, match="RoPE table"):
        qwen3.Qwen3Config.preset("tiny", head_dim=edge + 2).check()


def test_layers_and_chips_are_bounded_before_any_work() -> None:
    # Before the bounds, --layers 10**9 ran on with gigabytes: a subprocess with a deadline.
    t0 = time.perf_counter()
    for argv in (
        ["qwen3", "--layers", str(10**9)],
        ["gpt2", "--unsharded", "--layers", str(10**9)],
        ["qwen3", "--layers", "256", "--chips", "16", "--kv-heads", "16"],
    ):
        proc = subprocess.run(
            [str(BIN / "tp-gen"), *argv], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr
        assert proc.stderr.count("\n") == 1
    assert time.perf_counter() - t0 < 60
    assert "4096 chip-layers, above 2048" in proc.stderr
    assert "(over 16 chips, at most 128 layers)" in proc.stderr


def test_a_recorded_config_beyond_the_bounds_is_refused_by_check(tmp_path: Path) -> None:
    """``tp-run --check`` regenerates the unsharded program from ``tp.config``: a config that
    says 10**9 layers is refused there too, not generated."""
    text = generate(qwen3.Qwen3Config.preset("tiny", chips=2))
    crafted = tmp_path / "crafted.mlir"
    crafted.write_text(text.replace("layers = 1 : i64", f"layers = {10**9} : i64", 1))
    proc = subprocess.run(
        [str(BIN / "tp-run"), str(crafted), "--random-weights", "0", "--random-inputs", "0"]
        + ["--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [
        "tp-run: error: layers 1000000000 is above 256: a generated program writes every "
        "layer out, and holds at most 256"
    ]


@pytest.mark.parametrize(
    ("layers", "chips", "ok"),
    [(256, 8, True), (257, 1, False), (128, 16, True), (129, 16, False), (2, 1024, True)],
)
def test_the_chip_layer_edges(layers: int, chips: int, ok: bool) -> None:
    cfg = qwen3.Qwen3Config.preset(
        "tiny", layers=layers, chips=chips, kv_heads=chips, heads=chips, intermediate=chips
    )
    if ok:
        cfg.check()
    else:
        with pytest.raises(GenError, match="above"):
            cfg.check()
    with pytest.raises(GenError, match="chips 2048 is above 1024"):
        qwen3.Qwen3Config.preset(
            "tiny", chips=2048, kv_heads=2048, heads=2048, intermediate=2048
        ).check()


def test_the_byte_bound_edge() -> None:
    fits = 2**61 - 1  # elements: 4 bytes each is 2**63 - 4
    bounds.check_config({"layers": 1}, lambda: {"t": (fits,)})
    with pytest.raises(GenError, match=r"tensor 't' of shape \[2305843009213693952\]"):
        bounds.check_config({"layers": 1}, lambda: {"t": (fits + 1,)})


@pytest.mark.parametrize(
    "cfg",
    [
        qwen3.Qwen3Config.preset("tiny", hidden=2**40, max_positions=2**30),
        qwen3.Qwen3Config.preset("tiny", batch=2**50).unsharded(),
        gpt2.GPT2Config.preset("tiny", max_positions=2**50, batch=2**4),
    ],
    ids=["qwen3-wide", "qwen3-batch", "gpt2-long"],
)
def test_large_configs_within_bounds_read_back(cfg: qwen3.Qwen3Config | gpt2.GPT2Config) -> None:
    """What tp-gen writes within its bounds parses, and its tp.config gives the config back."""
    text = generate(cfg)
    module, _ = parse_module(tp_context(), text, "<big>")
    assert config_from_attr(module.attributes["tp.config"]) == cfg


def _largest(module: ModuleOp) -> int:
    """The element count of the largest tensor type anywhere in ``module``."""
    largest = 0
    for op in module.walk():
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if isinstance(value.type, TensorType):
                n = 1
                for d in value.type.get_shape():
                    n *= d
                largest = max(largest, n)
    return largest


def _product(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kv=st.sampled_from([1, 2, 4]),
    group=st.sampled_from([1, 2, 8]),
    head_dim=st.sampled_from([2, 4, 16]),
    hidden=st.sampled_from([4, 8, 64]),
    inter=st.sampled_from([4, 8, 96]),
    batch=st.sampled_from([1, 3, 40]),
    positions=st.sampled_from([1, 4, 50]),
    chips=st.sampled_from([1, 2]),
    fused=st.booleans(),
    gate_up=st.booleans(),
)
# Each kind of tensor the largest in turn: a fused qkv output, a fused gate_up output, the
# hidden state (a large batch over small projections), the scores (many query heads a KV
# head, a long cache, head_dim 2), a cache.
@example(
    kv=4,
    group=1,
    head_dim=16,
    hidden=4,
    inter=4,
    batch=40,
    positions=1,
    chips=1,
    fused=True,
    gate_up=False,
)  # noqa: E501
@example(
    kv=1,
    group=1,
    head_dim=2,
    hidden=4,
    inter=96,
    batch=40,
    positions=1,
    chips=1,
    fused=False,
    gate_up=True,
)  # noqa: E501
@example(
    kv=1,
    group=1,
    head_dim=2,
    hidden=64,
    inter=4,
    batch=40,
    positions=1,
    chips=1,
    fused=False,
    gate_up=False,
)  # noqa: E501
@example(
    kv=1,
    group=8,
    head_dim=2,
    hidden=4,
    inter=4,
    batch=3,
    positions=50,
    chips=1,
    fused=False,
    gate_up=False,
)  # noqa: E501
@example(
    kv=4,
    group=1,
    head_dim=16,
    hidden=4,
    inter=4,
    batch=3,
    positions=50,
    chips=2,
    fused=False,
    gate_up=False,
)  # noqa: E501
def test_qwen3_tensor_shapes_cover_the_program(
    kv: int,
    group: int,
    head_dim: int,
    hidden: int,
    inter: int,
    batch: int,
    positions: int,
    chips: int,
    fused: bool,
    gate_up: bool,
) -> None:
    """The byte bound is checked on `tensor_shapes`: no tensor of the program is larger than
    the largest it lists (skewed dims make each kind the largest in turn)."""
    chips = chips if kv % chips == 0 and inter % chips == 0 else 1
    cfg = qwen3.Qwen3Config(
        hidden=hidden,
        heads=kv * group,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate=inter,
        batch=batch,
        max_positions=positions,
        chips=chips,
        fused_qkv=fused,
        fused_gate_up=gate_up,
    )
    module, _ = parse_module(tp_context(), qwen3.generate(cfg), "<q>")
    assert _largest(module) <= max(map(_product, qwen3.tensor_shapes(cfg).values()))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    heads=st.sampled_from([1, 2, 8]),
    head_dim=st.sampled_from([1, 4, 16]),
    inter=st.sampled_from([4, 8, 200]),
    batch=st.sampled_from([1, 3, 40]),
    positions=st.sampled_from([1, 4, 60]),
)
@example(heads=1, head_dim=4, inter=4, batch=40, positions=1)  # the qkv output
@example(heads=1, head_dim=4, inter=200, batch=40, positions=1)  # the MLP's activation
@example(heads=8, head_dim=1, inter=4, batch=40, positions=60)  # a cache, and the scores
def test_gpt2_tensor_shapes_cover_the_program(
    heads: int, head_dim: int, inter: int, batch: int, positions: int
) -> None:
    cfg = gpt2.GPT2Config(
        hidden=heads * head_dim,
        heads=heads,
        intermediate=inter,
        batch=batch,
        max_positions=positions,
    )
    module, _ = parse_module(tp_context(), gpt2.generate(cfg), "<g>")
    assert _largest(module) <= max(map(_product, gpt2.tensor_shapes(cfg).values()))
