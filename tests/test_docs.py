"""The documents name only what exists: every repository path, link (and its heading), pass,
tool, tp op or attribute and ``tp_dialect`` module that README.md and docs/*.md mention is
checked against the repository, and docs/design.md's code names too, so the manual and the
design cannot rot silently when code or text moves."""

from __future__ import annotations

import ast
import importlib
import re
import sys
import tomllib
from pathlib import Path

import pytest

from tp_dialect.dialect import TP
from tp_dialect.passes import TP_PASSES
from tp_dialect.reject import TpReject

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
CERTIFICATE = ROOT / "docs" / "certificate.md"
# The user's manual and every document it links to: README.md and docs/*.md.
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Where a path written without its folder may live: the manual names `analysis/timing/cost.py`
# for `tp_dialect/analysis/timing/cost.py`, and a bare `memory.py` beside the folder it sits in.
SOURCE_DIRS = ("tp_dialect", "passes", "tools", "tests", "lit_tests", "benchmarks", "fuzz", "docs")

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# A repository path: dotted/dashed components joined by '/', or a root file with an extension.
_PATH = re.compile(r"^[A-Za-z_][\w.*-]*(?:/[\w.*-]+)+/?$|^[\w-]+\.(?:py|mlir|json|md|toml)$")
_PASS = re.compile(r"(?<![\w.-])tp-[a-z]+(?:-[a-z]+)*(?![\w-])")
_TP_NAME = re.compile(r"(?<![\w.])tp\.([a-z_]+)\b")
_MODULE = re.compile(r"^tp_dialect(?:\.\w+)+$")
# A reason, a shim, a tool: lower-case words joined by dashes (`cannot-split`, `sn40l-int8`).
_KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+$")
# A code name: an identifier with a capital or an underscore (`Provenance`, `find_folds`).
_IDENT = re.compile(r"^(?=\w*[A-Z_])[A-Za-z_]\w*$")
# The seed documents' own names, which tp spells otherwise (the vocabulary table's first
# column): they name nothing in this repository, by design.
SEED_NAMES = {
    "TpSlice",
    "SliceAxis",
    "TpCollective",
    "TpManifest",
    "RelayStep",
    "allreduce_section",
}
# xDSL's names the document uses for what tp builds on.
XDSL_MODULES = ("xdsl.passes", "xdsl.pattern_rewriter", "xdsl.ir")


def _tools() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(pyproject["project"]["scripts"])


def _code_names() -> set[str]:
    """Every name the sources define (classes, functions, assignments) or quote as a string
    (``"tp.chips"``, a plan style), and what the xDSL modules tp builds on export."""
    names: set[str] = set()
    files = [p for d in ("tp_dialect", "passes", "tools") for p in (ROOT / d).rglob("*.py")]
    for node in (n for p in files for n in ast.walk(ast.parse(p.read_text()))):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    for module in XDSL_MODULES:
        names |= set(dir(importlib.import_module(module)))
    return names


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    """The anchors of a Markdown text's headings."""
    text = _FENCE.sub("", markdown)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _path_exists(span: str) -> bool:
    """Whether a path names a file or folder of the repository: from its root, from
    ``tp_dialect/``, or (a bare file name) anywhere in the source folders; a glob must match."""
    if span.startswith("build/"):  # what `make demo` and `make fuzz` write
        return True
    for base in (ROOT, ROOT / "tp_dialect"):
        if any(base.glob(span)) if "*" in span else (base / span).exists():
            return True
    if "/" not in span:
        return any(next((ROOT / d).rglob(span), None) for d in SOURCE_DIRS)
    return False


