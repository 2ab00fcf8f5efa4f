"""The tools' command lines and messages: a flag is spelled whole and a wrong one is one line
naming the closest known flag; ``-p`` takes the option values the flag form takes; a plan
states each pattern once; a quoted source line fits a screen line.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tp_dialect.analysis.split.plan import PlanError, parse_plan
from tp_dialect.tools import tp_gen, tp_opt, tp_run
from tp_dialect.tools.pipeline import quote_pipeline_paths
from tp_dialect.tools.source import QUOTE_WIDTH, located

PLANS = Path(__file__).resolve().parents[1] / "tp_dialect" / "plans"


def run(main: Callable[[Sequence[str] | None], int], *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GPT-2's own shape, two layers, unsharded: a @decode signature 3,098 characters long."""
    path = tmp_path_factory.mktemp("gpt2") / "gpt2.mlir"
    code, _, err = run(
        tp_gen.main, "gpt2", "--preset", "gpt2", "--layers", "2", "--unsharded", "-o", str(path)
    )
    assert code == 0, err
    return path


# Flags: no abbreviations, one line with "did you mean".


@pytest.mark.parametrize(
    ("main", "args", "message"),
    [
        (
            tp_run.main,
            ["p.mlir", "--random-weight", "0"],
            "tp-run: error: unknown flag --random-weight (did you mean --random-weights?)",
        ),
        (
            tp_run.main,
            ["p.mlir", "--dry-runn"],
            "tp-run: error: unknown flag --dry-runn (did you mean --dry-run?)",
        ),
        (
            tp_gen.main,
            ["qwen3", "--chip", "2"],
            "tp-gen: error: unknown flag --chip (did you mean --chips?)",
        ),
        (
            tp_gen.main,
            ["qwen3", "--lay=2"],
            "tp-gen: error: unknown flag --lay=2 (did you mean --layers?)",
        ),
        (
            tp_opt.main,
            ["x.mlir", "--tp-relo"],
            "tp-opt: error: unknown flag --tp-relo (did you mean --tp-relocate?)",
        ),
        (tp_gen.main, ["qwen3", "--zzzzzz"], "tp-gen: error: unknown flag --zzzzzz"),
        (
            tp_gen.main,
            ["qwen3", "--preset", "nope"],
            "tp-gen: error: argument --preset: invalid choice: 'nope' (choose from 'gpt2', "
            "'qwen3-8b', 'tiny')",
        ),
        (tp_run.main, [], "tp-run: error: the following arguments are required: program"),
        (tp_run.main, ["a.mlir", "b.mlir"], "tp-run: error: unexpected argument b.mlir"),
    ],
)
def test_a_bad_command_line_is_one_line_and_no_flag_is_abbreviated(
    main: Callable[[Sequence[str] | None], int], args: list[str], message: str
) -> None:
    """Abbreviations were accepted (``--random-weight`` ran as ``--random-weights``,
    ``--tp-relo`` as ``--tp-relocate``) and a wrong flag printed a 15-line usage block."""
    assert run(main, *args) == (1, "", message + "\n")


def test_flags_spelled_whole_still_work(tmp_path: Path) -> None:
    out = tmp_path / "t.mlir"
    assert run(tp_gen.main, "qwen3", "--chips", "2", "--layers", "1", "-o", str(out))[0] == 0
    code, printed, _ = run(tp_opt.main, str(out), "--tp-relocate=allreduce=ring", "--tp-phase")
    assert code == 0 and "tp.section" in printed


# -p takes paths as the flag form does.


def test_p_takes_the_plan_paths_the_flag_form_takes(tmp_path: Path) -> None:
    """``-p "tp-split{plan=x.json}"`` failed to parse: a dot is not in xDSL's bare words."""
    program = tmp_path / "gpt2.mlir"
    assert run(tp_gen.main, "gpt2", "--unsharded", "-o", str(program))[0] == 0
    spaced = tmp_path / "my plans"
    spaced.mkdir()
    plan = spaced / "gpt2.v1.json"
    shutil.copy(PLANS / "gpt2.json", plan)
    code, by_flag, err = run(tp_opt.main, str(program), f"--tp-split=plan='{plan}' chips=2")
    assert code == 0, err
    for pipeline in (
        f"tp-split{{plan='{plan}' chips=2}}",
        f'tp-split{{plan="{plan}" chips=2}}',
        f"tp-split{{chips=2 plan='{plan}'}},tp-relocate{{allreduce=ring}}",
    ):
        code, by_p, err = run(tp_opt.main, str(program), "-p", pipeline)
        assert code == 0, err
        if "relocate" not in pipeline:
            assert by_p == by_flag
    relative = Path("plans-copy.x.json")
    try:
        shutil.copy(PLANS / "gpt2.json", relative)
        assert run(tp_opt.main, str(program), "-p", f"tp-split{{plan={relative}}}")[1] == by_flag
    finally:
        relative.unlink()


