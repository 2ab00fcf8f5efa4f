"""Parsing that remembers where each op came from, and errors located in the source.

xDSL's parser leaves ops at ``loc(unknown)``; a compiler's user wants a verifier or pass
error at ``file:line:col`` with the line and a caret. `LocatingParser` records each op's
offset in the input (cheap: positions only; line and column are computed on error).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import check_chip_indices
from tp_dialect.ssa import check_dominance
from tp_dialect.tools.common import LocatedError, UserError


@dataclass
class SourceMap:
    """Where each parsed op starts, in one input (a chunk of a file at a line offset)."""

    source: Input[str]
    line_offset: int = 0
    starts: dict[Operation, int] = field(default_factory=dict[Operation, int])

    def locate(self, op: Operation | None) -> tuple[int, int, str] | None:
        """(line, column, source line) of ``op`` or its nearest parsed ancestor."""
        while op is not None and op not in self.starts:
            op = op.parent_op()
        if op is None:
            return None
        pos = self.starts[op]
        text = self.source.content
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        line_text = text[line_start : line_end if line_end >= 0 else len(text)]
        line = text.count("\n", 0, line_start) + 1 + self.line_offset
        return line, pos - line_start + 1, line_text


class LocatingParser(Parser):
    """An xDSL parser that fills a `SourceMap` as it parses ops."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.source_map = SourceMap(self.lexer.input, line_offset)

    def _parse_dialect_type_or_attribute_body(
        self,
        attr_name: str,
        is_type: bool,
        is_opaque: bool,
        starting_opaque_pos: int | None,
    ) -> Attribute:
        # An attribute's verifier runs while it is built; report it at the attribute.
        start = self._current_token.span.start
        try:
            return super()._parse_dialect_type_or_attribute_body(
                attr_name, is_type, is_opaque, starting_opaque_pos
            )
        except VerifyException as err:
            self.raise_error(str(err), start, self.pos)

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except ParseError as err:
            # xDSL points an unknown op at the token after its name; point at the op.
            unknown = err.msg.startswith("Operation ") and err.msg.endswith("not registered")
            if unknown and not getattr(err, "pointed", False):
                try:
                    self.raise_error(err.msg, start, start + 1)
                except ParseError as pointed:
                    pointed.pointed = True  # type: ignore[attr-defined]
                    raise pointed from None
            raise
        self.source_map.starts[op] = start
        return op


def located(file: str, where: tuple[int, int, str] | None, message: str, width: int = 1) -> str:
    """``file:line:col: error: message`` with the line and a caret under the column."""
    if where is None:
        return f"{file}: error: {message}"
    line, col, text = where
    caret = " " * (col - 1) + "^" * max(width, 1)
    return f"{file}:{line}:{col}: error: {message}\n{text}\n{caret}"


def parse_error_message(err: ParseError, line_offset: int = 0) -> str:
    """A parse error in the located one-line form, with its line and caret."""
    span = err.span
    loc = span.get_location()
    text = span.input.content
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line_start = text.rfind("\n", 0, span.start) + 1
    line_end = text.find("\n", span.start)
    line_text = text[line_start : line_end if line_end >= 0 else len(text)]
    msg = " ".join(err.msg.split())
    where = (loc.line + line_offset, loc.col, line_text)
    return located(loc.file, where, msg, width=min(len(span), len(line_text)))


def parse_module(
    ctx: Context, text: str, name: str, line_offset: int = 0
) -> tuple[ModuleOp, SourceMap]:
    """Parse ``text`` into a module (implicit module allowed) and its source map."""
    parser = LocatingParser(ctx, text, name, line_offset)
    module = parser.parse_module()
    return module, parser.source_map


def verify_located(module: ModuleOp) -> None:
    """Verify ``module``; on a failure, op by op, so the error names the op that failed."""
    try:
        module.verify()
    except DiagnosticException as whole:
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except DiagnosticException as err:
                raise TpDiagnostic(op, str(err)) from None
        raise TpDiagnostic(None, str(whole).split("\n")[0]) from None
    try:
        check_dominance(module)
        check_chip_indices(module)
    except DiagnosticException as err:
        raise TpDiagnostic(getattr(err, "op", None), str(err)) from None


def load_program(ctx: Context, path: str) -> ModuleOp:
    """Parse and verify the program in ``path``; a located `ProgramError` if it is bad."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise UserError(f"cannot read '{path}': {err.strerror}") from None
    try:
        module, source_map = parse_module(ctx, text, path)
    except ParseError as err:
        raise ProgramError(parse_error_message(err)) from None
    except DiagnosticException as err:
        raise ProgramError(located(path, None, str(err).split("\n")[0])) from None
    try:
        verify_located(module)
    except TpDiagnostic as err:
        raise ProgramError(located(path, source_map.locate(err.op), err.message)) from None
    return module


class ProgramError(LocatedError):
    """A program that does not parse or verify, its message already located."""
