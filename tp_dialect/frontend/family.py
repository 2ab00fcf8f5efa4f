"""What a model family's generated programs hand the runtime: each entry argument's role.

The runtime knows no model: it asks a port's role (``weight``, ``input`` or ``cache``, with a
cache's sequence axis), which the program states next to the port's name. A frontend
decides the roles with a `Family`: which argument names are per-step inputs, which are
caches (and along which axis they grow); every other argument is a weight.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute

from tp_dialect.signature import CACHE_AXIS_ATTR, NAME_ATTR, ROLE_ATTR


@dataclass(frozen=True)
class Family:
    """A model family's port roles: exact input names, cache name prefixes, cache axis."""

    name: str
    inputs: tuple[str, ...]  # per-step inputs, by exact name
    caches: tuple[str, ...]  # caches, by name prefix
    cache_axis: int  # the caches' sequence axis

    def role_of(self, name: str) -> str:
        """The role of the entry argument ``name``: input, cache, or else weight."""
        if name in self.inputs:
            return "input"
        if name.startswith(self.caches):
            return "cache"
        return "weight"

    def arg_attrs(self, name: str) -> DictionaryAttr:
        """The attributes of the entry argument ``name``: its name, role and (for a cache)
        sequence axis, as the program states them."""
        role = self.role_of(name)
        attrs: dict[str, Attribute] = {NAME_ATTR: StringAttr(name), ROLE_ATTR: StringAttr(role)}
        if role == "cache":
            attrs[CACHE_AXIS_ATTR] = IntegerAttr(self.cache_axis, i64)
        return DictionaryAttr(attrs)


def result_attrs(name: str) -> DictionaryAttr:
    """The attributes of an entry function result named ``name``."""
    return DictionaryAttr({NAME_ATTR: StringAttr(name)})
