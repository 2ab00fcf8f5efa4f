"""Readable names for SSA values, as diagnostics, manifests and buffer names spell them."""

from __future__ import annotations

import re

from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import BlockArgument, Operation, SSAValue

from tp_dialect.diagnostics import TpDiagnostic


def value_name(value: SSAValue) -> str:
    """A stable, readable name for a value: its name hint, else its defining op and index."""
    if value.name_hint:
        return value.name_hint
    if isinstance(value, BlockArgument):
        return f"arg{value.index}"
    owner = value.owner
    assert isinstance(owner, Operation)
    return f"{owner.name}#{value.index}"


# Statement labels carry their layer as a leading ``l<k>_`` (``l3_c1_q``), as tp-gen writes.
_LAYER_TAG = re.compile(r"^l(\d+)_")


def layer_of(label: str) -> str:
    """The layer a label belongs to (``l3_...`` -> ``layer 3``); anything else is the
    prologue (rope tables, positions: work done once a step)."""
    m = _LAYER_TAG.match(label)
    return f"layer {m.group(1)}" if m else "prologue"


def without_layer(label: str) -> str:
    """``label`` without its layer tag: ``l3_c2_q`` -> ``c2_q``."""
    return _LAYER_TAG.sub("", label)


def layer_tag(name: str) -> str | None:
    """The layer tag ``name`` starts with (``l3_q`` -> ``l3_``), if any."""
    m = _LAYER_TAG.match(name)
    return m.group(0) if m else None


def in_layer(name: str, tag: str) -> str:
    """A name written once for every layer (tp-gen's outlined ``@layer`` spells its names
    ``l_…``) as layer ``tag``'s (``l_q``, ``l3_`` -> ``l3_q``); any other name unchanged."""
    return tag + name[2:] if name.startswith("l_") else name


def value_hint(text: str) -> str:
    """``text`` as a value name xDSL accepts (``[A-Za-z0-9_$.-]``, no digit first): a
    section's label, or a value named after its op (``tp.allreduce#0``), may be neither."""
    name = re.sub(r"[^A-Za-z0-9_$.-]", "_", text)
    return name if name and not name[0].isdigit() else f"v{name}"


LAYER_ATTR = "tp.layer"
"""The layer a call runs, stated on the call (``func.call @layer(…) {tp.layer = 3 : i64}``, as
``tp-gen --outline`` writes each layer's call): a call's identity, whatever its results are
named."""


def call_tag(call: Operation) -> str | None:
    """The layer tag an inlined copy of ``call`` takes: ``l{k}_`` for a call stating
    ``tp.layer = k`` (`LAYER_ATTR`), else the first `layer_tag` among its results' names
    (``%l3_out = func.call @layer`` -> ``l3_``, for programs written without it); None when
    neither says. tp-inline, tp-link-points and the model's runs of calls all name a call's
    copies by it. A ``tp.layer`` other than an integer >= 0 is refused at the call."""
    stated = call.attributes.get(LAYER_ATTR)
    if stated is not None:
        if not (
            isinstance(stated, IntegerAttr)
            and isinstance(stated.type, IntegerType)
            and stated.value.data >= 0
        ):
            raise TpDiagnostic(
                call, f"'{call.name}' states {LAYER_ATTR} = {stated}: a layer is an integer >= 0"
            )
        return f"l{stated.value.data}_"
    return next((t for r in call.results if (t := layer_tag(r.name_hint or ""))), None)
