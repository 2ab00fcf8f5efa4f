"""Pass options with a fixed set of values, as ``Literal`` types xDSL's pipeline parser checks.

A pass built from Python skips that parser, so each pass still checks such an option when it
runs; a bad value is then a plain `TpDiagnostic` naming the pass (no reject reason: the
program is not at fault).
"""

from __future__ import annotations

from typing import Literal

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.shims import Shim, shim_named

ShimName = Literal["reference", "sn40l", "sn40l-int8"]
"""A base shim by name: exactly the keys of `tp_dialect.shims.SHIMS`."""


def base_shim(pass_name: str, name: str) -> Shim:
    """The base shim called ``name``; a plain TpDiagnostic from ``pass_name`` if none is."""
    try:
        return shim_named(name)
    except KeyError as err:
        raise TpDiagnostic(None, f"{pass_name}: {err.args[0]}") from None
