"""tp-generate: a model directory's greedy tokens on the command line, equal to the tests'
numpy transformers (`hf_reference`), in this process and on MPI ranks; its report as JSON;
every bad input one line and exit 1, the report never half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hf_models as M
import hf_reference as R
import numpy as np
import pytest

from tp_dialect.runtime.mpi_exec import TEST_EXIT_ENV
from tp_dialect.tools.tp_generate import main

PROMPT = "5,17,42,8,61,23,11"


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return M.write_model(tmp_path_factory.mktemp("hf") / "qwen3", "qwen3", seed=11)


def _want(model: Path, prompt: list[list[int]], tokens: int) -> list[list[int]]:
    return R.Reference(model).generate(np.array(prompt), tokens)[0].tolist()


def _tool(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    tool = str(Path(sys.executable).parent / "tp-generate")
    return subprocess.run(
        [tool, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("chips", [1, 2])
def test_ids_equal_the_reference_and_the_report_says_them(
    tmp_path: Path, qwen3: Path, chips: int, capsys: pytest.CaptureFixture[str]
) -> None:
    report, logits = tmp_path / "r.json", tmp_path / "l.npz"
    argv = [str(qwen3), "--prompt-ids", PROMPT, "--prompt-ids", "9,9,3,4,5,6,7"]
    argv += ["--max-new-tokens", "6", "--chips", str(chips), "--report", str(report)]
    assert main([*argv, "--logits", str(logits)]) == 0
    prompt = [[int(t) for t in PROMPT.split(",")], [9, 9, 3, 4, 5, 6, 7]]
    want = _want(qwen3, prompt, 6)
    got = json.loads(report.read_text())
    assert got["ids"] == want
    want_logits = R.Reference(qwen3).generate(np.array(prompt), 6)[1]
    np.testing.assert_allclose(np.load(logits)["logits"], want_logits, rtol=1e-4, atol=1e-4)
    assert got["ttft_s"] > 0 and got["tpot_s"] > 0
    out = capsys.readouterr().out
    assert f"row 0: {' '.join(map(str, want[0]))}" in out
    assert "time to first token" in out


def test_mpi_ranks_generate_the_same_ids(tmp_path: Path, qwen3: Path) -> None:
    report = tmp_path / "r.json"
    done = _tool(
        str(qwen3),
        "--prompt-ids",
        PROMPT,
        "--max-new-tokens",
        "5",
        "--mpi",
        "2",
        "--report",
        str(report),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(report.read_text())["ids"] == _want(
        qwen3, [[int(t) for t in PROMPT.split(",")]], 5
    )
    assert "as MPI ranks" in done.stdout


def test_a_rank_killed_mid_generation_is_named_in_one_line(tmp_path: Path, qwen3: Path) -> None:
    report = tmp_path / "r.json"
    args = [str(qwen3), "--prompt-ids", PROMPT, "--max-new-tokens", "3", "--mpi", "2"]
    done = _tool(*args, "--report", str(report), env={TEST_EXIT_ENV: "1"})
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "tp-generate: error: rank 1 (chip 1) died: Killed (signal 9) (mpiexec exit code 9)"
    ]
    assert "BAD TERMINATION" not in done.stdout  # mpiexec's banner: said in that line
    assert not report.exists()


def test_progress_line_on_a_terminal(qwen3: Path) -> None:
    done = _tool(
        str(qwen3),
        "--prompt-ids",
        PROMPT,
        "--max-new-tokens",
        "3",
        env={"TP_PROGRESS": "1", "TP_PROGRESS_AFTER": "0"},
    )
    assert done.returncode == 0, done.stderr
    assert "token 3/3" in done.stderr


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal" not in err, err
    return err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--prompt-ids", ""], "the prompt holds no token"),
        (["--prompt-ids", "5,96"], "prompt id 96 (row 0, position 1) is outside the vocab of 96"),
        (["--prompt-ids", "5,x"], "not a list of integers"),
        (["--prompt-ids", "5,6", "--prompt-ids", "7"], "rows differ in length"),
        (
            ["--prompt-ids", "5", "--max-new-tokens", "40", "--max-positions", "32"],
            "the cache holds 32",
        ),
        (["--prompt-ids", "5", "--chips", "3"], "is not divisible by --chips 3"),
        (["--prompt", "hello"], "tokenizer.json"),
        (["--prompt-ids", "5", "--max-positions", "100000"], "exceeds the model's"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, qwen3: Path, extra: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    assert said in _refused([str(qwen3), *extra, "--report", str(report)], capsys)
    assert not report.exists()


def test_bad_directories_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "cannot read" in _refused([str(tmp_path / "none"), "--prompt-ids", "5"], capsys)
    odd = M.write_model(tmp_path / "odd", "qwen3", seed=1)
    config = json.loads((odd / "config.json").read_text())
    (odd / "config.json").write_text(json.dumps({**config, "model_type": "bert"}))
    assert "supported: " in _refused([str(odd), "--prompt-ids", "5"], capsys)
    short = M.write_model(tmp_path / "short", "llama", seed=1)
    weights = R.load_tensors(short)
    del weights["model.norm.weight"]
    from safetensors.numpy import save_file

    save_file(weights, str(short / "model.safetensors"))
    assert "model.norm.weight" in _refused([str(short), "--prompt-ids", "5"], capsys)


def test_prompt_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--prompt`` tokenizes by the directory's tokenizer.json (tokenizers' own format)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    model = M.write_model(tmp_path / "llama", "llama", seed=2)
    vocab = {f"w{i}": i for i in range(96)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(model / "tokenizer.json"))
    assert main([str(model), "--prompt", "w5 w17 w42", "--max-new-tokens", "4"]) == 0
    out = capsys.readouterr().out
    want = _want(model, [[5, 17, 42]], 4)[0]
    assert f"row 0: {' '.join(map(str, want))}" in out
    assert f"row 0 text: {' '.join(f'w{i}' for i in want)}" in out


def test_every_ranks_error_line_is_said_under_the_tools_name() -> None:
    """Rank 0 says ``tp-generate: error:``, a serving rank ``error: rank N:`` (the runtime has
    no tool's name); both are kept, and recorded lines stand in when stderr lost them."""
    from tp_dialect.tools.tp_generate import said_errors

    err = "noise\ntp-generate: error: cannot read 'x'error: rank 1: out of memory\n"
    err += "error: rank 1: out of memory\n"
    assert said_errors(err, ["error: rank 2: ignored while stderr says one"]) == [
        "tp-generate: error: cannot read 'x'",
        "tp-generate: error: rank 1: out of memory",
    ]
    assert said_errors("=== banner ===\n", ["error: rank 1: out of memory"]) == [
        "tp-generate: error: rank 1: out of memory"
    ]
