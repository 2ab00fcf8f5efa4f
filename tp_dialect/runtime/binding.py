"""Which checkpoint tensor binds each argument of a program, every one checked before any loads.

**Names.** An argument binds the checkpoint tensor of its own name. Hugging Face names one
model's tensors two ways: a ``*ForCausalLM`` prefixes its base model's names with the base
model's attribute (`PREFIXES`: ``model.`` for the Llama family, ``transformer.`` for GPT-2),
and a base model saved alone lacks it. So when the exact name is absent, the name with its
known prefix stripped (``model.layers.0.…`` finds ``layers.0.…``) or, for a name carrying
none, with one added (``h.0.…`` finds ``transformer.h.0.…``) binds instead; a checkpoint
holding more than one of these forms is refused by name (which one is meant is not said).
An argument named by its SSA text also answers to its positional name (``arg3``), exactly.

**Whole models.** A program taking ``input_ids`` and giving ``next_ids`` (a whole-model
step) reads every tensor of its checkpoint: one it would leave unread (an untied
``lm_head.weight`` where the program's head reads the embedding, a layer beyond the
program's) is refused, except the buffers transformers itself ignores on load (`IGNORED`).

**Dtypes.** A tensor is taken in the dtype stored when its argument's dtype is that (a
weight port in bf16 reads a bf16 tensor as is); otherwise by the cast policy (`CASTS`):
the default, ``safe``, widens exactly (bf16 or f16 into an f32 port) and refuses a
narrowing, naming both dtypes.

**Every problem at once.** `check_arguments` looks at every argument (headers only: no
tensor's data is read) and raises one `BindError` listing what is missing, misshaped,
ambiguous, of a dtype refused or left unread — the first `SHOWN` said, the count of the
rest — so a checkpoint is fixed in one round, not one run per tensor. `check_programs` does
the same for the weights of several programs at once (a model's prefill and decode steps: a
tensor is unread when no program reads it).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tp_dialect.runtime.missing import instead
from tp_dialect.runtime.tensor_files import TensorSource
from tp_dialect.signature import BindError, Port, entry_function, ports

PREFIXES: tuple[str, ...] = ("model.", "transformer.")
"""The prefixes a Hugging Face ``*ForCausalLM`` puts before its base model's tensor names
(its ``base_model_prefix``): ``model.`` (Llama, Mistral, Qwen2, Qwen3), ``transformer.``
(GPT-2)."""

IGNORED: tuple[re.Pattern[str], ...] = (
    re.compile(r"\.attn\.(masked_)?bias$"),  # GPT-2's causal-mask buffers (h.0.attn.bias)
    re.compile(r"\.rotary_emb\.inv_freq$"),  # RoPE frequencies, recomputed from the config
)
"""Tensors an older checkpoint holds that are buffers, not weights: transformers ignores
them on load (``_keys_to_ignore_on_load_unexpected``), and so does a whole model here."""

WHOLE_MODEL = ("input_ids", "next_ids")
"""The input and the result that make a program a whole-model step (ISSUE 24 §1's ports)."""

HEAD = "lm_head.weight"
"""The untied LM head's tensor; a tied head reads the embedding instead."""

SHOWN = 3
"""Problems named in one error; the rest are counted."""

CASTS: tuple[str, ...] = ("no", "safe", "same_kind")
"""How a tensor whose dtype is not its port's is treated (numpy's casting rules): ``no``
refuses it; ``safe`` converts only where every value is kept exactly (bf16 or f16 to f32,
f32 to f64, a narrower integer to a wider one); ``same_kind`` converts within a kind too,
rounding (f64 to f32, f32 to bf16, int to float). An integer *input* converts to another
integer dtype whenever each of its values fits, whatever the rule; a float never becomes an
integer (a position of 3.7 is refused, not run as 3)."""


def name_forms(name: str) -> tuple[str, ...]:
    """The names a checkpoint may hold ``name``'s tensor under, exact first: ``name``, then
    ``name`` without its known prefix (`PREFIXES`), or with each one when it carries none."""
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return (name, name[len(prefix) :])
    return (name, *(prefix + name for prefix in PREFIXES))


def resolve(port: Port, names: Collection[str]) -> str | None:
    """The name under which ``names`` holds ``port``'s tensor (`name_forms`, then its
    positional alias), or None; BindError when it holds more than one form."""
    found = [form for form in name_forms(port.name) if form in names]
    if len(found) > 1:
        both = " and ".join(f"'{f}'" for f in found)
        raise BindError(
            f"checkpoint holds both {both}, each a name of argument '{port.name}': keep one"
        )
    if found:
        return found[0]
    return port.alias if port.alias is not None and port.alias in names else None


def describe_port(port: Port) -> str:
    """``f32 of shape [4, 8]``: what a port expects, as errors say it."""
    return f"{port.dtype} of shape {list(port.shape)}" if port.shape else port.dtype


def cast_problem(
    port: Port, found: np.dtype, casting: str, values: np.ndarray | None = None
) -> str | None:
    """Why a tensor of dtype ``found`` (``values``, when in memory) cannot be bound to
    ``port`` under ``casting`` (`CASTS`), or None."""
    want = port.numpy_dtype
    if found == want or (casting != "no" and np.can_cast(found, want, casting)):
        return None
    if values is not None and found.kind in "iub" and want.kind in "iu":
        info = np.iinfo(want)
        if values.size == 0 or (info.min <= values.min() and values.max() <= info.max):
            return None
        return f"has values outside {port.dtype}'s range"
    hint = " (--cast same_kind converts, rounding)" if np.can_cast(found, want, "same_kind") else ""
    return f"is {found}, not {want}{hint}"


def is_whole_model(module: ModuleOp) -> bool:
    """Whether ``module``'s entry function is a whole-model step (`WHOLE_MODEL`)."""
    ins, outs = ports(entry_function(module))
    taken, given = WHOLE_MODEL
    return any(p.name == taken for p in ins) and any(p.name == given for p in outs)


def check_arguments(
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, Any] | None = None,
    casting: str = "safe",
) -> tuple[dict[str, str], list[str]]:
    """Every argument ``source`` is to bind, checked from its header alone: the tensor name
    binding each argument's name (`resolve`), and a note for each conversion that may round.

    Without ``inputs``, the weight arguments (by role) are checked; with them, every
    argument must be in ``source`` or ``inputs`` (one in both must have one shape there).
    Each bound tensor must have its argument's shape and a dtype ``casting`` admits; a whole
    model (`is_whole_model`) must leave no tensor of ``source`` unread (but `IGNORED`).
    Raises one BindError listing every problem."""
    found = _check(module, source, inputs, casting)
    if is_whole_model(module):
        found.problems += _unread_problems(source.names(), found.read)
    if found.problems:
        raise BindError(summary(found.problems))
    return found.keys, found.notes


