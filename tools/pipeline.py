"""tp-opt's pass pipeline: the ``-p`` text and the pass flags read alike, and every way a
pipeline can be wrong said in one line.

``-p "tp-split{plan=x.json}"`` reads as ``--tp-split=plan=x.json`` (a value that is not a
word or a number is quoted for xDSL's parser). A pipeline xDSL cannot parse, an unknown pass
or option, a value of the wrong type, an option given twice and a pass that cannot run here
(``mlir-opt[...]`` without mlir-opt installed) are each
``tp-opt: error: bad pass pipeline '...': <what is wrong>`` — xDSL's own message for a syntax
error is five lines with a caret; here it is the column and what is there.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from collections.abc import Callable
from typing import Any

from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.transforms.mlir_opt import MLIROptPass
from xdsl.utils.arg_spec import ArgSpecParseError, PipelineLexer, SpecTokenKind, parse_pipeline

from tp_dialect.passes import TP_PASSES
from tp_dialect.tools.common import UserError


class PassFlag(argparse.Action):
    """``--<pass>[=options]``: appends the pass to the flag pipeline, keeping order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name = self.dest.removeprefix("pass_flag:")
        spec = name if values is None else f"{name}{{{quote_paths(values)}}}"
        namespace.flag_pipeline.append(spec)


def quote_paths(options: str) -> str:
    """``key=value`` options with each bare value that is not a word or a number (or a
    comma-separated list of them) quoted, so ``--tp-split="plan=plans/qwen3.json"`` reads as
    xDSL's ``plan="plans/qwen3.json"``."""
    try:
        tokens = shlex.split(options)
    except ValueError:
        return options  # unbalanced quotes: xDSL's parser says where
    out = []
    for token in tokens:
        key, eq, value = token.partition("=")
        if eq and not _BARE_VALUES.fullmatch(value):
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(f"{key}{eq}{value}")
    return " ".join(out)


_BARE = r"(?:[A-Za-z0-9_+-]+|-?[0-9.]+(?:e-?[0-9]+)?)"
_BARE_VALUES = re.compile(f"(?:{_BARE}(?:,{_BARE})*)?")
_OPTIONS = re.compile(r'\[[^\]]*\]|\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')
"""In a ``-p`` pipeline: an ``mlir-opt[...]`` pipeline (left alone), or a pass's options."""


def quote_pipeline_paths(pipeline: str) -> str:
    """A ``-p`` pipeline with each pass's options read as the flag form reads them
    (`quote_paths`): ``-p "tp-split{plan=x.json}"`` is ``--tp-split=plan=x.json``."""

    def quoted(match: re.Match[str]) -> str:
        options = match.group(1)
        return match.group(0) if options is None else "{" + quote_paths(options) + "}"

    return _OPTIONS.sub(quoted, pipeline)


def build_pipeline(
    available: dict[str, Callable[[], type[ModulePass]]],
    spec: str,
    callback: PassPipelineCallbackType,
) -> PassPipeline:
    """The pipeline ``spec`` states, every pass built and ready to run; a UserError
    ``bad pass pipeline '<spec>': <what is wrong>`` (one line) when it cannot be."""
    shown = _one_line(spec)
    try:
        list(parse_pipeline(spec))  # the syntax first: the checks below read its tokens
    except ArgSpecParseError as err:
        raise UserError(f"bad pass pipeline '{shown}': {_syntax_error(str(err), spec)}") from None
    problem = _repeated_option(spec)
    if problem:
        raise UserError(f"bad pass pipeline '{shown}': {problem}")
    try:
        pipeline = PassPipeline.parse_spec(available, spec, callback)
    except (ValueError, TypeError) as err:
        why = _one_line(str(err)).strip()
        if why.startswith("Unrecognized passes"):
            why += f" (tp passes: {', '.join(sorted(TP_PASSES))})"
        raise UserError(f"bad pass pipeline '{shown}': {why}") from None
    problem = _cannot_run(pipeline.passes)
    if problem:
        raise UserError(f"bad pass pipeline '{shown}': {problem}")
    return pipeline


def _one_line(text: str) -> str:
    """``text`` with each line break (or other vertical space) a space: the same columns."""
    return re.sub(r"[\n\r\f\v\t]", " ", text)


_WHERE = re.compile(r"^pass-pipeline:(\d+):(\d+)$", re.MULTILINE)


def _syntax_error(printed: str, spec: str) -> str:
    """xDSL's five-line syntax error (a header, ``pass-pipeline:L:C``, the line, a caret and
    the message) as ``at column C ('x'): message``, C counted in ``spec`` as one line."""
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    message = lines[-1].removesuffix(" here") if lines else "cannot be parsed"
    message = message[:1].lower() + message[1:]
    where = _WHERE.search(printed)
    if where is None:  # not the layout xDSL 0.75 prints: its message alone
        return message
    line, col = int(where.group(1)), int(where.group(2))
    offset = sum(len(s) + 1 for s in spec.split("\n")[: line - 1]) + col - 1
    found = f"'{_one_line(spec[offset])}'" if offset < len(spec) else "the end"
    return f"at column {offset + 1} ({found}): {message}"


def _repeated_option(spec: str) -> str | None:
    """``option 'x' of pass is given twice`` when a pass's options state one twice (xDSL
    keeps the last, silently; mlir-opt refuses it), else None. ``spec`` parses."""
    seen: set[str] = set()
    pass_name, in_options, name_next = "", False, False
    for token in PipelineLexer._generator(spec):  # pyright: ignore[reportPrivateUsage]
        kind, text = token.kind, token.span.text
        if kind is SpecTokenKind.L_BRACE:
            seen, in_options, name_next = set(), True, True
        elif kind is SpecTokenKind.R_BRACE:
            in_options = name_next = False
        elif not in_options:
            if kind is SpecTokenKind.IDENT:
                pass_name = text
        elif kind is SpecTokenKind.SPACE:
            name_next = True  # options are separated by spaces; a value holds none
        elif kind is SpecTokenKind.IDENT and name_next:
            key = text.replace("-", "_")  # as xDSL reads option names
            if key in seen:
                return f"option '{text}' of {pass_name} is given twice: state it once"
            seen.add(key)
            name_next = False
    return None


def _cannot_run(passes: tuple[ModulePass, ...]) -> str | None:
    """Why a pass of the pipeline cannot run on this machine, or None: xDSL's ``mlir-opt``
    pass runs an ``mlir-opt`` executable, and fails at its turn (after the passes before it)
    when there is none."""
    for built in passes:
        if isinstance(built, MLIROptPass) and shutil.which(built.executable) is None:
            return (
                f"the mlir-opt pass runs '{built.executable}', which is not installed "
                "(XDSL_MLIR_OPT names another)"
            )
    return None
