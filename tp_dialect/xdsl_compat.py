"""Where xDSL 0.75 does not read what it prints, and tp needs it to.

``linalg.generic`` with several results prints its result types in parentheses, as MLIR does
(``} -> (tensor<2xf32>, tensor<2xi64>)``), but xDSL 0.75's parser takes them only bare
(``} -> tensor<2xf32>, tensor<2xi64>``): an argmax (a value and its index) printed by any tool
could not be read back. `accept_parenthesized_results` makes the parser take both spellings;
importing tp (the dialect) installs it, so every tool and pipeline that loads tp reads what it
prints. Remove once the pinned xDSL parses its own output.

`func_functions` is xDSL's interpreter of ``func`` ops, loaded without the package around it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xdsl
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRTokenKind

_PATCHED = "_tp_parenthesized_results"


def accept_parenthesized_results() -> None:
    """``linalg.generic``'s parser takes ``-> (t1, t2)`` as well as ``-> t1, t2`` (idempotent)."""
    op = GenericOp
    if getattr(op, _PATCHED, False):
        return
    original = op.parse.__func__  # type: ignore[attr-defined]

    def parse(cls: type[GenericOp], parser: Parser) -> GenericOp:
        plain = parser.parse_comma_separated_list

        def results(delimiter: Any, parse_one: Callable[[], Any], context: str = "") -> Any:
            # Only the result types are parsed as attributes; ins/outs parse operands and types.
            if (
                delimiter is Parser.Delimiter.NONE
                and parse_one == parser.parse_attribute
                and parser._current_token.kind == MLIRTokenKind.L_PAREN  # pyright: ignore[reportPrivateUsage]
            ):
                return plain(Parser.Delimiter.PAREN, parse_one, context)
            return plain(delimiter, parse_one, context)

        parser.parse_comma_separated_list = results  # type: ignore[method-assign]
        try:
            return original(cls, parser)
        finally:
            del parser.parse_comma_separated_list

    op.parse = classmethod(parse)  # type: ignore[method-assign, assignment]
    setattr(op, _PATCHED, True)


_FUNC = "xdsl.interpreters.func"


def func_functions() -> Any:
    """xDSL's ``FuncFunctions`` (func.call, func.return, a function's body), loaded from its file:
    importing it by name runs the ``xdsl.interpreters`` package first, which imports every
    interpreter xDSL has (RISC-V, Snitch, PDL, ...: 0.8 s of every tp-run and MPI rank's start,
    for three ops). The module is the one ``import xdsl.interpreters.func`` would give."""
    module = sys.modules.get(_FUNC)
    if module is None:
        path = Path(xdsl.__path__[0]) / "interpreters" / "func.py"
        spec = importlib.util.spec_from_file_location(_FUNC, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_FUNC] = module
        spec.loader.exec_module(module)
    return module.FuncFunctions()
