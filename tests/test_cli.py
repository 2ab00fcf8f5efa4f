"""tp-opt as a user meets it: exit codes, located errors, no tracebacks, whole outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import tool

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / "lit_tests" / "tools" / "Inputs"
TP_OPT = Path(sys.executable).parent / "tp-opt"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return tool("tp-opt", *args)


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("syntax_error.mlir", ":3:25: error: "),
        ("unknown_op.mlir", ":3:5: error: Operation tp.frobnicate is not registered"),
        ("bad_chip.mlir", ":3:5: error: 'tensor.empty' result #0 is on chip 3"),
        ("bad_slice.mlir", ":3:34: error: #tp.slice: range (6, 4) is out of bounds"),
    ],
)
def test_malformed_input_is_a_located_error_with_exit_1(name: str, where: str) -> None:
    proc = run(INPUTS / name)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    first, source_line, caret = proc.stderr.splitlines()[:3]
    assert first.startswith(str(INPUTS / name) + where)
    col = int(first.split(":")[2])
    assert caret.startswith(" " * (col - 1) + "^")
    assert source_line == (INPUTS / name).read_text().splitlines()[int(first.split(":")[1]) - 1]
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.mlir"], "tp-opt: error: cannot read input 'missing.mlir'"),
        (["--tp-no-such-pass"], "tp-opt: error: unknown flag --tp-no-such-pass"),
        (["-p", "no-such-pass"], "Unrecognized passes: ['no-such-pass']"),
        (["-p", "canonicalize{bogus=1}"], "bad pass pipeline 'canonicalize{bogus=1}'"),
        *(
            (
                [f"--{name}=shim=tpu"],
                f"bad pass pipeline '{name}{{shim=tpu}}': Incompatible types: given ('tpu',), "
                "expected typing.Literal['reference', 'sn40l', 'sn40l-int8']",
            )
            for name in ("tp-fuse", "tp-legalize", "tp-relocate")
        ),
    ],
)
def test_bad_invocations_are_one_line_errors(args: list[str], message: str, tmp_path: Path) -> None:
    src = tmp_path / "ok.mlir"
    src.write_text("builtin.module {}\n")
    full = args if args[0] == "missing.mlir" else [str(src), *args]
    proc = run(*full)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_output_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    out.write_text("previous contents\n")
    bad = tmp_path / "bad.mlir"
    bad.write_text("// -----\nbuiltin.module {}\n// -----\nbuiltin.module { %x = \n")
    proc = run(bad, "--split-input-file", "-o", out)
    assert proc.returncode == 1
    assert out.read_text() == "previous contents\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tp-")] == []

    good = tmp_path / "good.mlir"
    good.write_text("builtin.module attributes {tp.chips = 2 : i64} {}\n")
    assert run(good, "-o", out).returncode == 0
    assert out.read_text().strip() == "builtin.module attributes {tp.chips = 2 : i64} {\n}"


def test_pass_flags_run_in_the_order_given(tmp_path: Path) -> None:
    src = tmp_path / "p.mlir"
    src.write_text(
        "func.func @f() -> i64 {\n  %a = arith.constant 1 : i64\n"
        "  %b = arith.addi %a, %a : i64\n  func.return %b : i64\n}\n"
    )
    proc = run(src, "--cse", "--canonicalize", "--time-passes")
    assert proc.returncode == 0, proc.stderr
    timed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("Pass ")]
    assert timed == ["cse", "canonicalize"]
    assert "arith.constant 2 : i64" in proc.stdout


def test_shim_option_names_every_shim_and_python_built_passes_check_it() -> None:
    from typing import get_args

    from xdsl.dialects.builtin import ModuleOp

    from tp_dialect.diagnostics import TpDiagnostic
    from tp_dialect.passes.fuse import TpFuse
    from tp_dialect.passes.legalize import TpLegalize
    from tp_dialect.passes.options import ShimName
    from tp_dialect.passes.relocate import TpRelocate
    from tp_dialect.shims import SHIMS
    from tp_dialect.universe import tp_context

    assert get_args(ShimName) == tuple(SHIMS)
    bad = "tpu"  # the pipeline parser checks the Literal; Python does not
    for built in (
        TpFuse(shim=bad),  # type: ignore[arg-type]
        TpLegalize(shim=bad),  # type: ignore[arg-type]
        TpRelocate(epilogue=True, shim=bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(TpDiagnostic) as err:
            built.apply(tp_context(), ModuleOp([]))
        assert str(err.value).startswith(f"{built.name}: no shim 'tpu'"), err.value
        assert "[" not in str(err.value)  # a bad option is no reject reason
