"""Imports flow one way, and no modules (nor folders) import each other.

Every module of the installed ``tp_dialect`` namespace (``passes/`` and ``tools/`` mapped in as
``pyproject.toml`` maps them) is read with `ast`, every import counted wherever it is written
(inside a function and under ``if TYPE_CHECKING:`` too), and each must go to a module of the
same or a lower layer; the import graph must have no cycle. The layers, lowest first:

====  =====================  ==========================================================
0     IR                     ``tp_dialect/*.py``: attributes, ops, ports, diagnostics
1     analyses               ``tp_dialect/analysis``
2     passes                 ``passes/`` (``tp_dialect.passes``)
3     generators             ``tp_dialect/frontend``: write IR, shard it with tp-split
4     runtime                ``tp_dialect/runtime``: run IR (the calibration generates)
5     serving                ``tp_dialect/serving``: a model directory on a session
6     tools                  ``tools/`` (``tp_dialect.tools``) and the package's
                             ``__init__`` (it re-exports serving's ``load``)
====  =====================  ==========================================================
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A subpackage of tp_dialect and its layer; a top-level module file of tp_dialect is IR (0).
LAYERS = {
    "tp_dialect.analysis": 1,
    "tp_dialect.passes": 2,
    "tp_dialect.frontend": 3,
    "tp_dialect.runtime": 4,
    "tp_dialect.serving": 5,
    "tp_dialect.tools": 6,
}
FACADE = "tp_dialect"  # the package's __init__: `tp_dialect.load` is serving's, so it is top
LAYER_NAMES = ["IR", "analyses", "passes", "generators", "runtime", "serving", "tools"]

# Imports kept against the layering, each with its reason. Empty: keep it so.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def source_roots() -> dict[str, Path]:
    """Each installed package whose folder is given in ``pyproject.toml`` (``passes/`` is
    ``tp_dialect.passes``), and ``tp_dialect`` itself."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dirs = pyproject["tool"]["setuptools"]["package-dir"]
    return {package: ROOT / folder for package, folder in dirs.items()}


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the installed namespace, by its dotted name."""
    roots = source_roots()
    found: dict[str, Path] = {}
    for package, folder in roots.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            found[name] = path
    return found


def layer(module: str) -> int:
    """The layer of ``module`` (see the module docstring); an unknown subpackage fails."""
    if module == FACADE:
        return max(LAYERS.values())
    for prefix, level in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return level
    parts = module.split(".")
    assert len(parts) == 2 and parts[0] == "tp_dialect", (
        f"{module}: a subpackage of tp_dialect without a layer: give it one in LAYERS"
    )
    return 0


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """Every ``tp_dialect`` module ``name`` (at ``path``) imports, with the line: the longest
    known module each import names (``from a.b import c`` is ``a.b.c`` when that is one)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join([*here, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("tp_dialect") and target != name:
                yield target, node.lineno


@functools.cache
def graph() -> dict[str, dict[str, int]]:
    """Each module's imports of other modules of the namespace, with a line of each."""
    known = modules()
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges[name] = {}
        for target, line in imported(name, path, known):
            edges[name].setdefault(target, line)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import graph's cycles: its strongly connected components of more than one module
    (Tarjan's, iterative: the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, rest = work[-1]
            w = next(rest, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer() -> None:
    known = modules()
    assert {"tp_dialect.signature", "tp_dialect.passes.split", "tp_dialect.tools.tp_opt"} <= set(
        known
    )
    for name in known:
        layer(name)


def test_imports_go_to_the_same_or_a_lower_layer() -> None:
    known = modules()
    upward = []
    for name, targets in graph().items():
        for target, line in targets.items():
            if layer(target) > layer(name) and (name, target) not in EXCEPTIONS:
                where = known[name].relative_to(ROOT)
                upward.append(
                    f"{where}:{line}: {name} ({LAYER_NAMES[layer(name)]}) imports {target} "
                    f"({LAYER_NAMES[layer(target)]})"
                )
    assert not upward, "\n".join(upward)


def test_no_modules_import_each_other() -> None:
    found = cycles(graph())
    assert not found, "\n".join("import cycle: " + ", ".join(c) for c in found)


def folder(module: str) -> str:
    """The folder ``module`` sits in, as a package name: a package's own ``__init__`` and its
    module files are that package (``tp_dialect.analysis.certify.obligation`` ->
    ``tp_dialect.analysis.certify``); the package's facade (`FACADE`, the top layer) is
    apart from the IR modules beside it."""
    if module == FACADE:
        return f"{FACADE} (facade)"
    path = modules()[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def test_no_folders_import_each_other() -> None:
    """Folders too import one way (``analysis/calls`` builds on ``analysis/``'s own modules,
    ``certify`` and ``schedule`` on ``calls``, never back): a picture of the folders' imports
    has arrows running one way only."""
    edges: dict[str, dict[str, int]] = {}
    for name, targets in graph().items():
        for target in targets:
            a, b = folder(name), folder(target)
            if a != b:
                edges.setdefault(a, {})[b] = 1
                edges.setdefault(b, {})
    found = cycles(edges)
    assert not found, "\n".join("folders importing each other: " + ", ".join(c) for c in found)


def test_exceptions_are_still_imports() -> None:
    """A named exception that no longer happens is dropped from the list."""
    edges = graph()
    for (name, target), why in EXCEPTIONS.items():
        assert why and target in edges.get(name, {}), (name, target)


def test_the_checker_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    """What the checks above rest on: an import in a function body, one under
    ``TYPE_CHECKING`` and a relative one are each found, as the module they name."""
    path = tmp_path / "mod.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tp_dialect.tools import common\n"
        "def f():\n    from tp_dialect.passes.split import TpSplit\n"
        "from ..ops import ShardOp\n"
        "import tp_dialect.analysis.values as v\n"
    )
    known = modules()
    found = dict(imported("tp_dialect.runtime.mod", path, known))
    assert found == {
        "tp_dialect.tools.common": 3,
        "tp_dialect.passes.split": 5,
        "tp_dialect.ops": 6,
        "tp_dialect.analysis.values": 7,
    }
    edges = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert cycles(edges) == [["a", "b", "c"]]
