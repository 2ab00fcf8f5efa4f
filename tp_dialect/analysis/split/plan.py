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
  is ``parts`` ranges; ``parts`` is a count of equal blocks, or a list of the blocks' relative
  sizes (a fused ``qkv_proj`` with grouped KV heads: ``[heads, kv_heads, kv_heads]``, as vLLM's
  merged linears take their output sizes);
- ``colwise_gather_output`` / ``colwise_rep`` (an LM head): cut as ``colwise``; the output
  is gathered where it is needed whole (a returned value by ``tp.unshard``, a greedy argmax
  by ``tp.maxloc``);
- ``embedding_rowwise``: an embedding table ``[rows, features]`` cut by rows; each chip looks
  up the ids it holds, the chips' lookups summed by one all-reduce;
- ``replicate`` / ``replicated`` / ``replicated_with_grad_allreduce``: every chip reads the
  whole tensor (the spine).

``colwise``, ``rowwise`` and ``packed_colwise`` cut N equal runs (N must divide the axis, or each
packed block, as
vLLM's parallel linears require). The vocab styles (``embedding_rowwise``,
``colwise_gather_output``, ``colwise_rep``) cut a vocabulary, whose size a tokenizer fixes:
chip c holds ``ceil(V/N)`` rows, the last chip the rest (torch's ``Shard`` and transformers'
split), so no padded row is loaded and no padded logit masked; N > V, or an N that would
leave a chip no row, is refused.

