"""A malformed pass pipeline — in ``-p`` or in a pass flag — is one line,
``tp-opt: error: bad pass pipeline '...': <what is wrong>``, exit 1: xDSL's syntax errors
(five lines with a caret) as the column and what is there, an option given twice, and a pass
that cannot run on this machine (``mlir-opt[...]`` without mlir-opt)."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from tp_dialect.tools import tp_opt


def opt(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = tp_opt.main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def empty(tmp_path: Path) -> str:
    path = tmp_path / "empty.mlir"
    path.write_text("builtin.module {}\n")
    return str(path)


@pytest.mark.parametrize(
    ("pipeline", "says"),
    [
        (
            "tp-relocate{allreduce=ring",
            "at column 27 (the end): malformed pass arguments, expected either a space or `}`",
        ),
        ("a,,b", "at column 3 (','): expected pass name"),
        ("{", "at column 1 ('{'): expected pass name"),
        (
            "tp-split{plan=",
            "at column 15 (the end): unknown argument value, wrap argument in quotes to pass "
            "arbitrary string values",
        ),
        (
            "tp-relocate{allreduce=ring}}",
            "at column 28 ('}'): expected a comma after pass argument dict",
        ),
        ('tp-relocate{allreduce="ring}', "at column 23 ('\"'): unknown token"),
        ("mlir-opt[", "at column 9 ('['): unknown token"),
        (
            "tp-phase{order=source\nfoo=",  # line 2 to xDSL: one line here, columns kept
            "at column 27 (the end): unknown argument value, wrap argument in quotes to pass "
            "arbitrary string values",
        ),
        (
            "tp-relocate{allreduce=ring allreduce=fold}",
            "option 'allreduce' of tp-relocate is given twice: state it once",
        ),
        (
            "tp-phase,tp-split{chips=2 plan=qwen3 chips=4}",
            "option 'chips' of tp-split is given twice: state it once",
        ),
    ],
)
def test_a_malformed_pipeline_is_one_line_saying_what_is_wrong(
    empty: str, pipeline: str, says: str
) -> None:
    """xDSL's syntax errors were five lines (header, location, text, caret, message) inside
    tp-opt's one; an option given twice ran with the last (mlir-opt refuses it)."""
    shown = pipeline.replace("\n", " ")
    assert opt(empty, "-p", pipeline) == (
        1,
        "",
        f"tp-opt: error: bad pass pipeline '{shown}': {says}\n",
    )


def test_a_flag_with_an_option_given_twice_is_refused_too(empty: str) -> None:
    code, out, err = opt(empty, "--tp-fuse=shim=sn40l report=true shim=reference")
    assert (code, out) == (1, "")
    assert err == (
        "tp-opt: error: bad pass pipeline 'tp-fuse{shim=sn40l report=true shim=reference}': "
        "option 'shim' of tp-fuse is given twice: state it once\n"
    )


def test_options_of_two_passes_may_share_names(empty: str) -> None:
    pipeline = "tp-relocate{allreduce=ring shim=sn40l},tp-relocate{allreduce=ring}"
    assert opt(empty, "-p", pipeline)[0] == 0


def test_the_mlir_opt_pass_without_mlir_opt_is_refused_before_any_pass_runs(
    empty: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """It ran the passes before it, then ended in an internal error (xDSL raises
    ValueError when its turn came)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no mlir-opt on it
    assert os.environ.get("XDSL_MLIR_OPT") is None
    assert opt(empty, "-p", "tp-phase,mlir-opt[canonicalize]") == (
        1,
        "",
        "tp-opt: error: bad pass pipeline 'tp-phase,mlir-opt[canonicalize]': the mlir-opt "
        "pass runs 'mlir-opt', which is not installed (XDSL_MLIR_OPT names another)\n",
    )
