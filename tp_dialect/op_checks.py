"""What the tp ops' verifiers share: a value's shape and name in a message, a chip index
checked against the module's count. Each verifier names the op, the value and the chip."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tp_dialect.grid import require_chips


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The static shape of a tensor ``value``."""
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def describe(value: SSAValue) -> str:
    """``value`` as a message names it: ``%name``, or ``value`` when it has none."""
    return f"%{value.name_hint}" if value.name_hint else "value"


def check_chip(op: Operation, chip: int, what: str) -> None:
    """A verifier error unless ``chip`` is one of the module's chips (``what``: where
    ``op`` names it)."""
    n = require_chips(op)
    if not 0 <= chip < n:
        raise VerifyException(
            f"'{op.name}' {what} is on chip {chip}, but the module has {n} "
            f"chip{'s' if n != 1 else ''} (0..{n - 1})"
        )
