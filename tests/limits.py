"""Running a tool in a child process with bounded memory and time: input that would make it
read or allocate without end fails the test instead of the machine."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
"""Where the venv's tools (tp-opt, tp-run, tp-gen) are."""


def run_limited(
    args: list[str],
    stdin: object = subprocess.DEVNULL,
    timeout: float = 60,
    address_space: int = 2 << 30,
) -> subprocess.CompletedProcess[str]:
    """A tool in a child with at most ``address_space`` bytes of address space (2 GB) and
    ``timeout`` seconds."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run(
        args,
        stdin=stdin,  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
    )