An entry is a style string, or an object ``{"style": ..., "layout": "out_in" | "in_out",
"parts": k | [w1, w2, ...], "optional": true}``: ``layout`` says how a projection's weight
is stored — ``out_in`` (a Linear, the default) or ``in_out`` (GPT-2's Conv1D) — so no axis
is guessed from a name; ``optional`` lets the entry match no argument (the LM head of a model
whose head is its tied embedding; Qwen3's q/k norms in the plan every Llama-family model
shares).

`hf_plan` is the plan transformers builds for a ``*ForCausalLM`` of a ``model_type``: the
config's ``base_model_tp_plan``, the class's ``_tp_plan`` (``lm_head``) and the embedding,
shipped as data (``plans/llama.json``, ``plans/gpt2_lm.json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from tp_dialect.errors import TpError
from tp_dialect.jsonfile import parse_json, read_json_text

STYLES = (
    "colwise",
    "rowwise",
    "packed_colwise",
    "colwise_gather_output",
    "colwise_rep",
    "embedding_rowwise",
    "replicate",
    "replicated",
    "replicated_with_grad_allreduce",
)
_REPLICATED = ("replicate", "replicated", "replicated_with_grad_allreduce")
_HEAD = ("colwise_gather_output", "colwise_rep")  # colwise, cut unevenly, output gathered
_UNEVEN = (*_HEAD, "embedding_rowwise")  # the styles that cut a vocabulary
LAYOUTS = ("out_in", "in_out")

# transformers' model_type -> the shipped plan of its *ForCausalLM (`hf_plan`).
HF_PLANS = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "llama",
    "qwen3": "llama",
    "gpt2": "gpt2_lm",
}


class PlanError(ValueError, TpError):
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
    parts: int | tuple[int, ...] = 1  # equal blocks, or the blocks' relative sizes
    optional: bool = False

    @property
    def blocks(self) -> tuple[int, ...]:
        """The packed blocks' relative sizes (``parts`` equal blocks: ``parts`` ones)."""
        return (1,) * self.parts if isinstance(self.parts, int) else self.parts

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
            how.append(_parts_text(self.parts))
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
        if self.style == "embedding_rowwise":
            if len(shape) != 2:
                return (
                    f"plan entry '{self.pattern}' (embedding_rowwise) matches '{name}' of rank "
                    f"{len(shape)}: an embedding table has rank 2 ([rows, features])"
                )
            return _ceil(0, shape[0], chips, name)
        cut = _ceil if self.style in _UNEVEN else _even
        if len(shape) == 1:
            if self.style == "rowwise":
                return None  # a row-split projection's bias is added once, after the sum
            return cut(0, shape[0], chips, name, self.blocks)
        if len(shape) != 2:
            return (
                f"plan entry '{self.pattern}' ({self.style}) matches '{name}' of rank "
                f"{len(shape)}: a {self.style} {param} has rank 2 (or 1 for a bias)"
            )
        out_axis, in_axis = (0, 1) if self.layout == "out_in" else (1, 0)
        if self.style == "rowwise":
            return _even(in_axis, shape[in_axis], chips, name)
        return cut(out_axis, shape[out_axis], chips, name, self.blocks)


def _parts_text(parts: int | tuple[int, ...]) -> str:
    """How a diagnostic names packed blocks: ``3 parts``, or ``parts 16:8:8``."""
    return f"{parts} parts" if isinstance(parts, int) else "parts " + ":".join(map(str, parts))


def even_cut(axis: int, size: int, chips: int, name: str) -> Cut | str:
    """``name``'s axis ``axis`` (``size`` long) in ``chips`` equal runs, or why not."""
    return _even(axis, size, chips, name)


def _even(axis: int, size: int, chips: int, name: str, blocks: tuple[int, ...] = (1,)) -> Cut | str:
    """``size`` as blocks of the relative sizes ``blocks`` side by side, each block cut into
    ``chips`` equal runs (chip c's slice: its run of every block, in order)."""
    unit, rest = divmod(size, sum(blocks))
    lengths = [w * unit for w in blocks]
    if rest or any(n % chips for n in lengths):
        if len(set(blocks)) == 1:
            what = f"{len(blocks)} packed blocks of " if len(blocks) > 1 else ""
        else:
            what = f"the packed blocks {':'.join(map(str, blocks))} of "
        return (
            f"{chips} chips do not divide {what}axis {axis} of '{name}' ({size} elements): "
            "each chip must hold an equal run"
        )
    starts = [sum(lengths[:p]) for p in range(len(lengths))]
    return Cut(
        axis,
        tuple(
            tuple((s + c * (n // chips), n // chips) for s, n in zip(starts, lengths, strict=True))
            for c in range(chips)
        ),
    )


def _ceil(axis: int, size: int, chips: int, name: str, blocks: tuple[int, ...] = (1,)) -> Cut | str:
    """``size`` cut into one run per chip, chip c holding ``ceil(size/chips)`` elements and
    the last chip the rest; why not, when ``chips`` exceeds ``size`` or leaves a chip none."""
    assert blocks == (1,)  # only packed_colwise packs, and it cuts evenly
    if chips > size:
        return (
            f"{chips} chips exceed the {size} rows of axis {axis} of '{name}': every chip "
            "must hold at least one"
        )
    run = -(-size // chips)
    last = size - (chips - 1) * run
    if last <= 0:
        empty = next(c for c in range(chips) if c * run >= size)
        return (
            f"{chips} chips over the {size} rows of axis {axis} of '{name}' leave chip {empty} "
            f"none: each holds ceil({size}/{chips}) = {run}, the last the rest"
        )
    return Cut(axis, tuple(((c * run, min(run, size - c * run)),) for c in range(chips)))


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


def hf_plan(model_type: str) -> TpPlan:
    """The plan transformers builds for the ``*ForCausalLM`` of ``model_type`` (its config's
    ``base_model_tp_plan``, the class's ``_tp_plan`` and the embedding), as shipped."""
    if model_type not in HF_PLANS:
        raise PlanError(
            f"no Hugging Face plan for model_type '{model_type}' (supported: "
            f"{', '.join(sorted(HF_PLANS))})"
        )
    return load_plan(HF_PLANS[model_type])


def hf_plan_for(names: Iterable[str]) -> TpPlan:
    """``plan=hf``: the Hugging Face plan of the family whose embedding is among ``names``
    (a program's port names: ``model.embed_tokens.weight`` or ``transformer.wte.weight``)."""
    names = list(names)
    for family in sorted(set(HF_PLANS.values())):
        plan = load_plan(family)
        embeddings = [e for e in plan.entries if e.style == "embedding_rowwise"]
        if any(e.matches(n) for e in embeddings for n in names):
            # As transformers applies it: an entry naming a module the model lacks (a
            # projection of a part the program leaves out) is unused, not an error.
            entries = tuple(
                e if e.style == "embedding_rowwise" else replace(e, optional=True)
                for e in plan.entries
            )
            return TpPlan(entries, f"plan 'hf' ({family})")
    wanted = sorted(
        {
            f"{e.pattern}.weight"
            for family in set(HF_PLANS.values())
            for e in load_plan(family).entries
            if e.style == "embedding_rowwise"
        }
    )
    raise PlanError(
        "plan=hf: the program has no Hugging Face embedding port (one of "
        f"{', '.join(wanted)}): give a plan file or a shipped plan's name"
    )


def shipped_plans() -> list[str]:
    """The names of the plans installed with tp (``plan=qwen3`` and so on)."""
    folder = resources.files("tp_dialect") / "plans"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def shipped_plan_text(name: str) -> str:
    """The JSON text of the shipped plan ``name`` (one of `shipped_plans`)."""
    return (resources.files("tp_dialect") / "plans" / f"{name}.json").read_text()


def load_plan(spec: str) -> TpPlan:
    """The plan ``spec`` names: a JSON file's path (read within `MAX_JSON_BYTES`), or the
    name of a shipped plan."""
    path = Path(spec)
    if path.exists() and not path.is_dir():
        text, source = read_json_text(spec, "plan", PlanError), str(path)
    elif spec in shipped_plans():
        text, source = shipped_plan_text(spec), f"plan '{spec}'"
    elif path.is_dir():
        raise PlanError(f"cannot read plan '{spec}': a directory; give a JSON file")
    else:
        raise PlanError(f"no plan file '{spec}' (shipped plans: {', '.join(shipped_plans())})")
    return parse_plan(text, source)


def parse_plan(text: str, source: str = "<plan>") -> TpPlan:
    """The plan in ``text``: a JSON object of pattern -> style (or entry object); a model
    config's ``{"base_model_tp_plan": {...}}`` is read through. A pattern stated twice is
    refused (a plan's first matching entry wins; JSON would keep the last)."""
    data = parse_json(text, source, "a plan is an object of pattern -> style", "pattern", PlanError)
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
    unknown = sorted(set(value) - {"style", "layout", "parts", "optional"})
    if unknown:
        raise PlanError(
            f"{where}: unknown key '{unknown[0]}' (keys: style, layout, parts, optional)"
        )
    style, layout = value.get("style"), value.get("layout", "out_in")
    parts = value.get("parts", 2 if style == "packed_colwise" else 1)
    optional = value.get("optional", False)
    if style not in STYLES:
        raise PlanError(f"{where}: style {json.dumps(style)} is not one of {', '.join(STYLES)}")
    if layout not in LAYOUTS:
        raise PlanError(f"{where}: layout {json.dumps(layout)} is not one of {', '.join(LAYOUTS)}")
    if "layout" in value and style == "embedding_rowwise":
        raise PlanError(f"{where}: embedding_rowwise takes no 'layout' (a table is [rows, cols])")
    parts = _parts(parts, where)
    if parts != 1 and style != "packed_colwise":
        raise PlanError(f"{where}: only packed_colwise takes 'parts'")
    if not isinstance(optional, bool):
        raise PlanError(f"{where}: optional must be true or false")
    return Entry(pattern, str(style), str(layout), parts, optional)


def _whole(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _parts(parts: object, where: str) -> int | tuple[int, ...]:
    """An entry's ``parts``: a count from 1 to 64, or a list of 1 to 64 relative sizes (each
    a whole number from 1 to 2**63 - 1, as every size in tp is an i64)."""
    if _whole(parts, 1, 64):
        return parts  # type: ignore[return-value]
    if (
        isinstance(parts, list)
        and 1 <= len(parts) <= 64
        and all(_whole(w, 1, 2**63 - 1) for w in parts)
    ):
        return tuple(parts)
    raise PlanError(
        f"{where}: parts must be a whole number from 1 to 64, or a list of 1 to 64 relative "
        "block sizes (whole numbers from 1 to 2**63 - 1)"
    )
