"""What a file of named tensors holds instead of a name it lacks: the hint a missing-tensor
error ends with.

Checkpoints name one model's tensors differently by how they were saved: a Hugging Face
model with a head prefixes its base model's names (``transformer.h.0.ln_1.weight`` in
GPT-2's LM-head file, where the base model says ``h.0.ln_1.weight``), and a base model saved
alone drops the prefix its parent gives it (``layers.0.…`` for Qwen3's ``model.layers.0.…``).
A prefix difference is said as such; anything else gets the closest names the file holds
(difflib), or, when none is close, how many it holds and a few of them.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

_SHOWN = 3  # names quoted at most


def instead(name: str, names: Collection[str], what: str = "the checkpoint") -> str:
    """What ``what`` (a file, holding ``names``) has in place of ``name``: one clause, for the
    end of an error saying ``name`` is missing."""
    if not names:
        return f"there are no tensors in {what}"
    extra = sorted(key for key in names if key.endswith("." + name))
    if extra:  # the file's names carry a prefix the program's lack
        prefix = extra[0][: -len(name)]
        return (
            f"'{extra[0]}' is in {what}: the file's names carry the prefix '{prefix}', the "
            "program's do not"
        )
    for i, char in enumerate(name):
        if char == "." and name[i + 1 :] in names:  # the program's carry one the file lacks
            return (
                f"'{name[i + 1 :]}' is in {what}: the program's names carry the prefix "
                f"'{name[: i + 1]}', the file's do not"
            )
    if len(names) == 1:
        return f"the only tensor in {what} is {_quoted(list(names))}"
    held = f"{len(names)} tensors in {what}"
    close = difflib.get_close_matches(name, list(names), n=_SHOWN, cutoff=0.6)
    if close:
        return f"the closest of the {held}: {_quoted(close)}"
    some = sorted(names)[:_SHOWN]
    more = ", …" if len(names) > _SHOWN else ""
    return f"none of the {held} is named alike: {_quoted(some)}{more}"


def _quoted(names: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)
