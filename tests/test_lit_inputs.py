"""Every generated lit input (lit_tests/<pass>/Inputs/*.mlir) is what its `// Generated:`
command prints today: a pass's lit tests feed that pass alone, so a change upstream shows here,
as a stale input to regenerate (`python lit_tests/regenerate_inputs.py`), not as a broken
downstream test."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

LIT_TESTS = Path(__file__).resolve().parent.parent / "lit_tests"


def _script() -> ModuleType:
    """lit_tests/regenerate_inputs.py, loaded from its path (lit_tests is no package)."""
    spec = importlib.util.spec_from_file_location(
        "regenerate_inputs", LIT_TESTS / "regenerate_inputs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REGENERATE = _script()
INPUTS = REGENERATE.generated_inputs()


def test_the_pass_tests_have_generated_inputs() -> None:
    # The glob finding nothing would make every check below pass vacuously.
    assert len(INPUTS) >= 20


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(LIT_TESTS)))
def test_input_is_what_its_command_prints(path: Path) -> None:
    assert path.read_text() == REGENERATE.regenerate(path), (
        f"{path} is stale: run `python lit_tests/regenerate_inputs.py` and review the diff"
    )


def test_a_hand_edited_input_is_stale(tmp_path: Path) -> None:
    source = LIT_TESTS / "tp-transfers" / "transfers.mlir"
    generated = LIT_TESTS / "tp-transfers" / "Inputs" / "transfers.mlir"
    (tmp_path / "Inputs").mkdir()
    shutil.copy(source, tmp_path / "transfers.mlir")
    copy = tmp_path / "Inputs" / "transfers.mlir"
    copy.write_text(generated.read_text())
    assert copy.read_text() == REGENERATE.regenerate(copy)
    copy.write_text(generated.read_text().replace("on [1]", "on [2]", 1))
    assert copy.read_text() != REGENERATE.regenerate(copy)
