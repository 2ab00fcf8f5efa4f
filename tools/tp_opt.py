"""tp-opt: xdsl-opt with the tp dialect and passes, mlir-opt-style pass flags, and
located errors.

``tp-opt in.mlir --tp-relocate --tp-phase`` runs those passes in the order given (after
any ``-p`` pipeline); a pass's options are spelled mlir-opt style,
``--tp-relocate=allreduce=ring`` or ``--tp-fuse="shim=sn40l report=true"``. Every
xdsl-opt flag keeps working. Bad input never ends in a traceback: a parse error, a
verifier failure, an unknown pass or option, or a pass's refusal prints
``file:line:col: error: ...`` with the line and a caret, and exits 1 — xDSL's own failures
on malformed input included (`tools.source` guards them), and a module a pass cannot take
(no entry function, branches, too many chips: `passes.preconditions`) refused before the
pass runs. Output is written whole or not at all.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from io import StringIO

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.universe import Universe
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.passes import TP_PASSES
from tp_dialect.passes.preconditions import entry_of
from tp_dialect.runtime.progress import Progress, reporting
from tp_dialect.signature import BindError
from tp_dialect.tools.common import (
    LocatedError,
    UserError,
    adopt,
    check_writable,
    run_tool,
    write_output,
)
from tp_dialect.tools.pipeline import PassFlag, build_pipeline, quote_pipeline_paths
from tp_dialect.tools.source import (
    SourceMap,
    described,
    located,
    parse_error_message,
    parse_module,
    read_source,
    verify_located,
)
from tp_dialect.universe import register_tp


@contextmanager
def _plugins_scanned_once() -> Iterator[None]:
    """xdsl-opt's set-up asks for the installed plugins four times, and xDSL 0.75 scans every
    installed package's entry points each time (30 ms a scan here, in every tp-opt started):
    while it runs, the first scan answers."""
    scan = Universe.get_multiverse
    Universe.get_multiverse = staticmethod(functools.cache(scan))  # type: ignore[method-assign]
    try:
        yield
    finally:
        Universe.get_multiverse = staticmethod(scan)  # type: ignore[method-assign]


class TpOptMain(xDSLOptMain):
    """xdsl-opt plus the tp dialect, its passes, pass flags and located errors."""

    def __init__(self, args: Sequence[str] | None = None):
        self._progress = Progress(StringIO())  # silent until run() draws on stderr
        with _plugins_scanned_once():
            super().__init__(
                description="tp-opt: the tp tensor-parallel compiler driver", args=args
            )

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        register_tp(self.ctx)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in TP_PASSES.items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        adopt(arg_parser)  # xDSL builds it: one-line errors, "did you mean", no abbreviations
        super().register_all_arguments(arg_parser)
        arg_parser.set_defaults(flag_pipeline=[])
        arg_parser.add_argument(
            "--verify-each",
            action="store_true",
            help="verify the IR after every pass (default: the input and the final output)",
        )
        group = arg_parser.add_argument_group(
            "tp passes (mlir-opt style: run in the order given, after -p; options as "
            '--PASS=opt=val or --PASS="opt1=v1 opt2=v2")'
        )
        summaries: dict[argparse.Action, Callable[[], type[ModulePass]]] = {}
        for name, factory in sorted(self.available_passes.items()):
            is_tp = name in TP_PASSES
            action = (group if is_tp else arg_parser).add_argument(
                f"--{name}",
                dest=f"pass_flag:{name}",
                action=PassFlag,
                nargs="?",
                metavar="OPTIONS",
                help="" if is_tp else argparse.SUPPRESS,
            )
            if is_tp:
                summaries[action] = factory
        # A pass's summary is its class's docstring: read only when --help is printed, so
        # that a run imports the passes it runs and no other (a third of tp-opt's start).
        format_help = arg_parser.format_help

        def format_help_with_summaries() -> str:
            for action, factory in summaries.items():
                action.help = _summary(factory)
            return format_help()

        arg_parser.format_help = format_help_with_summaries  # type: ignore[method-assign]

    def setup_pipeline(self) -> None:
        passes = quote_pipeline_paths(self.args.passes)
        spec = ",".join(p for p in (passes, *self.args.flag_pipeline) if p)

        done = 0  # passes this chunk has run

        def between(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            nonlocal done
            if self.args.time_passes and prev is not None:
                print(f"Pass {prev.name} took {time.perf_counter() - self._t0} seconds")
            # The input and the final output are verified; between passes only with
            # --verify-each (passes are tested to keep the IR valid, and verifying a
            # 36-layer program costs as much as a pass).
            at_edge = prev is None or nxt is None
            if not self.args.disable_verify and (at_edge or self.args.verify_each):
                what = "the input" if prev is None else "the output" if nxt is None else prev.name
                self._progress.say(f"verifying {what}", force=True)
                verify_located(module)
            if nxt is not None:
                done = 0 if prev is None else done + 1
                of = len(self.pipeline.passes)
                self._progress.say(f"{nxt.name} (pass {done + 1} of {of})", force=True)
            if nxt is not None and nxt.name in _CHECKED_HERE:
                # tp-split reads the entry function as one block but does not check it
                # itself: refused here, as the other tp passes refuse it.
                entry_of(module, nxt.name)
            if prev and nxt and self.args.print_between_passes:
                print(f"IR after {prev.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            self._t0 = time.perf_counter()

        self._t0 = time.perf_counter()
        self.pipeline = build_pipeline(self.available_passes, spec, between)

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
        progress = self._progress

        def parsed(at: int) -> None:
            if progress.live:
                progress.say(f"parsing {name} ({at * 100 // max(len(chunk), 1)}%)")

        module, source_map = _parse(self, chunk, name, offset, parsed)
        self._check_target(module)
        try:
            self.apply_passes(module)
        except TpDiagnostic as err:
            raise LocatedError(located(name, source_map.locate(err.op), err.message)) from None
        except DiagnosticException as err:
            raise LocatedError(located(name, None, _first_line(err))) from None
        except BindError as err:  # a pass that found no entry function: the module's fault
            where = source_map.locate(module)
            raise LocatedError(located(name, where, _first_line(err))) from None
        self._check_target(module)
        progress.say("printing", force=True)
        try:
            return self.output_resulting_program(module)
        except Exception as err:  # xDSL's printer failing on an op it accepted
            if self._target != "mlir":
                # (an assertion's message is the op's text, many lines: its type says enough)
                why = described(err) if "\n" not in str(err) else type(err).__name__
                raise UserError(
                    f"-t {self._target}: xDSL's {self._target} target cannot emit this module "
                    f"({why}); {_WHAT_TP_EMITS}"
                ) from None
            op = _unprintable(module)
            if op is None:
                raise
            why = f"'{op.name}' cannot be printed: xDSL's printer fails on it ({described(err)})"
            raise LocatedError(located(name, source_map.locate(op), why)) from None

    @property
    def _target(self) -> str:
        return parse_spec(self.args.target).name

    def _check_target(self, module: ModuleOp) -> None:
        """Refuse to emit a tp program to any target but MLIR (xDSL's others emit only
        IR of their own dialects: they crash on a tp program, or print nothing)."""
        if self._target != "mlir" and _is_tp_program(module):
            raise UserError(
                f"-t {self._target}: xDSL's {self._target} target cannot emit tp programs (it "
                f"emits only IR of its own dialects); {_WHAT_TP_EMITS}"
            )

    def run(self) -> None:
        check_writable(self.args.output_file)
        text, name = read_source(self.args.input_file)
        out = StringIO()
        # A line on the terminal for a long pipeline (a 36-layer lowering takes seconds),
        # cleared before the output is written; nothing on a pipe (`progress.shows`), nor
        # when the passes print as they run.
        printing = self.args.print_between_passes or self.args.time_passes
        stream = StringIO() if printing else sys.stderr
        with reporting(stream, label="tp-opt", clear=True) as self._progress:
            for i, (chunk, offset) in enumerate(self._chunks(text)):
                if i > 0:
                    out.write("// -----\n")
                try:
                    out.write(self._process(chunk, name, offset))
                except LocatedError as err:
                    if not (self.args.verify_diagnostics or self.args.parsing_diagnostics):
                        raise
                    out.write(f"{err}\n")
        write_output(self.args.output_file, out.getvalue())


def _parse(
    tool: TpOptMain, chunk: str, name: str, offset: int, on_op: Callable[[int], None]
) -> tuple[ModuleOp, SourceMap]:
    try:
        module, source_map = parse_module(tool.ctx, chunk, name, offset, on_op)
    except ParseError as err:
        raise LocatedError(parse_error_message(err, offset)) from None
    except DiagnosticException as err:  # an attribute's verifier, run while parsing
        raise LocatedError(located(name, None, _first_line(err))) from None
    return module, source_map  # verified by the pipeline before its first pass


_WHAT_TP_EMITS = "tp emits MLIR (-t mlir, the default): tp-run runs it, tp-opt lowers it"


def _is_tp_program(module: ModuleOp) -> bool:
    """Whether ``module`` holds tp IR: an op of the tp dialect, or a ``tp.`` attribute (the
    chip count, a function argument's tp.name)."""
    for op in module.walk():
        if op.name.startswith("tp."):
            return True
        for name, attr in (*op.attributes.items(), *op.properties.items()):
            if name.startswith("tp.") or _names_tp(attr):
                return True
    return False


def _names_tp(attr: Attribute) -> bool:
    """Whether ``attr`` is a list of dictionaries (a function's argument or result
    attributes) with a ``tp.`` key."""
    return isinstance(attr, ArrayAttr) and any(
        isinstance(d, DictionaryAttr) and any(k.startswith("tp.") for k in d.data)
        for d in attr.data
    )


_CHECKED_HERE = frozenset({"tp-split"})
"""tp passes whose input expectations (`entry_of`) tp-opt checks before they run."""


def _unprintable(module: ModuleOp) -> Operation | None:
    """An op of ``module`` xDSL's printer fails on, nested ones first (each op's printing
    prints what it holds: its ancestors fail too); None if every op prints."""
    for op in reversed(list(module.walk())):
        try:
            Printer(stream=StringIO()).print_op(op)
        except Exception:
            return op
    return None


def _first_line(err: BaseException) -> str:
    return " ".join(str(err).split("\n")[0].split()) or type(err).__name__


def _summary(factory: Callable[[], type[ModulePass]]) -> str:
    doc = (factory().__doc__ or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ") if doc else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 on any user-facing error (never a traceback)."""

    def body(args: Sequence[str] | None) -> int:
        TpOptMain(args=args).run()
        return 0

    return run_tool("tp-opt", body, argv)


if __name__ == "__main__":
    sys.exit(main())