def _resolves(dotted: str) -> bool:
    """Whether ``tp_dialect.a.b`` is a module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def problems(text: str, doc_dir: Path, names: bool = True) -> list[str]:
    """Every reference of ``text`` (a document in ``doc_dir``) that names nothing real; with
    ``names``, code names and dashed names too (the design's vocabulary: the manual also quotes
    xDSL's, numpy's and Hugging Face's)."""
    found: list[str] = []
    prose = _FENCE.sub("", text)
    spans = _SPAN.findall(prose)
    for span in spans:
        if _PATH.match(span) and "<" not in span:  # `lit_tests/<pass>/` is a pattern
            if "*" in span and not _path_exists(span):
                found.append(f"path pattern `{span}` matches nothing")
            elif not _path_exists(span):
                found.append(f"path `{span}` does not exist")
        if _MODULE.match(span) and not _resolves(span):
            found.append(f"`{span}` is not a module or attribute of tp_dialect")
    defined = _code_names()
    if names:
        for span in sorted({s for s in spans if _IDENT.match(s)}):
            if span not in defined | SEED_NAMES:
                found.append(f"`{span}` is defined nowhere in the sources")
        reasons = {r.value for r in TpReject}
        for span in sorted({s for s in spans if _KEBAB.match(s) and not _PASS.match(s)}):
            installed = (Path(sys.executable).parent / span).exists()  # `xdsl-opt`
            if span not in reasons | defined and not installed:
                found.append(f"`{span}` is no reject reason, pass, tool or name in the sources")
    for target in _LINK.findall(prose):
        if re.match(r"^[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc_dir / path).resolve()
        if path and not file.exists():
            found.append(f"link target {target} does not exist")
            continue
        if anchor and (not path or file.suffix == ".md"):
            if anchor not in _anchors(file.read_text() if path else text):
                found.append(f"link {target}: no heading with anchor #{anchor}")
    known = set(TP_PASSES) | _tools()
    for name in sorted(set(_PASS.findall(_LINK.sub("]", text)))):  # not a link's `#tp-gen-…`
        if name not in known:
            found.append(f"{name} is neither a registered pass nor a tool")
    registered = {op.name for op in TP.operations} | {a.name for a in TP.attributes}
    code = " ".join(spans) + " ".join(m.group(0) for m in _FENCE.finditer(text))
    for short in sorted(set(_TP_NAME.findall(code))):
        name = f"tp.{short}"
        if name not in registered | defined:
            found.append(f"{name} is no tp op, attribute or attribute key")
    return found


def test_design_doc_names_only_what_exists() -> None:
    """Every path, link, pass, tool, tp name and code name of docs/design.md is real."""
    assert problems(DESIGN.read_text(), DESIGN.parent) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_manual_names_only_what_exists(document: Path) -> None:
    """Every path, link and heading it points to, pass, tool, tp name and tp_dialect module of
    README.md and of every docs/*.md is real, so text moved between them keeps its links."""
    assert problems(document.read_text(), document.parent, names=False) == []


def test_certificate_doc_lists_every_reject_reason() -> None:
    """docs/certificate.md lists every TpReject reason, the set being closed."""
    text = CERTIFICATE.read_text()
    listed = text[text.index("## TpReject reasons") :]
    assert [r.value for r in TpReject if f"`{r.value}`" not in listed] == []


def test_design_doc_keeps_its_sections() -> None:
    """The document keeps the sections a reader comes for, every pass, and the seed's gaps."""
    text = DESIGN.read_text()
    for heading in (
        "The idea",
        "Vocabulary",
        "The pipeline",
        "Three ways to run a program",
        "Soundness",
        "What of the seed tp does not do, and why",
        "What tp adds beyond the seed",
    ):
        assert re.search(rf"^## \d+\. {re.escape(heading)}", text, re.M), heading
    for name in TP_PASSES:
        assert f"`{name}`" in text, name
    for gap in ("hardware-site rewriting", "is not tiled", "A sum is never carried in int8"):
        assert gap in text, gap


def test_the_check_catches_what_has_rotted() -> None:
    """Each kind of stale reference is reported (so the check above can fail)."""
    stale = (
        "# Top\n"
        "See `passes/relocated.py`, `tp_dialect/analysis/*.rs`, `tp_dialect.analysis.nowhere`\n"
        "`analysis/nowhere.py`, `nowhere.mlir`,\n"
        "and `tp_dialect.analysis.certify.manifest.no_such_function`,\n"
        "`ChipProvenance`, `leaks-out`;\n"
        "run\n"
        "`tp-relocate-all` after\n"
        "`tp-verify`; the op `tp.scatter`; [rules](../README.md#no-such-heading),\n"
        "[gone](missing.md), [here](#nowhere).\n"
        "Fine: [up](#top), `passes/relocate.py`, `lit_tests/<pass>/`, `tp.chips`,\n"
        "`tp_dialect.analysis.certify.manifest.read_manifest`, [manual](../README.md), `tp-opt`,\n"
        "`Provenance`, `find_folds`, `TpSlice`, `ModulePass`, `fold`, `cannot-split`,\n"
        "`sn40l-int8`, `xdsl-opt`, `analysis/timing/cost.py`, `memory.py`, `build/demo/`.\n"
    )
    assert problems(stale, DESIGN.parent) == [
        "path `passes/relocated.py` does not exist",
        "path pattern `tp_dialect/analysis/*.rs` matches nothing",
        "`tp_dialect.analysis.nowhere` is not a module or attribute of tp_dialect",
        "path `analysis/nowhere.py` does not exist",
        "path `nowhere.mlir` does not exist",
        "`tp_dialect.analysis.certify.manifest.no_such_function` is not a module or attribute of "
        "tp_dialect",
        "`ChipProvenance` is defined nowhere in the sources",
        "`leaks-out` is no reject reason, pass, tool or name in the sources",
        "link ../README.md#no-such-heading: no heading with anchor #no-such-heading",
        "link target missing.md does not exist",
        "link #nowhere: no heading with anchor #nowhere",
        "tp-relocate-all is neither a registered pass nor a tool",
        "tp.scatter is no tp op, attribute or attribute key",
    ]
