"""Parsing that remembers where each op came from, and errors located in the source.

xDSL's parser leaves ops at ``loc(unknown)``; a compiler's user wants a verifier or pass
error at ``file:line:col`` with the line and a caret. `LocatingParser` records each op's
offset in the input (cheap: positions only; line and column are computed on error).

It also guards against what xDSL 0.75 itself does on bad input (upstream bugs, guarded here
so that tp-opt keeps its promise: a located error, never a traceback or a hang):

- its lexer's string-literal rule backtracks exponentially on an unterminated string (26
  characters take seconds, 32 take minutes): `LocatingParser` lexes with the same rule
  written so that it cannot backtrack (`LINEAR_STRING_LITERAL`);
- a block label it cannot name (``^3``) raises a ValueError: refused as a parse error;
- an op whose custom parser or verifier fails with anything but a diagnostic (a named
  linalg op without inputs, a transpose permutation out of range: IndexError): a located
  error naming the op (`parse_module`, `verify_located`), with precise guards for the
  cases known (`upstream_guard`);
- its parser recurses once per nesting level: a text nested deeper than `MAX_NESTING` is
  refused at the bracket that crosses it before it is parsed (`parse_module`), and what is
  read is bounded (`read_source`, `MAX_SOURCE_BYTES`).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, AnyStr, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import CHIPS_ATTR, check_chip_indices, chips_problem
from tp_dialect.nesting import MAX_NESTING, MLIR, deepest, first_too_deep
from tp_dialect.op_guards import early_guard, late_guard
from tp_dialect.ssa import check_dominance
from tp_dialect.tools.common import LocatedError, UserError


@dataclass
class SourceMap:
    """Where each parsed op starts, in one input (a chunk of a file at a line offset)."""

    source: Input[str]
    line_offset: int = 0
    starts: dict[Operation, int] = field(default_factory=dict[Operation, int])

    def locate(self, op: Operation | None) -> tuple[int, int, str] | None:
        """(line, column, source line) of ``op`` or its nearest parsed ancestor; for a
        module the text never spelled (an implicit one), of its first op."""
        jumped = False  # into an implicit module's first op: once (an op of another
        # module, such as a lowered copy's, would go round forever)
        while op is not None and op not in self.starts:
            if (
                not jumped
                and isinstance(op, ModuleOp)
                and op.parent is None
                and op.ops.first is not None
            ):
                op, jumped = op.ops.first, True  # the implicit module: where its text begins
                continue
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

    def adopt(self, original: Operation, copy: Operation) -> None:
        """Locate each op of ``copy`` — a clone of ``original``, not yet changed — where its
        original is: an error a pass raises at an op of the copy (one it moved, not one it
        made) then points into the source text."""
        for a, b in zip(original.walk(), copy.walk(), strict=True):
            if a in self.starts:
                self.starts[b] = self.starts[a]


LINEAR_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
"""xDSL 0.75's string-literal rule with possessive quantifiers: the same strings, but an
unterminated one fails in linear time instead of trying every way to split its characters
between the inner and the outer repetition (xDSL's rule is ``(?:[^"...]+|escape)*``; the
alternatives start with different characters, so there is never a second way to match)."""


class _LinearLexer(MLIRLexer):
    """xDSL's MLIR lexer, its string-literal rule replaced by `LINEAR_STRING_LITERAL`."""

    _unescaped_characters_regex = LINEAR_STRING_LITERAL


def _closing_bracket(text: str, at: int) -> int | None:
    """The index after the ``>`` closing the ``<`` at ``text[at]`` (brackets nested; a
    quote inside gives None: such a type is parsed every time)."""
    if at >= len(text) or text[at] != "<":
        return None
    depth = 0
    for i in range(at, min(len(text), at + 4096)):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c in '"\n':
            return None
    return None


_OP_NAME = re.compile(r'(?:%[^=]*=\s*)?"?([A-Za-z_][\w$.-]*)')


