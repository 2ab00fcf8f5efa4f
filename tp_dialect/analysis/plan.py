"""TpPlan: a tensor-parallel plan in Hugging Face's vocabulary, and how it cuts each weight.

A plan maps glob patterns over checkpoint module names to a style, as a model's
``base_model_tp_plan`` does (``"layers.*.self_attn.q_proj": "colwise"``). A pattern names a
module relative to the base model: it matches a weight port named ``<prefix.>module.param``
(``model.layers.0.self_attn.q_proj.weight`` matches ``layers.*.self_attn.q_proj``), each
``*`` standing for one dotted component. Styles:

- ``colwise``: the output features are cut in N equal runs, one per chip (the bias with them);
- ``rowwise``: the input features are cut (the product is a partial, summed by one
  all-reduce; the bias is not cut, so it is added once, after the sum);
- ``packed_colwise``: the output features are ``parts`` blocks packed side by side (GPT-2's
  ``c_attn`` holds q, k, v; a fused ``gate_up_proj`` two), each block cut in N: chip c's slice
  is ``parts`` ranges;
- ``replicate`` / ``replicated`` / ``replicated_with_grad_allreduce``: every chip reads the
  whole tensor (the spine).

An entry is a style string, or an object ``{"style": ..., "layout": "out_in" | "in_out",
"parts": k}``: ``layout`` says how the weight is stored — ``out_in`` (a Linear, the default)
or ``in_out`` (GPT-2's Conv1D) — so no axis is guessed from a name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tp_dialect.nesting import json_too_deep

STYLES = (
    "colwise",
    "rowwise",
    "packed_colwise",
    "replicate",
    "replicated",
    "replicated_with_grad_allreduce",
)
_REPLICATED = ("replicate", "replicated", "replicated_with_grad_allreduce")
LAYOUTS = ("out_in", "in_out")


class PlanError(ValueError):
    """A plan file that cannot be read or says something tp-split does not understand."""


@dataclass(frozen=True)
class Cut:
    """How one weight is cut: along ``axis``, chip c holding ``ranges[c]`` (runs of the
    axis, concatenated in order)."""

    axis: int
    ranges: tuple[tuple[tuple[int, int], ...], ...]


@dataclass(frozen=True)
class Entry:
    """One plan entry: a module pattern and how its parameters are cut."""

    pattern: str
    style: str
    layout: str = "out_in"
    parts: int = 1

    @property
    def replicated(self) -> bool:
        return self.style in _REPLICATED

    def describe(self) -> str:
        """The entry as a diagnostic names it: ``'pattern' (style)``, its layout when not
        ``out_in`` and its parts when packed (``'h.*.attn.c_attn' (packed_colwise, in_out,
        3 parts)``)."""
        how = [self.style]
        if self.layout != "out_in":
            how.append(self.layout)
        if self.style == "packed_colwise":
            how.append(f"{self.parts} parts")
        return f"'{self.pattern}' ({', '.join(how)})"

    def matches(self, name: str) -> bool:
        """Whether the parameter ``name`` (``<prefix.>module.param``) is this entry's."""
        module = name.split(".")[:-1]
        want = self.pattern.split(".")
        if len(module) < len(want):
            return False
        tail = module[len(module) - len(want) :]
        return all(w == "*" or w == m for w, m in zip(want, tail, strict=True))

    def cut(self, name: str, shape: tuple[int, ...], chips: int) -> Cut | str | None:
        """How ``name`` of ``shape`` is cut over ``chips`` chips: a Cut, None for the whole
        tensor on every chip, or why this entry cannot cut it."""
        if self.replicated:
            return None
        param = name.rsplit(".", 1)[-1]
        if len(shape) == 1:
            if self.style == "rowwise":
                return None  # a row-split projection's bias is added once, after the sum
            return _even(0, shape[0], chips, self.parts, name)
        if len(shape) != 2:
            return (
                f"plan entry '{self.pattern}' ({self.style}) matches '{name}' of rank "
                f"{len(shape)}: a {self.style} {param} has rank 2 (or 1 for a bias)"
            )
        out_axis, in_axis = (0, 1) if self.layout == "out_in" else (1, 0)
        if self.style == "rowwise":
            return _even(in_axis, shape[in_axis], chips, 1, name)
        return _even(out_axis, shape[out_axis], chips, self.parts, name)


