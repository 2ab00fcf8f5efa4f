# ruff: noqa: E501  (IR text is written out one op per line)
"""tp-opt never ends in an internal error: every input below, once one, is now a located,
named error (or a success), through every pass pipeline; and none of them costs time or
memory proportional to a chip count the input merely states.

The lit files ``lit_tests/tools/robust_*.mlir`` pin each message; this file runs the same
classes through many pipelines in-process (with ``TP_DEBUG`` set, so an internal error
fails here with its traceback), and runs the costly ones in a subprocess under a time and a
memory limit.
"""

from __future__ import annotations

import contextlib
import io
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.mlir_lexer import MLIRLexer

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.passes.preconditions import MAX_LOWERED_CHIPS
from tp_dialect.tools import tp_opt
from tp_dialect.tools.source import LINEAR_STRING_LITERAL, verify_located
from tp_dialect.tools.tp_opt import main

TP_OPT = Path(sys.executable).parent / "tp-opt"
LOCATED = re.compile(r"^\S+:\d+:\d+: error: \S")

PIPELINES: list[list[str]] = [
    [],
    ["--tp-verify"],
    ["--tp-raise-allreduce"],
    ["--tp-fuse"],
    ["--tp-legalize"],
    ["--tp-relocate"],
    ["--tp-relocate=allreduce=ring"],
    ["--tp-relocate", "--tp-transfers", "--tp-phase"],
    ["--tp-relocate", "--tp-transfers", "--tp-link-points", "--tp-relay", "--tp-verify"],
    ["--tp-relocate=allreduce=auto", "--tp-transfers", "--tp-phase=order=source"],
    ["--tp-relocate=allreduce=twoshot epilogue=true", "--tp-transfers", "--tp-phase"],
    ["--tp-transfers"],
    ["--tp-phase"],
    ["--tp-link-points"],
    ["--tp-relay"],
    ["--tp-split=chips=2 plan=qwen3"],
]

FOLD = """\
builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {{
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }}
}}
"""

ONE_STATEMENT = """\
builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {{
    %s = arith.addf %a, %a : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }}
}}
"""

ON_ONE_CHIP = """\
builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @f(%a: tensor<4xf32, #tp.chip<5>>) -> tensor<4xf32, #tp.chip<5>> {{
    %b = arith.addf %a, %a : tensor<4xf32, #tp.chip<5>>
    %c = arith.mulf %b, %b : tensor<4xf32, #tp.chip<5>>
    func.return %c : tensor<4xf32, #tp.chip<5>>
  }}
}}
"""

# A tensor of 2**41 elements stored back from two chips: its verifier once listed every
# position of each part (tens of GB); it compares runs. {second} is the second part's start.
UNSHARD = """\
builtin.module attributes {{tp.chips = 2 : i64}} {{
  func.func @f(%a: tensor<1099511627776xf32, #tp.chip<0>>, %b: tensor<1099511627776xf32, #tp.chip<1>>) -> tensor<2199023255552xf32> {{
    %u = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 1099511627776)], full = [2199023255552]>, #tp.slice<axis = 0, ranges = [({second}, 1099511627776)], full = [2199023255552]>] : tensor<1099511627776xf32, #tp.chip<0>>, tensor<1099511627776xf32, #tp.chip<1>> -> tensor<2199023255552xf32>
    func.return %u : tensor<2199023255552xf32>
  }}
}}
"""