class LocatingParser(Parser):
    """An xDSL parser that fills a `SourceMap` as it parses ops, lexes string literals in
    linear time, and turns xDSL's own failures on malformed ops into located ParseErrors."""

    def __init__(
        self,
        ctx: Context,
        text: str,
        name: str,
        line_offset: int = 0,
        on_op: Callable[[int], None] | None = None,
    ):
        # xDSL's Parser lexes its first token with its own lexer: give it nothing to lex,
        # then start over on the real input with the linear-time lexer.
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_LinearLexer(Input(text, name)))
        self.source_map = SourceMap(self.lexer.input, line_offset)
        self._text = text
        self._tensor_types: dict[str, Attribute] = {}
        self._on_op = on_op  # told where each op parsed starts (tp-opt's progress)

    def _parse_optional_builtin_parametrized_type(self) -> Any:
        """xDSL's, each ``tensor<…>`` spelling parsed once: a program repeats a few tensor
        types thousands of times (every port of every layer, in every chip's program), and
        the same text is the same type wherever it stands (aliases are the file's own)."""
        token = self._current_token
        if token.kind != MLIRTokenKind.BARE_IDENT or token.text != "tensor":
            return super()._parse_optional_builtin_parametrized_type()
        start = token.span.start
        end = _closing_bracket(self._text, token.span.end)
        key = self._text[start:end] if end is not None else None
        if key is not None and (known := self._tensor_types.get(key)) is not None:
            self.lexer.pos = end  # type: ignore[assignment]
            self._parser_state.current_token = self.lexer.lex()
            return known
        parsed = super()._parse_optional_builtin_parametrized_type()
        if key is not None and parsed is not None and self._current_token.span.start >= end:  # type: ignore[operator]
            if self._text[end : self._current_token.span.start].strip() == "":  # type: ignore[misc]
                self._tensor_types[key] = parsed
        return parsed

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's parse_module, a use of a value never defined pointed at its first use
        (xDSL points at the end of the input)."""
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as err:
            undefined = self._first_undefined_use()
            if not err.msg.startswith("values used but not defined") or undefined is None:
                raise
            name, start = undefined
            self.raise_error(f"%{name} is used but never defined", start, start + 1)

    def _first_undefined_use(self) -> tuple[str, int] | None:
        """The name of the first value (in the text) used but still undefined, and where
        the op using it starts."""
        first: tuple[str, int] | None = None
        for name, refs in self.forward_ssa_references.items():
            for placeholder in refs.values():
                for use in placeholder.uses:
                    pos = self.source_map.starts.get(use.operation)
                    if pos is not None and (first is None or pos < first[1]):
                        first = (name, pos)
        return first

    def _check_block_name(self) -> None:
        """A ParseError at the current ``^label`` if xDSL cannot name a block so (it
        raises a ValueError from the block's name setter instead)."""
        token = self._current_token
        if token.kind != MLIRTokenKind.CARET_IDENT:
            return
        name = token.text[1:]
        if not Block.is_default_block_name(name) and not Block.is_valid_name(name):
            self.raise_error(
                f"block label '^{name}' is not supported: xDSL 0.75 names blocks only with "
                f"a letter or '_' first (e.g. ^bb{name})",
                token.span.start,
                token.span.end,
            )

    def _parse_block(self) -> Block:
        self._check_block_name()
        token = self._current_token
        name = token.text[1:]
        # Defined once already after a forward reference: xDSL keeps no span for that
        # definition and fails on the second one with a KeyError.
        known = self.blocks.get(name)
        if known is not None and known[1] is None and name not in self.forward_block_references:
            self.raise_error(f"re-declaration of block '{name}'", token.span.start, token.span.end)
        return super()._parse_block()

    def parse_optional_successor(self) -> Block | None:
        self._check_block_name()
        return super().parse_optional_successor()

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
        except RecursionError:
            raise
        except DiagnosticException as err:
            # A builtin attribute's verifier, run as the op's attributes are built: at the
            # op (a dialect attribute's is located at the attribute, above).
            self.raise_error(described(err, with_type=False), start, start + 1)
        except Exception as err:
            # An op's own parser failing on a malformed op (IndexError, ValueError, ...):
            # xDSL's bug, the user's malformed op: say which op, where.
            match = _OP_NAME.match(self.lexer.input.content, start)
            name = f"'{match.group(1)}'" if match else "this op"
            self.raise_error(
                f"{name} is malformed: xDSL's parser fails on it ({described(err)}); check "
                "its operands, types and attributes",
                start,
                start + 1,
            )
        self.source_map.starts[op] = start
        if self._on_op is not None:
            self._on_op(start)
        return op


def described(err: BaseException, with_type: bool = True) -> str:
    """``Type: first line of the message`` of an exception (without ``Type: `` if not
    ``with_type``), on one line."""
    text = " ".join(str(err).split("\n")[0].split())
    if not with_type and text:
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


QUOTE_WIDTH = 160
"""The most characters of a source line an error quotes: a screen line (a function's
signature can be thousands of characters long)."""


def located(file: str, where: tuple[int, int, str] | None, message: str, width: int = 1) -> str:
    """``file:line:col: error: message`` with the line and a caret under the column; a line
    longer than `QUOTE_WIDTH` is quoted from the column (with a little before it) and cut,
    ``…`` marking each cut."""
    if where is None:
        return f"{file}: error: {message}"
    line, col, text = where
    start = 0 if col <= QUOTE_WIDTH - 20 else col - 1 - 20
    quoted = text[start : start + QUOTE_WIDTH]
    if start:
        quoted = "…" + quoted[1:]
    if start + QUOTE_WIDTH < len(text):
        quoted = quoted[:-1] + "…"
    width = min(max(width, 1), len(quoted) - (col - 1 - start))
    caret = " " * (col - 1 - start) + "^" * max(width, 1)
    return f"{file}:{line}:{col}: error: {message}\n{quoted}\n{caret}"


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
    ctx: Context,
    text: str,
    name: str,
    line_offset: int = 0,
    on_op: Callable[[int], None] | None = None,
) -> tuple[ModuleOp, SourceMap]:
    """Parse ``text`` into a module (implicit module allowed) and its source map; anything
    wrong with the text is a ParseError located in it (xDSL's own failures outside an op's
    parser included: at the token it stopped at), brackets nested beyond `MAX_NESTING`
    too. ``on_op`` is told the offset of each op parsed."""
    parser = LocatingParser(ctx, text, name, line_offset, on_op)
    depth = deepest(text, MLIR)
    if depth > MAX_NESTING:
        _too_deep(parser, MAX_NESTING, "")
    try:
        module = parser.parse_module()
    except ParseError:
        raise
    except RecursionError:
        # Nesting within the bound that xDSL still recurses on without brackets (a chain
        # of unary minuses in an affine expression): where its parser ran out of stack.
        token = parser._current_token  # pyright: ignore[reportPrivateUsage]
        parser.raise_error(
            "nested too deeply for xDSL's parser here (it recurses once per level)",
            token.span.start,
            token.span.end,
        )
    except Exception as err:  # outside any op (an alias, a top-level attribute): here
        token = parser._current_token  # pyright: ignore[reportPrivateUsage]
        why = (
            described(err, with_type=False)
            if isinstance(err, DiagnosticException)
            else f"xDSL's parser fails here ({described(err)})"
        )
        parser.raise_error(why, token.span.start, token.span.end)
    if depth == MAX_NESTING and module not in parser.source_map.starts:
        # an implicit module, printed inside a builtin.module: one level more, too deep to
        # read back
        _too_deep(parser, MAX_NESTING - 1, ", counting the builtin.module it is printed in")
    return module, parser.source_map


