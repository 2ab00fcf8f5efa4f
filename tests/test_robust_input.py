"""Input that made tp's readers recurse or read without end is refused with one located
line, in bounded time and memory: brackets nested beyond `MAX_NESTING` (xDSL's parser and
Python's json module recurse once per level), a program larger than `MAX_SOURCE_BYTES` or
without end (``/dev/zero``), and a machine or plan file nested thousands deep. Programs
nested up to the bound still parse, verify, print and go through tp's passes on Python's
default stack (the recursion limit is never raised).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from limits import BIN, run_limited

from tp_dialect.analysis.split.plan import PlanError, parse_plan
from tp_dialect.machine import MachineError, machine_from
from tp_dialect.nesting import JSON, MAX_NESTING, MLIR, deepest, first_too_deep
from tp_dialect.tools.source import MAX_SOURCE_BYTES
from tp_dialect.tools.tp_opt import main

LOCATED = re.compile(r"^(\S+):(\d+):(\d+): error: ")

# Each construct xDSL recurses on, nested ``n`` levels deep.
OP = '"test.op"() '
NESTED: dict[str, Callable[[int], str]] = {
    "array": lambda n: OP + "{a = " + "[" * n + "]" * n + "} : () -> ()",
    "dictionary": lambda n: OP + "{a = " + "{a = " * n + "1" + "}" * n + "} : () -> ()",
    "tuple type": lambda n: OP + ": () -> " + "tuple<" * n + "i32" + ">" * n,
    "function type": lambda n: OP + ": () -> " + "(() -> " * n + "i32" + ")" * n,
    "affine map": lambda n: (
        OP + "{m = affine_map<(d0) -> (" + "(" * n + "d0 + 1" + ")" * n + ")>} : () -> ()"
    ),
    "dense": lambda n: (
        OP + "{a = dense<" + "[" * n + "1" + "]" * n + "> : tensor<" + "1x" * n + "i32>} : () -> ()"
    ),
    "modules": lambda n: "builtin.module {\n" * n + "}\n" * n,
    "regions": lambda n: (
        "func.func @decode(%n: index) {\n"
        + "".join(f"scf.for %i{k} = %n to %n step %n {{\n" for k in range(n))
        + "}\n" * n
        + "func.return\n}"
    ),
}


def nested(kind: str, depth: int) -> str:
    """``kind`` nested so that its brackets, in the module printed around it, reach
    ``depth``."""
    make = NESTED[kind]
    extra = deepest("builtin.module {\n" + make(1) + "\n}\n", MLIR) - 1
    return "builtin.module {\n" + make(depth - extra) + "\n}\n"


def run(args: list[str]) -> tuple[int, str, str]:
    """tp-opt in this process (under pytest's own stack): exit code, stdout, stderr; an
    internal error raises (TP_DEBUG)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_nesting_up_to_the_bound_is_read_and_lowered(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TP_DEBUG", "1")
    text = nested(kind, MAX_NESTING)
    assert first_too_deep(text, MLIR) is None and first_too_deep(text, MLIR, MAX_NESTING - 1)
    path = tmp_path / "deep.mlir"
    path.write_text(text)
    code, out, err = run([str(path), "--allow-unregistered-dialect", "--verify-each"])
    assert (code, err) == (0, "")
    path.write_text(out)  # what it printed reads back
    assert run([str(path), "--allow-unregistered-dialect"])[0] == 0
    for passes in (["--tp-verify"], ["--tp-relocate", "--tp-transfers", "--tp-phase"]):
        code, _, err = run([str(path), "--allow-unregistered-dialect", *passes])
        assert code == 0 or LOCATED.match(err), err


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_nesting_beyond_the_bound_is_refused_at_the_bracket_crossing_it(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once an internal error (RecursionError) at a few hundred levels; now one level past
    the bound is refused where it is crossed, and so is a thousand."""
    monkeypatch.setenv("TP_DEBUG", "1")
    for depth in (MAX_NESTING + 1, 1000):
        text = nested(kind, depth)
        path = tmp_path / "deep.mlir"
        path.write_text(text)
        code, out, err = run([str(path), "--allow-unregistered-dialect"])
        first = err.splitlines()[0]
        assert code == 1 and out == "", err
        assert first.endswith(
            f"error: nested {MAX_NESTING + 1} deep here: tp reads brackets ((, [, {{, <) "
            f"nested at most {MAX_NESTING} deep"
        )
        where = LOCATED.match(first)
        assert where is not None
        line, col = int(where.group(2)), int(where.group(3))
        before = "\n".join(text.splitlines()[: line - 1] + [text.splitlines()[line - 1][: col - 1]])
        depth = sum(before.count(c) for c in "([{<") - sum(before.count(c) for c in ")]}>")
        depth += before.count("->")  # an arrow's '>' closes nothing
        assert depth == MAX_NESTING and text.splitlines()[line - 1][col - 1] in "([{<"


def test_an_implicit_module_counts_the_module_it_is_printed_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without its builtin.module, a program is printed inside one: at the bound, its
    output would be one level too deep to read back; it is refused, one level less is read."""
    monkeypatch.setenv("TP_DEBUG", "1")
    make = NESTED["array"]  # brackets nest n + 1 deep: the attribute dictionary
    path = tmp_path / "implicit.mlir"
    path.write_text(make(MAX_NESTING - 1))
    code, _, err = run([str(path), "--allow-unregistered-dialect"])
    assert code == 1 and err.startswith(
        f"{path}:1:{len(OP) + 5 + MAX_NESTING - 1}: error: nested {MAX_NESTING + 1} deep "
        "here, counting the builtin.module it is printed in"
    ), err
    path.write_text(make(MAX_NESTING - 2))
    code, out, err = run([str(path), "--allow-unregistered-dialect"])
    assert (code, err) == (0, "")
    path.write_text(out)
    assert run([str(path), "--allow-unregistered-dialect"])[:2] == (0, out)


def test_nesting_xdsl_recurses_on_without_brackets_is_located(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain of unary minuses in an affine expression: xDSL's parser recurses once per
    minus; where it runs out of stack is the error's place."""
    monkeypatch.setenv("TP_DEBUG", "1")
    path = tmp_path / "minus.mlir"
    path.write_text('"test.op"() {m = affine_map<(d0) -> (' + "-" * 3000 + "d0)>} : () -> ()\n")
    code, _, err = run([str(path), "--allow-unregistered-dialect"])
    assert code == 1
    assert re.match(r".*minus\.mlir:1:\d+: error: nested too deeply for xDSL's parser here", err)


def _reference_depth_crossing(text: str, opening: str, closing: str, mlir: bool) -> int | None:
    """The first opening bracket with ``MAX_NESTING`` open around it, walking the text one
    character at a time (strings, comments and ``->``/``>=`` skipped): an independent
    reading of what `first_too_deep` computes."""
    depth, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"' and not (mlir and text[j] == "\n"):
                j += 2 if text[j] == "\\" else 1
            if j < len(text) and text[j] == '"':
                i = j + 1
                continue
        elif mlir and text.startswith(("//",), i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif mlir and text.startswith(("->", ">="), i):
            i += 2
            continue
        if c in opening:
            depth += 1
            if depth > MAX_NESTING:
                return i
        elif c in closing:
            depth -= 1
        i += 1
    return None


@given(st.text(alphabet='([{<>}])"\\/-=\na', max_size=400), st.integers(0, 80))
# An escaped line break inside a string (found by Hypothesis): the string goes on.
@example('[["\n{\\\n"{{', 69)
@example('<<<"\\\n<<"', 67)
def test_the_fast_depth_count_is_the_character_walk(text: str, extra: int) -> None:
    deep = "(" * extra + text
    assert first_too_deep(deep, MLIR) == _reference_depth_crossing(deep, "([{<", ")]}>", True)
    deep = "[" * extra + text
    assert first_too_deep(deep, JSON) == _reference_depth_crossing(deep, "[{", "]}", False)


@pytest.mark.parametrize(
    "args",
    [
        [str(BIN / "tp-opt"), "/dev/zero"],
        [str(BIN / "tp-run"), "/dev/zero", "--dry-run"],
        [str(BIN / "tp-opt")],  # stdin
    ],
)
def test_an_endless_input_is_read_no_further_than_the_bound(args: list[str]) -> None:
    """``tp-opt /dev/zero`` read until MemoryError; now it reads 64 MiB and stops."""
    with open("/dev/zero", "rb") as zero:
        proc = run_limited(args, stdin=zero)
    name = args[1] if len(args) > 1 else "stdin"
    what = "program" if "tp-run" in args[0] else "input"
    assert proc.returncode == 1
    assert proc.stderr == (
        f"{Path(args[0]).name}: error: {what} '{name}' is larger than 64 MiB: tp reads "
        f"programs of at most {MAX_SOURCE_BYTES} bytes\n"
    )


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A sparse 3 GB file: reading it whole fails under the 2 GB limit; its size alone
    refuses it."""
    big = tmp_path / "big.mlir"
    with open(big, "wb") as f:
        f.truncate(3 << 30)
    proc = run_limited([str(BIN / "tp-opt"), str(big)])
    assert proc.returncode == 1
    assert proc.stderr == (
        f"tp-opt: error: input '{big}' is larger than 64 MiB: tp reads programs of at most "
        f"{MAX_SOURCE_BYTES} bytes\n"
    )


def test_a_machine_file_nested_thousands_deep_is_refused_where_it_crosses(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"base": "sn40l",\n "x": ' + "[" * 3000 + "]" * 3000 + "}\n")
    with pytest.raises(MachineError) as err:
        machine_from(str(path))
    assert str(err.value) == (
        f"machine file '{path}': nested deeper than 64 at line 2 column 70: it holds one "
        "JSON object of fields"
    )
    program = tmp_path / "p.mlir"
    program.write_text(
        "builtin.module attributes {tp.chips = 2 : i64} {\n  func.func @decode(%x: "
        "tensor<4xf32>) -> tensor<4xf32> {\n    func.return %x : tensor<4xf32>\n  }\n}\n"
    )
    proc = run_limited([str(BIN / "tp-run"), str(program), "--dry-run", "--machine", str(path)])
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == f"tp-run: error: {err.value}"


def test_a_plan_nested_thousands_deep_is_refused_where_it_crosses() -> None:
    with pytest.raises(PlanError, match=r"^p\.json: nested deeper than 64 at line 1 column 70: "):
        parse_plan('{"a": ' + "[" * 3000 + "]" * 3000 + "}", "p.json")