@pytest.mark.parametrize(
    ("pipeline", "read"),
    [
        ("tp-split{plan=x.json chips=2}", 'tp-split{plan="x.json" chips=2}'),
        ("tp-phase{machine=m/a.json},tp-relay", 'tp-phase{machine="m/a.json"},tp-relay'),
        ("p{sizes=1,2,3 name=a-b flag}", "p{sizes=1,2,3 name=a-b flag}"),
        ("p{x=1.5e-3 y=-2}", "p{x=1.5e-3 y=-2}"),
        ("mlir-opt[canonicalize{a=b.c}]", "mlir-opt[canonicalize{a=b.c}]"),
    ],
)
def test_p_options_are_read_as_the_flag_form_reads_them(pipeline: str, read: str) -> None:
    assert quote_pipeline_paths(pipeline) == read


# A plan names each pattern once.


@pytest.mark.parametrize(
    "text",
    [
        '{"h.*.mlp.c_fc": "colwise", "h.*.mlp.c_fc": "rowwise"}',
        '{"base_model_tp_plan": {"a": "colwise", "b": "rowwise", "a": "colwise"}}',
        '{"a": {"style": "colwise", "style": "rowwise"}}',
    ],
)
def test_a_plan_stating_a_key_twice_is_refused_by_name(text: str) -> None:
    """JSON kept the last of the two, silently, while a plan's first match wins."""
    key = "style" if "style" in text else "h.*.mlp.c_fc" if "c_fc" in text else "a"
    with pytest.raises(PlanError) as err:
        parse_plan(text, "p.json")
    assert str(err.value) == f"p.json: '{key}' is given twice: state each pattern once"


def test_a_duplicate_pattern_is_a_one_line_tp_opt_error(tmp_path: Path) -> None:
    program, plan = tmp_path / "g.mlir", tmp_path / "dup.json"
    assert run(tp_gen.main, "gpt2", "--unsharded", "-o", str(program))[0] == 0
    plan.write_text('{"h.*.mlp.c_fc": "colwise", "h.*.mlp.c_fc": "rowwise"}')
    assert run(tp_opt.main, str(program), f"--tp-split=plan={plan}") == (
        1,
        "",
        f"{program}: error: tp-split: {plan}: 'h.*.mlp.c_fc' is given twice: state each "
        "pattern once\n",
    )


# A quoted line fits a screen line.


def test_a_split_refusal_quotes_the_function_cut_to_a_screen_line(gpt2: Path) -> None:
    """It quoted the whole 3,098-character signature."""
    code, out, err = run(tp_opt.main, str(gpt2), "--tp-split=chips=5 plan=gpt2")
    assert code == 1 and out == ""
    first, quoted, caret = err.splitlines()
    assert first == (
        f"{gpt2}:3:3: error: 5 chips do not divide 3 packed blocks of axis 1 of "
        "'h.0.attn.c_attn.weight' (2304 elements): each chip must hold an equal run "
        "[plan-mismatch]"
    )
    line = gpt2.read_text().splitlines()[2]
    assert len(line) > 3000
    assert quoted == line[: QUOTE_WIDTH - 1] + "…" and caret == "  ^"


@pytest.mark.parametrize("col", [1, 3, 140, 141, 142, 1500, 2999, 3000, 3001])
def test_the_quoted_window_holds_the_column_under_its_caret(col: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(3000))
    message = located("f.mlir", (7, col, text), "bad")
    first, quoted, caret = message.splitlines()
    assert first == f"f.mlir:7:{col}: error: bad"
    assert len(quoted) <= QUOTE_WIDTH and caret.strip() == "^"
    at = caret.index("^")
    if col <= len(text):
        assert quoted[at] == text[col - 1]
    assert quoted.startswith("…") == (col > QUOTE_WIDTH - 20)
    assert quoted.endswith("…") == (max(0, col - 21) + QUOTE_WIDTH < len(text))
    short = located("f.mlir", (7, 3, "  %x = op"), "bad", width=2)
    assert short == "f.mlir:7:3: error: bad\n  %x = op\n  ^^"


def test_a_verifier_error_on_a_long_line_is_cut_too(tmp_path: Path) -> None:
    args = ", ".join(f"%a{i}: tensor<4xf32>" for i in range(200))
    path = tmp_path / "long.mlir"
    path.write_text(
        "builtin.module attributes {tp.chips = 2 : i64} {\n"
        f"  func.func @decode({args}) -> tensor<4xf32, #tp.chip<3>> {{\n"
        "    %e = tensor.empty() : tensor<4xf32, #tp.chip<3>>\n"
        "    func.return %e : tensor<4xf32, #tp.chip<3>>\n  }\n}\n"
    )
    code, _, err = run(tp_opt.main, str(path))
    assert code == 1
    first, quoted, caret = err.splitlines()
    assert first.startswith(f"{path}:2:3: error: ")
    assert quoted.endswith("…") and len(quoted) == QUOTE_WIDTH and caret == "  ^"