def _too_deep(parser: LocatingParser, bound: int, counting: str) -> NoReturn:
    """A ParseError at the first bracket of the parser's text nested deeper than ``bound``
    (`deepest` found one)."""
    at = first_too_deep(parser.source_map.source.content, MLIR, bound)
    assert at is not None
    parser.raise_error(
        f"nested {MAX_NESTING + 1} deep here{counting}: tp reads brackets ((, [, {{, <) "
        f"nested at most {MAX_NESTING} deep",
        at,
        at + 1,
    )


def upstream_guard(op: Operation) -> str | None:
    """Why ``op`` is malformed in a way xDSL 0.75's verifier crashes on or lets through,
    or None; checked before xDSL's verifier runs. An op's ``static_*`` list (sizes,
    offsets, an output shape) marks as many entries dynamic as it has values for them
    (xDSL's printer indexes the values with the marks: an IndexError). A
    ``linalg.transpose`` needs one input and one output, and a permutation of exactly
    0..rank-1 (xDSL indexes the shape with it: an IndexError beyond the rank, and a negative
    entry silently read from the end). And tp's own checks xDSL would crash on
    (`tp_dialect.op_guards.early_guard`: linalg.reduce/broadcast dimensions)."""
    for prop, attr in op.properties.items():
        if prop.startswith("static_") and isinstance(attr, DenseArrayBase):
            name = prop.removeprefix("static_")  # its values: ``sizes``, ``dynamic_sizes``
            values = getattr(op, name, None) or getattr(op, f"dynamic_{name}", None)
            values = () if values is None else values
            marked = sum(v == DYNAMIC_INDEX for v in attr.get_values())
            if isinstance(values, Sequence) and marked != len(values):
                return (
                    f"'{op.name}' {prop}: {marked} of its entries are xDSL's dynamic marker "
                    f"{DYNAMIC_INDEX} (2**63 wraps to it), but {len(values)} values are given "
                    "for dynamic entries"
                )
    if isinstance(op, linalg.TransposeOp):
        if len(op.inputs) != 1 or len(op.outputs) != 1:
            return (
                f"'linalg.transpose' takes one input and one output, not {len(op.inputs)} "
                f"and {len(op.outputs)}"
            )
        source = op.inputs[0].type
        if isinstance(source, TensorType | MemRefType):
            rank = len(source.get_shape())
            perm = list(op.permutation.get_values())
            if sorted(perm) != list(range(rank)):
                return (
                    f"'linalg.transpose' permutation {perm} is not a permutation of "
                    f"0..{rank - 1} (its input has rank {rank})"
                )
    return early_guard(op)