# Each a class of input that once ended in an internal error (or was accepted unchecked).
REPRODUCERS: dict[str, str] = {
    "fold over 2**31 chips": FOLD.format(n=2**31),
    "fold over 2**62 chips": FOLD.format(n=2**62),
    "one statement over 65536 chips": ONE_STATEMENT.format(n=65536),
    "work on one chip of 2**31": ON_ONE_CHIP.format(n=2**31),
    "computes on a host output": """\
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @store(%k0: tensor<1x4xf32, #tp.chip<0>>, %k1: tensor<1x4xf32, #tp.chip<1>>) -> tensor<2x4xf32> {
    %k = tp.unshard %k0, %k1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    %d = arith.addf %k, %k : tensor<2x4xf32>
    func.return %d : tensor<2x4xf32>
  }
}
""",
    "a function of two blocks": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %a : tensor<4xf32>
  cf.br ^bb1
^bb1:
  func.return %s : tensor<4xf32>
}
""",
    "a region of two blocks": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.execute_region -> (tensor<4xf32>) {
    cf.br ^bb1
  ^bb1:
    scf.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
""",
    "no function": "builtin.module attributes {tp.chips = 2 : i64} {\n}\n",
    "two functions, no @decode": """\
builtin.module {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    func.return %a : tensor<4xf32>
  }
  func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {
    func.return %a : tensor<4xf32>
  }
}
""",
    "a declaration only": "func.func private @f(tensor<4xf32>) -> tensor<4xf32>\n",
    "a function ended by linalg.yield": """\
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32> {
    linalg.yield %a : tensor<4xf32, #tp.chip<0>>
  }
}
""",
    "a relay missing a copy": """\
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c = tp.chip_program on 0 () {
      %b = tp.link 0 sends() as [] receives ["b"] : () -> tensor<4xf32>
      %c_1 = tp.section "c" on [0] {
        %0 = arith.mulf %b, %b : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      tp.finish %c_1 : tensor<4xf32>
    } : () -> (tensor<4xf32>)
    tp.chip_program on 1 (%a) {
    ^bb0(%a_1: tensor<4xf32>):
      %b = tp.section "b" on [1] {
        %0 = arith.addf %a_1, %a_1 : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      tp.link 1 sends(%b) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.relay {
      tp.run_to round 0 chip 1 halt 1
      tp.run_to round 1 chip 0 halt 1
      tp.run_to round 1 chip 1 halt 2
    }
    func.return %c : tensor<4xf32>
  }
}
""",
    "a relay without programs": """\
builtin.module attributes {tp.chips = 7 : i64} {
  func.func @f() {
    tp.relay {
      tp.copy round 1 "x" from 0 to 2
    }
    func.return
  }
}
""",
    "linalg.add without inputs": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add outs(%e : tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
""",
    "transpose permutation out of range": """\
func.func @f(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 5]
  func.return %t : tensor<8x4xf32>
}
""",
    "block label ^3b0": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^3b0
^3b0:
  func.return %a : tensor<4xf32>
}
""",
    "an attribute refused while its op is built": """\
func.func @f(%a: tensor<1x128xf32>) -> tensor<1x8x2x8xf32> {
  %b = tensor.expand_shape %a [[0], [1, 5, 3]] output_shape [1, 8, 2, 8] : tensor<1x128xf32> into tensor<1x8x2x8xf32>
  func.return %b : tensor<1x8x2x8xf32>
}
""",
    "a block label defined twice": """\
func.func @f() {
  cf.br ^bb7
^bb7:
  cf.br ^bb7
^bb7:
  func.return
}
""",
    "forward reference into a region": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.execute_region -> (tensor<4xf32>) {
    scf.yield %b : tensor<4xf32>
  }
  %b = arith.addf %a, %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
""",
    "use before definition": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.subf %a, %b : tensor<4xf32>
  %b = arith.addf %a, %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
""",
    "a value never defined": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %zz : tensor<4xf32>
  func.return %b : tensor<4xf32>
}
""",
    "no chip count stated": """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %a : tensor<4xf32>
  func.return %b : tensor<4xf32>
}
""",
    "a scalar read on another chip": """\
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%n: i64, %k1: tensor<4xf32, #tp.chip<1>>, %r: tensor<1xf32, #tp.chip<1>>) -> () {
    %pos = tp.section "pos" on [0] {
      %i = arith.index_cast %n : i64 to index
      tp.yield %i : index
    } : index
    %w1 = tp.section "w1" on [1] {
      %w = tensor.insert_slice %r into %k1[%pos] [1] [1] : tensor<1xf32, #tp.chip<1>> into tensor<4xf32, #tp.chip<1>>
      tp.yield %w : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}