def check_programs(
    modules: Sequence[ModuleOp], source: TensorSource, casting: str = "safe"
) -> list[str]:
    """The weight arguments of every program in ``modules`` (say, a model's prefill and
    decode steps) checked against ``source`` as `check_arguments` checks one, before any
    runs; when one of them is a whole model, a tensor no program reads is refused (but
    `IGNORED`). The notes for conversions that may round; one BindError listing every
    problem."""
    problems: list[str] = []
    notes: list[str] = []
    read: set[str] = set()
    for module in modules:
        found = _check(module, source, None, casting)
        problems += found.problems
        notes += found.notes
        read |= found.read
    if any(is_whole_model(m) for m in modules):
        problems += _unread_problems(source.names(), read)
    if problems:
        raise BindError(summary(problems))
    return list(dict.fromkeys(notes))


@dataclass
class _Checked:
    keys: dict[str, str] = field(default_factory=dict[str, str])
    notes: list[str] = field(default_factory=list[str])
    problems: list[str] = field(default_factory=list[str])
    read: set[str] = field(default_factory=set[str])


def _unread_problems(names: Collection[str], read: set[str]) -> list[str]:
    return [_unread(name) for name in sorted(set(names) - read) if not _ignored(name)]


def _check(
    module: ModuleOp,
    source: TensorSource,
    inputs: Mapping[str, Any] | None,
    casting: str,
) -> _Checked:
    """`check_arguments`' findings for one program, the unread tensors aside."""
    ins, _ = ports(entry_function(module))
    names = source.names()
    out = _Checked()
    problems, notes, keys, read = out.problems, out.notes, out.keys, out.read
    for port in ins:
        given = None if inputs is None else port.key_in(inputs)
        if inputs is None and port.role != "weight":
            continue
        try:
            key = resolve(port, names)
            if key is not None:
                read.add(key)
            if given is not None:
                assert inputs is not None
                _check_both(port, source, key, np.shape(inputs[given]))
                continue
            if key is None:
                raise BindError(_missing(port, names, inputs))
            found = source.shape(key)
            if found != port.shape:
                raise BindError(
                    f"checkpoint tensor {_named(key, port)}: expected shape "
                    f"{list(port.shape)}, found {list(found or ())}"
                )
            dtype = source.dtype(key)
            problem = cast_problem(port, dtype, casting)
            if problem:
                raise BindError(f"checkpoint tensor {_named(key, port)} {problem}")
            if not np.can_cast(dtype, port.numpy_dtype, "safe"):
                notes.append(f"checkpoint tensor '{key}' converted from {dtype} to {port.dtype}")
            keys[port.name] = key
        except BindError as err:
            problems.append(str(err))
    return out


