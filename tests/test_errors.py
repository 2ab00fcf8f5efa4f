"""One error base: every public exception class tp defines derives from `TpError`, keeping
the base that says what kind of error it is (``except ValueError`` callers keep working)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest
from xdsl.utils.exceptions import PassFailedException

import tp_dialect
from tp_dialect.errors import TpError


def _modules() -> list[ModuleType]:
    """Every module of the installed package: IR, analyses, passes, runtime and tools (the
    last two are mapped into ``tp_dialect`` from their own folders)."""
    names = {m.name for m in pkgutil.walk_packages(tp_dialect.__path__, "tp_dialect.")}
    for sub in ("tp_dialect.passes", "tp_dialect.tools"):
        package = importlib.import_module(sub)
        names |= {m.name for m in pkgutil.walk_packages(package.__path__, f"{sub}.")}
    return [importlib.import_module(name) for name in sorted(names)]


def _public_exceptions() -> dict[str, type[BaseException]]:
    """Each public exception class, by ``module.Class``, in the module defining it."""
    return {
        f"{module.__name__}.{name}": obj
        for module in _modules()
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == module.__name__
        and not name.startswith("_")
    }


def test_every_module_is_walked() -> None:
    names = {m.__name__ for m in _modules()}
    for known in ("tp_dialect.shims", "tp_dialect.passes.split", "tp_dialect.tools.tp_run"):
        assert known in names


def test_every_public_exception_derives_from_tp_error() -> None:
    """Invariant: every public exception class defined in tp derives from `TpError`."""
    found = _public_exceptions()
    assert len(found) >= 20, sorted(found)  # TpError and the 19 the tools report, at least
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, TpError))
    assert outside == []


@pytest.mark.parametrize(
    "name,kind",
    [
        ("tp_dialect.signature.BindError", ValueError),
        ("tp_dialect.frontend.blocks.GenError", ValueError),
        ("tp_dialect.machine.MachineError", ValueError),
        ("tp_dialect.analysis.split.plan.PlanError", ValueError),
        ("tp_dialect.serving.model.ServingError", ValueError),
        ("tp_dialect.runtime.files.OutputError", OSError),
        ("tp_dialect.runtime.calibrate.CalibrationError", RuntimeError),
        ("tp_dialect.diagnostics.TpDiagnostic", PassFailedException),
        ("tp_dialect.runtime.numpy_impls.RunError", PassFailedException),
        ("tp_dialect.tools.source.ProgramError", TpError),
    ],
)
def test_each_keeps_its_kind(name: str, kind: type[BaseException]) -> None:
    """Invariant: an error keeps its other base, and its message is what it was given."""
    cls = _public_exceptions()[name]
    assert issubclass(cls, kind) and issubclass(cls, TpError)
    if issubclass(cls, PassFailedException):
        err: BaseException = cls(None, "bad op")  # type: ignore[call-arg]
    else:
        err = cls("bad value")
    assert str(err) in ("bad op", "bad value")


def test_an_os_error_reads_as_one() -> None:
    """Invariant: OutputError still formats and matches as the OSError it is."""
    from tp_dialect.runtime.files import OutputError

    err = OutputError("cannot write out.mlir: a directory")
    assert str(err) == "cannot write out.mlir: a directory"
    with pytest.raises(OSError):
        raise err
