"""Regenerate every lit_tests/<pass>/Inputs/*.mlir from the command named in its first line.

A pass's lit tests feed that pass alone; what the earlier passes make of a test's source is a
checked-in input whose first line, `// Generated: tp-opt <source> <options>`, names the command
(run in the Inputs folder) that produced it. `python lit_tests/regenerate_inputs.py` rewrites
them all; `--check` rewrites nothing and exits 1 naming each input that differs from what its
command prints today (tests/test_lit_inputs.py runs the same check).
"""

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

HEADER = "// Generated: "
LIT_TESTS = Path(__file__).resolve().parent


def generated_inputs() -> list[Path]:
    """Every Inputs file under lit_tests that opens with a `// Generated:` command, sorted."""
    found = LIT_TESTS.glob("*/Inputs/*.mlir")
    return sorted(p for p in found if p.read_text().startswith(HEADER))


def regenerate(path: Path) -> str:
    """The text `path` should hold: its header line, then what the header's command prints."""
    header = path.read_text().splitlines()[0]
    command = shlex.split(header[len(HEADER) :])
    if not command or command[0] != "tp-opt":
        raise ValueError(f"{path}: the generating command must be tp-opt, not {command[:1]}")
    # The tools beside the running Python (the project venv), as lit.cfg.py runs them.
    tool = str(Path(sys.executable).parent / "tp-opt")
    done = subprocess.run(
        [tool, *command[1:]], cwd=path.parent, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{path}: `{header[len(HEADER) :]}` failed:\n{done.stderr}")
    return f"{header}\n{done.stdout}"


def stale_inputs() -> list[Path]:
    """The Inputs files whose text differs from what their command prints today."""
    return [p for p in generated_inputs() if p.read_text() != regenerate(p)]


def main() -> int:
    """Rewrite every generated input (or, with --check, name the stale ones and exit 1)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale inputs, write none")
    args = parser.parse_args()
    if args.check:
        stale = stale_inputs()
        for path in stale:
            print(f"stale: {path.relative_to(LIT_TESTS)}")
        return 1 if stale else 0
    for path in generated_inputs():
        path.write_text(regenerate(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