def summary(problems: list[str]) -> str:
    """One line for ``problems`` (alike ones said once): the problem itself when it is the
    only one, else how many, the first `SHOWN` numbered, and the count of the rest."""
    distinct = list(dict.fromkeys(problems))
    if len(distinct) == 1:
        return distinct[0]
    shown = "; ".join(f"({i}) {p}" for i, p in enumerate(distinct[:SHOWN], 1))
    rest = len(distinct) - SHOWN
    more = f"; and {rest} more" if rest > 0 else ""
    return f"{len(distinct)} problems with the arguments: {shown}{more}"


def _named(key: str, port: Port) -> str:
    """``'layers.0.w' (argument 'model.layers.0.w')``, or ``'w'`` when the names agree."""
    return f"'{key}'" if key == port.name else f"'{key}' (argument '{port.name}')"


def _ignored(name: str) -> bool:
    return any(pattern.search(name) for pattern in IGNORED)


def _unread(name: str) -> str:
    said = (
        f"checkpoint tensor '{name}' is read by no argument: a whole model reads every "
        "tensor of its checkpoint"
    )
    if HEAD in name_forms(name):
        said += (
            "; the program's head is tied to the embedding (tie_word_embeddings), this "
            "checkpoint's model has a head of its own"
        )
    return said


def _looked_for(port: Port) -> str:
    """The names ``port`` was looked up by, and what it expects: ``'x' or 'arg0' (expected
    f32 of shape [2, 3])``."""
    alias = f" or '{port.alias}'" if port.alias else ""
    return f"'{port.name}'{alias} (expected {describe_port(port)})"


def _missing(port: Port, names: Collection[str], inputs: Mapping[str, Any] | None) -> str:
    """The error for ``port`` found nowhere: what was looked for, then what the file where
    its role says it lives holds instead (the other file's names if it holds none)."""
    if HEAD in name_forms(port.name):
        hint = (
            "the checkpoint's model ties its head to the embedding (tie_word_embeddings), "
            "the program reads a head of its own"
        )
    else:
        hint = ""
    if inputs is None:
        return f"checkpoint has no tensor {_looked_for(port)}; {hint or instead(port.name, names)}"
    files = [(names, "the checkpoint"), (inputs.keys(), "the inputs")]
    if port.role == "weight":
        said = f"checkpoint has no tensor {_looked_for(port)}, nor do the inputs"
    else:
        said = f"the inputs have no tensor {_looked_for(port)}, nor does the checkpoint"
        files.reverse()
    if hint:
        return f"{said}; {hint}"
    for held, what in files:
        if held:
            return f"{said}; {instead(port.name, held, what)}"
    return said


def _check_both(port: Port, source: TensorSource, key: str | None, given: tuple[int, ...]) -> None:
    if key is None:
        return
    found = source.shape(key)
    if found is not None and tuple(found) != tuple(given):
        raise BindError(
            f"argument '{port.name}' is in both the checkpoint (shape {list(found)}) and the "
            f"inputs (shape {list(given)}): give it once"
        )


def shape_in_both(port: Port, source: TensorSource, given: tuple[int, ...]) -> None:
    """BindError when ``source`` also holds ``port`` (by `resolve`), in another shape than
    ``given``, the shape of the inputs' copy."""
    try:
        key = resolve(port, source.names())
    except BindError:
        return  # said by check_arguments, with the rest
    _check_both(port, source, key, given)


def bind(ins: list[Port], values: Mapping[str, Any]) -> list[Any]:
    """Values for ``ins`` in order, checked: every port present (by its name, else its
    alias, the positional ``arg0`` of an argument named by its text), shapes right, and each
    value converted to the port's dtype where numpy's ``same_kind`` rule allows (an
    integer where every value fits; a float never becomes an integer: `cast_problem`)."""
    bound = []
    for port in ins:
        key = port.key_in(values)
        if key is None:
            raise BindError(f"missing argument '{port.name}' (expected {describe_port(port)})")
        value = np.asarray(values[key])
        if tuple(value.shape) != port.shape:
            raise BindError(
                f"argument '{port.name}': expected shape {list(port.shape)}, "
                f"found {list(value.shape)}"
            )
        problem = cast_problem(port, value.dtype, "same_kind", value)
        if problem:
            raise BindError(f"argument '{port.name}' {problem}")
        bound.append(
            value.astype(port.numpy_dtype, copy=False)
            if port.shape
            else port.numpy_dtype.type(value)
        )
    return bound