""",
    "an unnamed sum handed on by a section": """\
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %0 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = tp.section "s" on [0, 1] {
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
""",
    "a static size that is xDSL's dynamic marker": """\
func.func @f(%a: tensor<1x64xf32>) -> tensor<1x8x1x8xf32> {
  %b = tensor.expand_shape %a [[0], [1, 2, 3]] output_shape [1, 8, 9223372036854775808, 8] : tensor<1x64xf32> into tensor<1x8x1x8xf32>
  func.return %b : tensor<1x8x1x8xf32>
}
""",
    "an empty function body": "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n}\n",
    "an unterminated string": 'func.func @f() attributes {note = "' + "a" * 40 + "\n",
}


class PassLeftInvalidIR(Exception):
    """A pass's output failed verification: a bug in the pass, however located."""


def run_in_process(text: str, args: list[str], tmp_path: Path) -> tuple[int, str]:
    """tp-opt's exit code and stderr on ``text``; an internal error raises (TP_DEBUG), and
    so does IR a pass leaves that does not verify (checked after every pass)."""
    path = tmp_path / "input.mlir"
    path.write_text(text)
    err = io.StringIO()
    checks = 0

    def verify_every_output(module: ModuleOp) -> None:
        nonlocal checks
        checks += 1
        try:
            verify_located(module)
        except TpDiagnostic as bad:
            if checks > 1:  # not the input: what a pass wrote
                raise PassLeftInvalidIR(bad.message) from None
            raise

    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        patch.setattr(tp_opt, "verify_located", verify_every_output)
        code = main([str(path), *args, "--verify-each"])
    return code, err.getvalue()


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_reproducer_is_a_located_error_or_a_success_through_every_pipeline(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TP_DEBUG", "1")  # an internal error propagates: the test fails
    for args in PIPELINES:
        code, err = run_in_process(REPRODUCERS[name], args, tmp_path)
        if code == 0:
            assert err == "", (args, err)
            continue
        assert code == 1
        assert LOCATED.match(err), (args, err)
        assert "internal error" not in err and "Traceback" not in err


def _limited() -> None:
    """In the child: at most 2 GB of address space (a chip count that allocates per chip
    fails fast instead of swapping the machine)."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run_limited(
    text: str, args: list[str], tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], float]:
    path = tmp_path / "input.mlir"
    path.write_text(text)
    start = time.perf_counter()
    proc = subprocess.run(
        [str(TP_OPT), str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
    )
    return proc, time.perf_counter() - start


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        (FOLD.format(n=2**31), ["--tp-verify"], "misses chip 2..2147483647"),
        (FOLD.format(n=2**31), ["--tp-raise-allreduce"], None),
        (FOLD.format(n=2**31), ["--tp-legalize"], None),
        (FOLD.format(n=2**31), ["--tp-relocate=allreduce=ring"], "misses chip 2..2147483647"),
        (FOLD.format(n=2**31), ["--tp-fuse"], None),
        (
            ONE_STATEMENT.format(n=65536),
            ["--tp-relocate", "--tp-transfers", "--tp-link-points"],
            "'arith.addf' runs on every chip: tp-relocate lists every chip",
        ),
        (ONE_STATEMENT.format(n=2**62), ["--tp-verify"], None),
        (UNSHARD.format(second=2**40), [], None),
        (UNSHARD.format(second=2**40 - 1), [], "part #1 on chip 1 overlaps an earlier part"),
        (
            ON_ONE_CHIP.format(n=2**31),
            ["--tp-relocate", "--tp-fuse", "--tp-transfers", "--tp-phase"],
            None,
        ),
        (
            ON_ONE_CHIP.format(n=2**31),
            ["--tp-relocate", "--tp-transfers", "--tp-link-points"],
            "tp.chips = 2147483648: tp-link-points writes a program for every chip",
        ),
    ],
)
def test_a_stated_chip_count_costs_neither_time_nor_memory(
    text: str, args: list[str], message: str | None, tmp_path: Path
) -> None:
    proc, elapsed = run_limited(text, args, tmp_path)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    if message is None:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 1
        assert LOCATED.match(proc.stderr) and message in proc.stderr, proc.stderr
    assert elapsed < 20, f"{elapsed:.1f} s"


def test_the_most_chips_lowered_still_lower_quickly(tmp_path: Path) -> None:
    """At the cap, one replicated statement becomes a program on each of the chips."""
    proc, elapsed = run_limited(
        ONE_STATEMENT.format(n=MAX_LOWERED_CHIPS),
        ["--tp-relocate", "--tp-transfers", "--tp-phase", "--tp-link-points", "--tp-relay"],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("tp.chip_program on") == MAX_LOWERED_CHIPS
    assert elapsed < 30, f"{elapsed:.1f} s"
    over = ONE_STATEMENT.format(n=MAX_LOWERED_CHIPS + 1)
    code, err = run_in_process(over, ["--tp-relocate"], tmp_path)
    assert code == 1 and f"for at most {MAX_LOWERED_CHIPS} chips" in err
    code, err = run_in_process(over, ["--tp-link-points"], tmp_path)
    assert code == 1 and f"lowers at most {MAX_LOWERED_CHIPS} chips" in err


@pytest.mark.parametrize("length", [40, 5000])
def test_an_unterminated_string_is_refused_in_linear_time(length: int, tmp_path: Path) -> None:
    """xDSL's own lexer takes minutes on 32 characters (2**n ways to split them)."""
    text = 'builtin.module attributes {note = "' + "a" * length + "\n}\n"
    proc, elapsed = run_limited(text, [], tmp_path)
    assert proc.returncode == 1
    assert "1:35: error: End of file reached before closing string literal." in proc.stderr
    assert elapsed < 10, f"{elapsed:.1f} s"


@pytest.mark.parametrize(
    "text",
    [
        '""',
        '"plain"',
        '"with \\"quotes\\" and \\\\ and \\n and \\t"',
        '"hex \\41\\ff"',
        '"a" "b"',
        '"bad \\q escape"',
        '"unterminated',
        '"stops at a newline\n"',
        '"\\',
    ],
)
def test_the_linear_string_rule_matches_what_xdsl_matches(text: str) -> None:
    """The same literals, the same ends: only the time to fail differs (short inputs here,
    which xDSL's own rule still fails on quickly)."""
    theirs = MLIRLexer._unescaped_characters_regex.match(text)  # pyright: ignore[reportPrivateUsage]
    ours = LINEAR_STRING_LITERAL.match(text)
    assert (ours and ours.end()) == (theirs and theirs.end())


def test_a_binary_program_is_a_located_error(tmp_path: Path) -> None:
    """Not UTF-8: located at the first byte that is not (tp-run reads programs alike)."""
    path = tmp_path / "program.mlir"
    path.write_bytes(b"builtin.module {\n  \xff\xfe\n}\n")
    for argv in (
        [str(TP_OPT), str(path)],
        [str(TP_OPT.parent / "tp-run"), str(path), "--random-weights", "0"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert f"{path}:2:3: error: not UTF-8 text (byte 0xff)" in proc.stderr, proc.stderr


def test_an_op_the_printer_fails_on_is_named_and_located(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of defence: an op that verified but that xDSL cannot print."""
    from xdsl.dialects.arith import ConstantOp

    def broken(self: object, printer: object) -> None:
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(ConstantOp, "print", broken)
    code, err = run_in_process(
        "func.func @f() -> i64 {\n  %c = arith.constant 1 : i64\n  func.return %c : i64\n}\n",
        [],
        tmp_path,
    )
    assert code == 1
    first = err.splitlines()[0]
    assert LOCATED.match(first) and first.endswith(
        "2:3: error: 'arith.constant' cannot be printed: xDSL's printer fails on it "
        "(IndexError: tuple index out of range)"
    ), err
