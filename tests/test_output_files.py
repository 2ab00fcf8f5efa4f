"""Every tool's output paths: a regular file is replaced whole, a device, FIFO or symlink is not.

Renaming a regular file over ``-o /dev/null`` (run as root) would destroy ``/dev/null`` for the
whole machine; these tests use a device node and a FIFO made in a temporary folder, never the
real one.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import tool

from tp_dialect.runtime.files import check_output, write_whole

BIN = Path(sys.executable).parent
GEN = ["qwen3", "--preset", "tiny", "--layers", "1", "--chips", "2"]


def device(tmp_path: Path) -> Path:
    """A character device standing in for /dev/null: a node made in ``tmp_path`` (as root),
    else a symlink to /dev/null (harmless then: only root could replace /dev/null)."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        node.symlink_to("/dev/null")
    assert stat.S_ISCHR(os.stat(node).st_mode)
    return node


class FifoReader:
    """A FIFO in ``tmp_path`` drained by a thread, so a writer opening it does not block."""

    def __init__(self, tmp_path: Path, name: str = "fifo") -> None:
        self.path = tmp_path / name
        os.mkfifo(self.path)
        self.data = b""
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with open(self.path, "rb") as f:
            self.data = f.read()

    def join(self) -> bytes:
        self.thread.join(timeout=120)
        assert not self.thread.is_alive()
        return self.data


def test_write_whole_writes_through_a_device_and_a_fifo(tmp_path: Path) -> None:
    node = device(tmp_path)
    write_whole(node, "discarded\n")
    assert stat.S_ISCHR(os.stat(node).st_mode)
    fifo = FifoReader(tmp_path)
    write_whole(fifo.path, b"through the pipe")
    assert fifo.join() == b"through the pipe"
    assert stat.S_ISFIFO(os.lstat(fifo.path).st_mode)


def test_write_whole_follows_a_symlink_and_keeps_it(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_whole(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "made.txt")
    write_whole(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "made.txt").read_text() == "made"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tp-")] == []


def test_check_output_refuses_directories_and_unwritable_specials(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="is a directory"):
        check_output(tmp_path)
    with pytest.raises(OSError, match="no directory"):
        check_output(tmp_path / "missing" / "x")
    check_output(device(tmp_path))  # a device in a folder: its own permission counts


Case = Callable[[Path, Path], list[str | Path]]


def _run_inputs(tmp_path: Path) -> Path:
    program = tmp_path / "layer.mlir"
    assert tool("tp-gen", *GEN, "-o", program).returncode == 0
    return program


@pytest.mark.parametrize(
    ("name", "case"),
    [
        ("tp-gen", lambda tmp, out: [*GEN, "-o", out]),
        ("tp-gen", lambda tmp, out: [*GEN, "-o", tmp / "layer.mlir", "--manifest", out]),
        ("tp-opt", lambda tmp, out: [_run_inputs(tmp), "--tp-verify", "-o", out]),
        (
            "tp-run",
            lambda tmp, out: [
                _run_inputs(tmp),
                "--random-weights",
                "0",
                "--random-inputs",
                "1",
                "--outputs",
                out,
            ],
        ),
        (
            "tp-run",
            lambda tmp, out: [_run_inputs(tmp), "--dry-run", "--machine", "sn40l", "--trace", out],
        ),
    ],
    ids=["tp-gen -o", "tp-gen --manifest", "tp-opt -o", "tp-run --outputs", "tp-run --trace"],
)
def test_tools_never_replace_a_device_or_fifo(name: str, case: Case, tmp_path: Path) -> None:
    node = device(tmp_path)
    proc = tool(name, *case(tmp_path, node))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat(node).st_mode)
    fifo = FifoReader(tmp_path)
    proc = tool(name, *case(tmp_path, fifo.path))
    assert proc.returncode == 0, proc.stderr
    assert len(fifo.join()) > 0
    assert stat.S_ISFIFO(os.lstat(fifo.path).st_mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tp-")] == []
