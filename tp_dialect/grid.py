"""The module's chip grid: N, stated once as ``module attributes {tp.chips = N}``.

Every chip index anywhere in the module (a type's encoding, an op's attribute) must lie
in ``0..N-1``; `check_chip_indices` walks the whole module to hold it to that, since an
attribute alone cannot see the module it sits in.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, ParametrizedAttribute
from xdsl.utils.exceptions import VerifyException

from tp_dialect.attrs import ChipAttr

CHIPS_ATTR = "tp.chips"

MAX_LOWERED_CHIPS = 1024
"""The most chips work is written for one chip at a time: a replicated statement's section
(tp-relocate, tp-fuse) lists each chip, tp-link-points writes a program for each, and
tp-split writes each op it cuts once per chip (its ``chips=``). That output grows with N: at
1024 chips a one-statement program lowers to per-chip programs in about a second. Tensor
parallelism stops paying long before that (every chip's slice of a 4096-wide layer would be 4
columns)."""


def stated_chips(op: Operation) -> int | None:
    """N as stated by the nearest enclosing module (or ``op`` itself), else None."""
    attr = _chips_of(op)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _chips_of(op: Operation) -> Attribute | None:
    """The ``tp.chips`` of the nearest module enclosing ``op`` (or ``op`` itself) that
    states one."""
    current: Operation | None = op
    while current is not None:
        if isinstance(current, ModuleOp) and CHIPS_ATTR in current.attributes:
            return current.attributes[CHIPS_ATTR]
        current = current.parent_op()
    return None


def chips_problem(attr: Attribute) -> str | None:
    """Why ``attr`` cannot be a module's ``tp.chips``, or None: N is a positive integer. A
    negative one is said to be what xDSL reads an integer too large for its type as (2**63
    written as an i64 reads -2**63)."""
    if isinstance(attr, IntegerAttr) and attr.value.data >= 1:
        return None
    problem = f"'{CHIPS_ATTR}' must be a positive integer, got {attr}"
    if isinstance(attr, IntegerAttr) and attr.value.data < 0:
        problem += " (an integer too large for its type reads as negative)"
    return problem


def require_chips(op: Operation) -> int:
    """N for ``op``'s module; a verifier error naming the op when none is stated, or when
    what is stated is not a positive integer (`chips_problem`)."""
    attr = _chips_of(op)
    if not isinstance(attr, IntegerAttr):
        raise VerifyException(
            f"'{op.name}' needs the module to state its chip count "
            f"(module attributes {{{CHIPS_ATTR} = N : i64}})"
        )
    problem = chips_problem(attr)
    if problem is not None:
        raise VerifyException(f"'{op.name}' needs a chip count: {problem}")
    return attr.value.data


def chips_in(attr: Attribute) -> Iterator[int]:
    """Every chip index ``attr`` names: a ``#tp.chip<c>`` anywhere inside it (a tensor's
    encoding, a memref's memory space, a function type, an array or dictionary)."""
    if isinstance(attr, TensorType):  # the common case, met thousands of times: once each
        return iter(_tensor_chips(attr))
    return _chips_in(attr)


@functools.lru_cache(maxsize=4096)
def _tensor_chips(attr: TensorType[Any]) -> tuple[int, ...]:
    return tuple(_chips_in(attr))


def _chips_in(attr: Attribute) -> Iterator[int]:
    if isinstance(attr, ChipAttr):
        yield attr.value
    elif isinstance(attr, ParametrizedAttribute):
        for param in attr.parameters:
            yield from _chips_in(param)
    elif isinstance(attr, ArrayAttr):
        for a in attr.data:
            yield from _chips_in(a)
    elif isinstance(attr, DictionaryAttr):
        for a in attr.data.values():
            yield from _chips_in(a)


def _op_chips(op: Operation) -> Iterator[tuple[int, str]]:
    for i, res in enumerate(op.results):
        yield from ((c, f"result #{i}") for c in chips_in(res.type))
    for i, opnd in enumerate(op.operands):
        yield from ((c, f"operand #{i}") for c in chips_in(opnd.type))
    for region in op.regions:
        for block in region.blocks:
            for i, arg in enumerate(block.args):
                yield from ((c, f"block argument #{i}") for c in chips_in(arg.type))
    for name, attr in (*op.properties.items(), *op.attributes.items()):
        yield from ((c, f"attribute '{name}'") for c in chips_in(attr))


def check_chip_indices(module: ModuleOp) -> None:
    """Every chip index in ``module`` is below the stated N, and N >= 1 when stated.

    Raises a VerifyException carrying the offending op (as ``err.op``).
    """
    for op in module.walk():
        if isinstance(op, ModuleOp) and CHIPS_ATTR in op.attributes:
            problem = chips_problem(op.attributes[CHIPS_ATTR])
            if problem is not None:
                raise _at(op, problem)
        uses = list(_op_chips(op))
        if not uses:
            continue
        n = stated_chips(op)
        for chip, where in uses:
            if n is None:
                raise _at(
                    op,
                    f"'{op.name}' {where} is on chip {chip} but the module states no "
                    f"chip count ({CHIPS_ATTR})",
                )
            if chip >= n:
                raise _at(
                    op,
                    f"'{op.name}' {where} is on chip {chip}, but the module has "
                    f"{n} chip{'s' if n != 1 else ''} (0..{n - 1})",
                )


def _at(op: Operation, message: str) -> VerifyException:
    err = VerifyException(message)
    err.op = op  # type: ignore[attr-defined]
    return err