def _ends_function_wrongly(op: Operation) -> bool:
    """Whether ``op`` ends a block of a function without returning or branching: xDSL 0.75
    accepts a ``linalg.yield`` there (its verifier does not ask for a linalg parent)."""
    block = op.parent_block()
    return (
        block is not None
        and block.last_op is op
        and isinstance(op.parent_op(), FuncOp)
        and not isinstance(op, ReturnOp)
        and not op.successors
        and op.has_trait(IsTerminator)
    )


def _innermost_failure(root: Operation) -> tuple[Operation, Exception]:
    """The op under ``root`` (which fails to verify) that a walk meets first failing, with
    its error: its own verifier's, else that of its blocks' structure (an empty block where
    a terminator belongs), as its full verification reported it. Run only once the module
    failed: it verifies subtrees again on the way down, O(ops x depth)."""
    op, error = root, None
    while True:
        try:
            op.verify(verify_nested_ops=False)
        except Exception as err:
            return op, err
        for child in (c for r in op.regions for b in r.blocks for c in b.ops):
            try:
                child.verify()
            except Exception as err:
                op, error = child, err
                break
        else:  # its own verifier and its ops pass: its blocks' structure fails
            if error is None:
                try:
                    op.verify()
                except Exception as err:
                    return op, err
                return op, VerifyException(f"'{op.name}' fails to verify")
            return op, error


