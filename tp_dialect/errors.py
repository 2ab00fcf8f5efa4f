"""`TpError`: the one base of every error tp reports to its user.

Each error a tool catches and reports — a one-line ``tool: error: ...`` or a located
``file:line:col: error: ...`` — derives from `TpError`, beside the base that says what kind
of error it is to Python (``ValueError`` for a bad value, ``OSError`` for a path,
``PassFailedException`` for a pass's refusal), so ``except TpError`` catches every error tp
raises on purpose and ``except ValueError`` callers keep working.
"""

from __future__ import annotations


class TpError(Exception):
    """An error tp raises on purpose, with a message for the user (never a bug of tp's)."""
