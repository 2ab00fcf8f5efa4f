"""tp-run refuses, before it allocates anything, a run whose tensors cannot fit in the host's
memory — one line naming what the run needs at least and what is available — where it ended
in an internal MemoryError; ``--dry-run`` still models such a program. The rule
(`host_memory.RunNeeds`): every argument, a copy of each under ``--storage``, and the larger
of the heaviest op's computed tensors and the largest random float64 draw."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from limits import BIN, run_limited

from tp_dialect.runtime import host_memory
from tp_dialect.runtime.host_memory import RunNeeds, run_needs
from tp_dialect.tools import tp_gen, tp_run
from tp_dialect.tools.common import run_tool
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

ARGS = (
    '%w: tensor<8x4xf32> {tp.name = "w", tp.role = "weight"}, '
    '%x: tensor<2x8xf32> {tp.name = "x", tp.role = "input"}'
)
FLAT = f"""builtin.module attributes {{tp.chips = 1 : i64}} {{
  func.func @decode({ARGS}) -> tensor<2x4xf32> {{
    %e = tensor.empty() : tensor<2x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<2x8xf32>, tensor<8x4xf32>)
        outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %y : tensor<2x4xf32>
  }}
}}
"""
# w: 8*4*4 = 128 B, x: 2*8*4 = 64 B; the matmul holds %y and %e (32 B each), reading the
# arguments; a random draw of w is 8*4 float64s = 256 B, of x 16 float64s = 128 B.

CALLED = f"""builtin.module attributes {{tp.chips = 2 : i64}} {{
  func.func @decode({ARGS}) -> tensor<2x4xf32> {{
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>
        : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %big = tensor.empty() : tensor<64x64xf32>
    %a = func.call @layer(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %b = func.call @layer(%a) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %e = tensor.empty() : tensor<2x4xf32>
    %y = linalg.matmul ins(%b, %w : tensor<2x8xf32>, tensor<8x4xf32>)
        outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %y : tensor<2x4xf32>
  }}
  func.func private @layer(%h: tensor<2x8xf32>) -> tensor<2x8xf32> {{
    %e = tensor.empty() : tensor<2x8xf32>
    %s = linalg.add ins(%h, %h : tensor<2x8xf32>, tensor<2x8xf32>)
        outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return %s : tensor<2x8xf32>
  }}
}}
"""
# %big (64*64*4 = 16384 B) is the heaviest; the shard's slice is w's own data; @layer is
# walked once however many calls run it, its argument being its call's operand.


def needs(text: str, **flags: bool) -> RunNeeds:
    return run_needs(parse_module(tp_context(), text, "<test>")[0], **flags)


@pytest.mark.parametrize(
    ("text", "flags", "want"),
    [
        (FLAT, {}, RunNeeds(192, 0, 64, 0)),
        (FLAT, {"storage": True}, RunNeeds(192, 192, 64, 0)),
        (FLAT, {"random_weights": True}, RunNeeds(192, 0, 64, 256)),
        (FLAT, {"random_inputs": True}, RunNeeds(192, 0, 64, 128)),
        (CALLED, {}, RunNeeds(192, 0, 16384, 0)),
    ],
)
def test_what_a_run_needs_is_the_stated_rule(text: str, flags: dict[str, bool], want: RunNeeds):
    assert needs(text, **flags) == want


def test_the_total_counts_the_larger_transient_once() -> None:
    assert RunNeeds(192, 0, 64, 256).total == 192 + 256
    assert RunNeeds(192, 192, 64, 0).total == 192 + 192 + 64


def test_the_heaviest_op_is_the_call_chain_s_largest(tmp_path: Path) -> None:
    """A callee's op counts: the matmul of the call below holds 2 * 64*64*4 B."""
    text = CALLED.replace(
        "    %e = tensor.empty() : tensor<2x8xf32>\n",
        "    %e = tensor.empty() : tensor<2x8xf32>\n"
        "    %q = tensor.empty() : tensor<128x64xf32>\n"
        "    %r = linalg.add ins(%q, %q : tensor<128x64xf32>, tensor<128x64xf32>) "
        "outs(%q : tensor<128x64xf32>) -> tensor<128x64xf32>\n",
    )
    assert needs(text).heaviest_op == 2 * 128 * 64 * 4


def run(main: Callable[[Sequence[str] | None], int], *args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mem") / "tiny.mlir"
    assert run(tp_gen.main, "qwen3", "--preset", "tiny", "--chips", "2", "-o", path)[0] == 0
    return path


def test_a_run_is_refused_when_it_needs_more_than_is_available(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = parse_module(tp_context(), tiny.read_text(), str(tiny))[0]
    need = run_needs(module, random_weights=True, random_inputs=True).total
    flags = ("--random-weights", "0", "--random-inputs", "1")
    monkeypatch.setattr(host_memory, "available_memory", lambda: (need - 1, "MemAvailable"))
    code, out, err = run(tp_run.main, tiny, *flags)
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"tp-run: error: running {tiny} needs at least {host_memory.bytes_text(need)} of "
        f"memory (arguments {host_memory.bytes_text(run_needs(module).arguments)}, the "
        f"largest random draw {host_memory.bytes_text(need - run_needs(module).arguments)}) "
        f"and {host_memory.bytes_text(need - 1)} is available (MemAvailable); --dry-run "
        "models it without running"
    )
    monkeypatch.setattr(host_memory, "available_memory", lambda: (need, "MemAvailable"))
    code, out, err = run(tp_run.main, tiny, *flags)
    assert code == 0 and out.startswith(f"ran {tiny}"), err


HUGE = ["qwen3", "--preset", "tiny", "--hidden", "1000000000000", "--unsharded"]


def test_a_program_too_large_for_any_host_is_one_line_and_dry_run_still_models_it(
    tmp_path: Path,
) -> None:
    """``tp-gen qwen3 --hidden 1000000000000`` run with random weights ended in
    ``internal error: MemoryError: Unable to allocate 7.28 TiB``."""
    program = tmp_path / "huge.mlir"
    assert run(tp_gen.main, *HUGE, "-o", program)[0] == 0
    proc = run_limited(
        [str(BIN / "tp-run"), str(program), "--random-weights", "0", "--random-inputs", "1"]
    )
    assert proc.returncode == 1
    last = proc.stderr.splitlines()[-1]
    assert re.fullmatch(
        rf"tp-run: error: running {re.escape(str(program))} needs at least [0-9.]+ TB of "
        r"memory \(arguments [0-9.]+ TB, the largest random draw [0-9.]+ TB\) and [0-9.]+ "
        r"[kMG]?B is available \((MemAvailable|cgroup memory\.max|ulimit -v)\); --dry-run "
        r"models it without running",
        last,
    ), proc.stderr
    assert "internal" not in proc.stderr
    proc = run_limited([str(BIN / "tp-run"), str(program), "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("modelled step on 1 x sn40l")


def test_the_address_space_limit_is_what_is_available_under_it(tmp_path: Path) -> None:
    """2.7 GB of weights, inputs and draws under a 2 GB address space: it ended in an
    internal MemoryError; the limit is read (``ulimit -v``) and named."""
    program = tmp_path / "g.mlir"
    args = ["qwen3", "--preset", "tiny", "--hidden", "16384", "--intermediate", "8192"]
    assert run(tp_gen.main, *args, "--unsharded", "-o", program)[0] == 0
    proc = run_limited(
        [str(BIN / "tp-run"), str(program), "--random-weights", "0", "--random-inputs", "1"]
    )
    assert proc.returncode == 1
    assert re.search(
        r"needs at least 2\.71 GB of memory .* is available \((ulimit -v|MemAvailable|cgroup "
        r"memory\.max)\); --dry-run",
        proc.stderr.splitlines()[-1],
    ), proc.stderr


def test_running_out_of_memory_anyway_is_one_line() -> None:
    """The check is a lower bound: a MemoryError past it is the host's limit, not a bug."""

    def body(argv: Sequence[str] | None) -> int:
        raise MemoryError("Unable to allocate 8.00 GiB for an array")

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert run_tool("tp-run", body, []) == 1
    assert err.getvalue() == (
        "tp-run: error: out of memory: Unable to allocate 8.00 GiB for an array\n"
    )