def verify_located(module: ModuleOp) -> None:
    """Verify ``module`` — every op's verifier, tp's checks of what xDSL lets through
    (`tp_dialect.op_guards.late_guard`), SSA dominance and chip indices — or raise a
    TpDiagnostic at the op that fails, never anything else: an op xDSL's verifier would
    crash on (`upstream_guard`, or any exception but a diagnostic) is named as malformed."""
    functions: list[FuncOp] = []
    for op in module.walk():  # one walk: the guards, and the functions to look at after
        if isinstance(op, FuncOp):
            functions.append(op)
        elif (why := upstream_guard(op)) is not None:
            raise TpDiagnostic(op, why)
        elif isinstance(op, ModuleOp) and (chips := op.attributes.get(CHIPS_ATTR)) is not None:
            if (why := chips_problem(chips)) is not None:  # before the ops that read it
                raise TpDiagnostic(op, why)
    try:
        module.verify()
    except Exception:
        op, err = _innermost_failure(module)
        if isinstance(err, DiagnosticException):
            raise TpDiagnostic(op, str(err)) from None
        # xDSL's verifier crashed on it: the op is malformed
        why = f"'{op.name}' is malformed: xDSL's verifier fails on it ({described(err)})"
        raise TpDiagnostic(op, why) from None
    for op in module.walk():  # once every op's own verifier has had its say: tp's checks
        if (why := late_guard(op)) is not None:
            raise TpDiagnostic(op, why)
    for func in functions:
        for block in func.body.blocks:
            last = block.last_op
            if last is not None and _ends_function_wrongly(last):
                raise TpDiagnostic(
                    last, f"'{last.name}' ends a function: a function's blocks end with func.return"
                )
    try:
        check_dominance(module)
        check_chip_indices(module)
    except DiagnosticException as err:
        raise TpDiagnostic(getattr(err, "op", None), str(err)) from None


def decode_source(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text, or a `ProgramError` at the first byte that is not (a binary
    file given as a program: xDSL would see only text)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ProgramError(
            f"{name}:{line}:{col}: error: not UTF-8 text (byte 0x{data[err.start]:02x}): a "
            "program is MLIR text"
        ) from None


MAX_SOURCE_BYTES = 64 << 20
"""The largest program tp reads, 64 MiB: eight times tp's largest (36 qwen3-8b layers lowered
for 8 chips, 8.5 MB), and minutes of xDSL's parsing (about 0.3 MB a second)."""


def read_source(path: str | None, what: str = "input") -> tuple[str, str]:
    """The text of the program at ``path`` (stdin if None or ``-``) and the name to locate
    errors with. At most `MAX_SOURCE_BYTES` are read — a regular file's size is checked before
    reading, anything else (a pipe, ``/dev/zero``) is read no further than that — and more
    is a UserError, as is a file that cannot be read; text that is not UTF-8 is a located
    `ProgramError`."""
    if path is None or path == "-":
        stream = getattr(sys.stdin, "buffer", None)  # a text stream in tests: no bytes
        data = _bounded(stream or sys.stdin, "stdin", what)
        return (decode_source(data, "stdin") if isinstance(data, bytes) else data), "stdin"
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > MAX_SOURCE_BYTES:
                raise UserError(_too_large(what, path))
            data = _bounded(f, path, what)
    except OSError as err:
        raise UserError(f"cannot read {what} '{path}': {err.strerror}") from None
    return decode_source(data, path), path


def _bounded(stream: IO[AnyStr], name: str, what: str) -> AnyStr:
    data = stream.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise UserError(_too_large(what, name))
    return data


def _too_large(what: str, name: str) -> str:
    return (
        f"{what} '{name}' is larger than {MAX_SOURCE_BYTES >> 20} MiB: tp reads programs of "
        f"at most {MAX_SOURCE_BYTES} bytes"
    )


def load_program(ctx: Context, path: str) -> ModuleOp:
    """Parse and verify the program in ``path``; a located `ProgramError` if it is bad."""
    return load_program_mapped(ctx, path)[0]


def load_program_mapped(ctx: Context, path: str) -> tuple[ModuleOp, SourceMap]:
    """`load_program`, with where each op of the program is in ``path``."""
    text, name = read_source(path, "program")
    try:
        module, source_map = parse_module(ctx, text, name)
    except ParseError as err:
        raise ProgramError(parse_error_message(err)) from None
    except DiagnosticException as err:
        raise ProgramError(located(name, None, str(err).split("\n")[0])) from None
    try:
        verify_located(module)
    except TpDiagnostic as err:
        raise ProgramError(located(name, source_map.locate(err.op), err.message)) from None
    return module, source_map


class ProgramError(LocatedError):
    """A program that does not parse or verify, its message already located."""
