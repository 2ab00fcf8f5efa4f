"""tp-opt: xdsl-opt with the tp dialect and passes, mlir-opt-style pass flags, and
located errors.

``tp-opt in.mlir --tp-relocate --tp-phase`` runs those passes in the order given (after
any ``-p`` pipeline); a pass's options are spelled mlir-opt style,
``--tp-relocate=allreduce=ring`` or ``--tp-fuse="shim=sn40l report=true"``. Every
xdsl-opt flag keeps working. Bad input never ends in a traceback: a parse error, a
verifier failure, an unknown pass or option, or a pass's refusal prints
``file:line:col: error: ...`` with the line and a caret, and exits 1. Output is written
whole or not at all.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from io import StringIO
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpecParseError
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import check_chip_indices
from tp_dialect.passes import TP_PASSES
from tp_dialect.tools.source import (
    SourceMap,
    located,
    parse_error_message,
    parse_module,
)
from tp_dialect.universe import register_tp


class UserError(Exception):
    """A one-line error for the user (no location): bad flags, missing files."""


class _PassFlag(argparse.Action):
    """``--<pass>[=options]``: appends the pass to the flag pipeline, keeping order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name = self.dest.removeprefix("pass_flag:")
        spec = name if values is None else f"{name}{{{values}}}"
        namespace.flag_pipeline.append(spec)


def verify_located(module: ModuleOp) -> None:
    """Verify ``module`` op by op, so a failure names the op that failed."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as err:
            raise TpDiagnostic(op, str(err)) from None
    try:
        check_chip_indices(module)
    except DiagnosticException as err:
        raise TpDiagnostic(getattr(err, "op", None), str(err)) from None


class TpOptMain(xDSLOptMain):
    """xdsl-opt plus the tp dialect, its passes, pass flags and located errors."""

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="tp-opt: the tp tensor-parallel compiler driver", args=args)

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        register_tp(self.ctx)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in TP_PASSES.items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.set_defaults(flag_pipeline=[])
        group = arg_parser.add_argument_group(
            "tp passes (mlir-opt style: run in the order given, after -p; options as "
            '--PASS=opt=val or --PASS="opt1=v1 opt2=v2")'
        )
        for name, factory in sorted(self.available_passes.items()):
            is_tp = name in TP_PASSES
            summary = _summary(factory) if is_tp else argparse.SUPPRESS
            (group if is_tp else arg_parser).add_argument(
                f"--{name}",
                dest=f"pass_flag:{name}",
                action=_PassFlag,
                nargs="?",
                metavar="OPTIONS",
                help=summary,
            )

    def setup_pipeline(self) -> None:
        spec = ",".join(p for p in (self.args.passes, *self.args.flag_pipeline) if p)

        def between(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            if self.args.time_passes and prev is not None:
                print(f"Pass {prev.name} took {time.perf_counter() - self._t0} seconds")
            if not self.args.disable_verify:
                verify_located(module)
            if prev and nxt and self.args.print_between_passes:
                print(f"IR after {prev.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            self._t0 = time.perf_counter()

        self._t0 = time.perf_counter()
        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, spec, between)
        except (ValueError, ArgSpecParseError, TypeError) as err:
            known = ", ".join(sorted(TP_PASSES)) or "(none yet)"
            raise UserError(f"bad pass pipeline '{spec}': {err} (tp passes: {known})") from None

    def _read_input(self) -> tuple[str, str]:
        if self.args.input_file is None:
            return sys.stdin.read(), "stdin"
        try:
            with open(self.args.input_file, encoding="utf-8") as f:
                return f.read(), self.args.input_file
        except OSError as err:
            raise UserError(f"cannot read input '{self.args.input_file}': {err.strerror}") from None

    def _chunks(self, text: str) -> list[tuple[str, int]]:
        if not self.args.split_input_file:
            return [(text, 0)]
        chunks, offset = [], 0
        for chunk in text.split("// -----"):
            chunks.append((chunk, offset))
            offset += chunk.count("\n")
        return chunks

    def _process(self, chunk: str, name: str, offset: int) -> str:
        """One chunk parsed, verified, run through the pipeline and printed."""
        module, source_map = _parse(self, chunk, name, offset)
        try:
            self.apply_passes(module)
        except TpDiagnostic as err:
            raise _LocatedError(located(name, source_map.locate(err.op), err.message)) from None
        except DiagnosticException as err:
            raise _LocatedError(located(name, None, _first_line(err))) from None
        return self.output_resulting_program(module)

    def run(self) -> None:
        text, name = self._read_input()
        out = StringIO()
        for i, (chunk, offset) in enumerate(self._chunks(text)):
            if i > 0:
                out.write("// -----\n")
            try:
                out.write(self._process(chunk, name, offset))
            except _LocatedError as err:
                if not (self.args.verify_diagnostics or self.args.parsing_diagnostics):
                    raise
                out.write(f"{err}\n")
        _write_whole(self.args.output_file, out.getvalue())


class _LocatedError(Exception):
    """A formatted, located error (message already includes file:line:col)."""


def _parse(tool: TpOptMain, chunk: str, name: str, offset: int) -> tuple[ModuleOp, SourceMap]:
    try:
        module, source_map = parse_module(tool.ctx, chunk, name, offset)
    except ParseError as err:
        raise _LocatedError(parse_error_message(err, offset)) from None
    except DiagnosticException as err:  # an attribute's verifier, run while parsing
        raise _LocatedError(located(name, None, _first_line(err))) from None
    if not tool.args.disable_verify:
        try:
            verify_located(module)
        except TpDiagnostic as err:
            raise _LocatedError(located(name, source_map.locate(err.op), err.message)) from None
    return module, source_map


def _first_line(err: BaseException) -> str:
    return " ".join(str(err).split("\n")[0].split()) or type(err).__name__


def _summary(factory: Callable[[], type[ModulePass]]) -> str:
    doc = (factory().__doc__ or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ") if doc else ""


def _write_whole(path: str | None, text: str) -> None:
    """Write ``text`` to ``path`` atomically (or to stdout when no path is given)."""
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomically(path, text)


def write_atomically(path: str, text: str) -> None:
    """``path`` holds ``text`` whole, or is left as it was."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tp-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 on any user-facing error (never a traceback)."""
    try:
        TpOptMain(args=argv).run()
    except SystemExit as exit_:
        # argparse exits 2 on a bad flag; every user error here is exit 1.
        return 1 if exit_.code == 2 else int(exit_.code or 0)
    except _LocatedError as err:
        print(err, file=sys.stderr)
        return 1
    except UserError as err:
        print(f"tp-opt: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"tp-opt: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a bug in xDSL or tp, not the user's: one line still
        if os.environ.get("TP_DEBUG"):
            raise
        print(
            f"tp-opt: internal error: {type(err).__name__}: {err} "
            "(set TP_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
