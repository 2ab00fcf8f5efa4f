"""tp: tensor parallelism for a whole program, as an xDSL dialect.

The IR lives here (attributes, ops, the module's chip grid); the passes are in
``tp_dialect.passes``, the command-line tools in ``tp_dialect.tools``, and serving a model
directory in ``tp_dialect.serving`` — `load` is re-exported here, imported on first use so
that ``import tp_dialect`` stays cheap.
"""

from typing import Any

from tp_dialect.attrs import ChipAttr, SliceAttr, chip_of, on_chip
from tp_dialect.dialect import TP
from tp_dialect.grid import CHIPS_ATTR, check_chip_indices, stated_chips

__all__ = [
    "CHIPS_ATTR",
    "load",
    "TP",
    "ChipAttr",
    "SliceAttr",
    "check_chip_indices",
    "chip_of",
    "on_chip",
    "stated_chips",
]


def __getattr__(name: str) -> Any:
    """``tp_dialect.load``: `tp_dialect.serving.load`, imported when first asked for."""
    if name == "load":
        from tp_dialect.serving import load

        return load
    raise AttributeError(f"module 'tp_dialect' has no attribute {name!r}")