def _even(axis: int, size: int, chips: int, parts: int, name: str) -> Cut | str:
    """``parts`` equal blocks of ``size``, each cut into ``chips`` equal runs."""
    if size % (parts * chips):
        what = f"{parts} packed blocks of " if parts > 1 else ""
        return (
            f"{chips} chips do not divide {what}axis {axis} of '{name}' ({size} elements): "
            "each chip must hold an equal run"
        )
    block = size // parts
    run = block // chips
    return Cut(
        axis, tuple(tuple((p * block + c * run, run) for p in range(parts)) for c in range(chips))
    )


@dataclass(frozen=True)
class TpPlan:
    """A whole plan: its entries in file order (the first matching entry wins)."""

    entries: tuple[Entry, ...]
    source: str

    def entry_for(self, name: str) -> Entry | None:
        """The entry that governs the parameter ``name``, if any."""
        for entry in self.entries:
            if entry.matches(name):
                return entry
        return None


def shipped_plans() -> list[str]:
    """The names of the plans installed with tp (``plan=qwen3`` and so on)."""
    folder = resources.files("tp_dialect") / "plans"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_plan(spec: str) -> TpPlan:
    """The plan ``spec`` names: a JSON file's path, or the name of a shipped plan."""
    path = Path(spec)
    if path.is_file():
        text, source = _read(path), str(path)
    elif spec in shipped_plans():
        text = (resources.files("tp_dialect") / "plans" / f"{spec}.json").read_text()
        source = f"plan '{spec}'"
    else:
        raise PlanError(f"no plan file '{spec}' (shipped plans: {', '.join(shipped_plans())})")
    return parse_plan(text, source)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PlanError(f"cannot read plan '{path}': {err}") from None


def parse_plan(text: str, source: str = "<plan>") -> TpPlan:
    """The plan in ``text``: a JSON object of pattern -> style (or entry object); a model
    config's ``{"base_model_tp_plan": {...}}`` is read through."""
    deep = json_too_deep(text)
    if deep is not None:
        raise PlanError(f"{source}: {deep}: a plan is an object of pattern -> style")

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        # JSON keeps the last of two equal keys; a plan's first matching entry wins: two
        # entries for one pattern are refused rather than one silently dropped.
        seen: dict[str, object] = {}
        for key, value in pairs:
            if key in seen:
                raise PlanError(f"{source}: '{key}' is given twice: state each pattern once")
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except (json.JSONDecodeError, RecursionError) as err:
        raise PlanError(f"{source}: not JSON: {err}") from None
    if isinstance(data, dict) and isinstance(data.get("base_model_tp_plan"), dict):
        data = data["base_model_tp_plan"]
    if not isinstance(data, dict) or not data:
        raise PlanError(f"{source}: a plan is a non-empty JSON object of pattern -> style")
    return TpPlan(tuple(_entry(k, v, source) for k, v in data.items()), source)


def _entry(pattern: str, value: object, source: str) -> Entry:
    where = f"{source}: entry '{pattern}'"
    if not pattern or any(not part for part in pattern.split(".")):
        raise PlanError(f"{where}: a pattern is dotted names or '*', none empty")
    if isinstance(value, str):
        value = {"style": value}
    if not isinstance(value, dict):
        raise PlanError(f"{where}: a style string or an object with 'style'")
    unknown = sorted(set(value) - {"style", "layout", "parts"})
    if unknown:
        raise PlanError(f"{where}: unknown key '{unknown[0]}' (keys: style, layout, parts)")
    style, layout = value.get("style"), value.get("layout", "out_in")
    parts = value.get("parts", 2 if style == "packed_colwise" else 1)
    if style not in STYLES:
        raise PlanError(f"{where}: style {json.dumps(style)} is not one of {', '.join(STYLES)}")
    if layout not in LAYOUTS:
        raise PlanError(f"{where}: layout {json.dumps(layout)} is not one of {', '.join(LAYOUTS)}")
    if not isinstance(parts, int) or isinstance(parts, bool) or not 1 <= parts <= 64:
        raise PlanError(f"{where}: parts must be a whole number from 1 to 64")
    if parts != 1 and style != "packed_colwise":
        raise PlanError(f"{where}: only packed_colwise takes 'parts'")
    return Entry(pattern, str(style), str(layout), parts)
