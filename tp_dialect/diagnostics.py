"""Errors that point at an op: what passes and analyses raise when they refuse.

A tool turns these into ``file:line:col: error: message`` using where the op was parsed.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from tp_dialect.errors import TpError


class TpDiagnostic(PassFailedException, TpError):
    """A refusal about one op: the op (to locate it) and a one-line message."""

    def __init__(self, op: Operation | None, message: str) -> None:
        super().__init__(message)
        self.op = op
        self.message = message
