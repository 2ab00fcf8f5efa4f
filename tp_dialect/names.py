"""Readable names for SSA values, as diagnostics, manifests and buffer names spell them."""

from __future__ import annotations

from xdsl.ir import BlockArgument, Operation, SSAValue


def value_name(value: SSAValue) -> str:
    """A stable, readable name for a value: its name hint, else its defining op and index."""
    if value.name_hint:
        return value.name_hint
    if isinstance(value, BlockArgument):
        return f"arg{value.index}"
    owner = value.owner
    assert isinstance(owner, Operation)
    return f"{owner.name}#{value.index}"
