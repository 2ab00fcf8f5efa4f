"""tp: tensor parallelism for a whole program, as an xDSL dialect.

The IR lives here (attributes, ops, the module's chip grid); the passes are in
``tp_dialect.passes`` and the command-line tools in ``tp_dialect.tools``.
"""

from tp_dialect.attrs import ChipAttr, SliceAttr, chip_of, on_chip
from tp_dialect.dialect import TP
from tp_dialect.grid import CHIPS_ATTR, check_chip_indices, stated_chips

__all__ = [
    "CHIPS_ATTR",
    "TP",
    "ChipAttr",
    "SliceAttr",
    "check_chip_indices",
    "chip_of",
    "on_chip",
    "stated_chips",
]
