"""xDSL's ``linalg.generic`` reads back the results it prints: a generic of several results
(the greedy head's argmax: values and indices) prints them as ``-> (t1, t2)``, as MLIR does,
while xDSL 0.75's parser takes only ``-> t1, t2`` and fails on its own output ("Expected
'->'": it reads ``(t1, t2)`` as the start of a function type). `accept_parenthesised_results`
makes the parser take both spellings; `tp_dialect.universe.register_tp` applies it, so every
tool reads back what a pass printed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser

_PARSE: Any = GenericOp.__dict__["parse"].__func__


def _parse(cls: type[GenericOp], parser: Parser) -> GenericOp:
    """xDSL's parse, with ``-> (t1, t2)`` read as the result types ``t1, t2``."""
    plain: Callable[..., Any] = parser.parse_comma_separated_list

    def results_too(delimiter: Parser.Delimiter, parse: Callable[[], Any], *rest: Any) -> Any:
        # The result types are the only list xDSL reads as bare attributes after the body.
        if (
            delimiter is Parser.Delimiter.NONE
            and parse == parser.parse_attribute
            and parser.parse_optional_punctuation("(")
        ):
            types = plain(Parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            return types
        return plain(delimiter, parse, *rest)

    parser.parse_comma_separated_list = results_too  # type: ignore[method-assign]
    try:
        return _PARSE(cls, parser)
    finally:
        del parser.parse_comma_separated_list


def accept_parenthesised_results() -> None:
    """Make ``linalg.generic``'s parser take ``-> (t1, t2)`` (idempotent)."""
    GenericOp.parse = classmethod(_parse)  # type: ignore[method-assign, assignment]
