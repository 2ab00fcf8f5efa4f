"""The lit suite's fork server (lit_tests/forkserver.py) runs a command as the installed
script does: the same output, errors and exit code, on the caller's streams, working
directory and environment; and it ends with the run that started it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import BIN

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "megatron_mlp.mlir"
CHECKS = ROOT / "lit_tests" / "tp-relocate" / "relocate.mlir"


def _forkserver():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "forkserver", ROOT / "lit_tests" / "forkserver.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def clients() -> Iterator[Path]:
    forkserver = _forkserver()
    folder = forkserver.start(sys.executable)
    assert folder is not None
    yield Path(folder)
    server = forkserver._RUNNING.pop()
    server.stdin.close()
    assert server.wait(timeout=30) == 0
    assert not Path(folder).exists()  # the server took its socket and clients with it


CASES = [  # (command, stdin, exit code)
    pytest.param(["tp-opt", "megatron_mlp.mlir", "--tp-verify"], None, 0, id="opt-relative"),
    pytest.param(["tp-opt", "-", "--tp-relocate"], EXAMPLE.read_text(), 0, id="opt-stdin"),
    pytest.param(["tp-opt", "megatron_mlp.mlir", "--no-such-pass"], None, 1, id="opt-bad-flag"),
    pytest.param(["tp-opt", "-"], "func.func @f(", 1, id="opt-parse-error"),
    pytest.param(
        ["tp-gen", "qwen3", "--preset", "tiny", "--chips", "3"], None, 1, id="gen-refused"
    ),
    pytest.param(["filecheck", CHECKS], "nothing to match\n", 1, id="filecheck-fails"),
    pytest.param(["filecheck", EXAMPLE], "", 1, id="filecheck-empty-input"),
    pytest.param(["filecheck", "--version"], None, 0, id="filecheck-version"),
]


@pytest.mark.parametrize(("command", "stdin", "code"), CASES)
def test_a_command_run_by_the_server_is_the_installed_scripts_run(
    clients: Path, command: list[object], stdin: str | None, code: int
) -> None:
    name, *args = [str(part) for part in command]
    env = {**os.environ, "COLUMNS": "200"}

    def run(exe: Path) -> tuple[int, str, str]:
        proc = subprocess.run(
            [str(exe), *args],
            input=stdin or "",
            capture_output=True,
            text=True,
            cwd=EXAMPLE.parent,  # relative paths resolve against the caller's directory
            env=env,
            timeout=120,
        )
        return proc.returncode, proc.stdout, proc.stderr

    served = run(clients / name)
    assert served == run(BIN / name)
    assert served[0] == code
