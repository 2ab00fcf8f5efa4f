"""tp-generate: greedy tokens from a Hugging Face model directory on N chips.

Guarantees: the ids printed are those the directory's model generates greedily (one prefill,
then a decode step per token; the KV cache stays on its chips between steps), from step
programs split over ``--chips`` by the family's Hugging Face plan, certified and lowered to
``--stage``; the time to first token and per output token are measured on the run; bad input
is one line and exit 1; ``--report`` is written whole or not at all.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tp_dialect.collectives import WIRES
from tp_dialect.runtime.generation import GenerationResult
from tp_dialect.tools.common import (
    ToolParser,
    UserError,
    at_least,
    check_writable,
    run_tool,
    write_atomically,
)

TOOL = "tp-generate"


def parser() -> ToolParser:
    p = ToolParser(
        prog=TOOL,
        description="Generate greedy tokens from a Hugging Face model directory on N chips.",
    )
    p.add_argument("model", help="a model directory (config.json + model.safetensors)")
    ids = p.add_mutually_exclusive_group(required=True)
    ids.add_argument(
        "--prompt-ids",
        action="append",
        metavar="ID,ID,...",
        help="a prompt's token ids; repeat for a batch (rows of equal length)",
    )
    ids.add_argument(
        "--prompt", help="a prompt's text (needs DIR/tokenizer.json and the tokenizers extra)"
    )
    p.add_argument("--max-new-tokens", type=at_least(1, int), default=16, metavar="K")
    p.add_argument("--chips", type=at_least(1, int), default=1, metavar="N")
    p.add_argument(
        "--max-positions",
        type=at_least(1, int),
        metavar="P",
        help="the KV cache's positions (default: the prompt plus K, rounded up to 16)",
    )
    p.add_argument(
        "--stage",
        choices=["source", "relocated", "phased", "programs"],
        default="programs",
        help="how far the programs are lowered before they run (default: programs)",
    )
    p.add_argument(
        "--logits",
        metavar="FILE.npz",
        help="write each step's gathered logits here (an array [steps, B, V] named 'logits')",
    )
    p.add_argument(
        "--wire",
        choices=list(WIRES),
        help="all-reduces whose readers read bf16 carry bf16 (tp-narrow-wire; default f32)",
    )
    p.add_argument("--report", help="write ids, ttft_s and tpot_s here (JSON)")
    p.add_argument(
        "--mpi", type=at_least(1, int), metavar="N", help="run as N MPI ranks, one per chip"
    )
    p.add_argument(
        "--backend",
        choices=["interpreter", "iree", "mpi"],
        default="interpreter",
        help="iree: the chips' programs compiled by IREE to native code (pip install "
        "'tp-dialect[iree]'); mpi: this process is one rank under the user's mpiexec",
    )
    p.add_argument(
        "--engine",
        choices=["interpreter", "iree"],
        default="interpreter",
        help="with --backend mpi: what runs a rank's chip (--mpi N --backend iree sets iree)",
    )
    p.add_argument(
        "--timeout",
        type=at_least(0, float, strict=True),
        default=600.0,
        metavar="S",
        help="--mpi: stop the ranks after S seconds (default 600)",
    )
    return p


def prompt_of(args: argparse.Namespace, model_dir: Path) -> np.ndarray:
    """The prompt as ``[B, S]`` ids: ``--prompt-ids`` rows, or ``--prompt`` tokenized."""
    rows: list[str] | None = args.prompt_ids
    if rows is not None:
        parsed = []
        for row in rows:
            try:
                parsed.append([int(t) for t in row.split(",") if t.strip() != ""])
            except ValueError:
                raise UserError(f"--prompt-ids {row}: not a list of integers") from None
        if len({len(r) for r in parsed}) > 1:
            raise UserError("--prompt-ids rows differ in length (left padding is not modelled)")
        return np.array(parsed, dtype=np.int64).reshape(len(parsed), -1)
    return tokenize(model_dir, args.prompt)


def tokenize(model_dir: Path, text: str) -> np.ndarray:
    """``text`` as one row of ids by the directory's ``tokenizer.json``."""
    tokenizer = _tokenizer(model_dir)
    return np.array([tokenizer.encode(text).ids], dtype=np.int64)


def _tokenizer(model_dir: Path):  # type: ignore[no-untyped-def]
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise UserError(f"--prompt needs {path}; give --prompt-ids instead")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UserError(
            "--prompt needs the tokenizers package (pip install 'tp-dialect[text]'); "
            "give --prompt-ids instead"
        ) from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as err:  # the tokenizers library's own error types
        raise UserError(f"cannot read {path}: {err}") from None


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    model_dir = Path(args.model)
    check_writable(args.report, args.logits)
    prompt = prompt_of(args, model_dir)
    if args.mpi is not None:
        return _launch(args, list(sys.argv[1:] if argv is None else argv))
    from tp_dialect.serving.model import load

    positions = args.max_positions or -(-(prompt.shape[1] + args.max_new_tokens) // 16) * 16
    started = time.perf_counter()
    model = load(
        model_dir,
        chips=args.chips,
        max_positions=positions,
        batch=prompt.shape[0],
        stage=args.stage,
        logits=args.logits is not None,
        backend=args.backend,
        engine=args.engine,
        wire=args.wire,
    )
    if model is None:  # a serving rank under mpiexec: rank 0 speaks
        return 0
    try:
        shown = _Shown(args.max_new_tokens)
        result = model.generate(prompt, args.max_new_tokens, on_token=shown)
        shown.close()
    finally:
        model.close()
    total = time.perf_counter() - started
    where = (
        f"{args.chips} chip(s)"
        + {"mpi": " as MPI ranks", "iree": " on IREE"}.get(args.backend, "")
        + (" on IREE" if args.engine == "iree" else "")
    )
    print(f"{TOOL}: {model.config['model_type']} on {where}, stage {args.stage}")
    for row, ids in enumerate(result.ids.tolist()):
        print(f"row {row}: {' '.join(map(str, ids))}")
        text = _decoded(model_dir, ids) if args.prompt is not None else None
        if text is not None:
            print(f"row {row} text: {text}")
    tpot = "-" if result.tpot_s is None else f"{result.tpot_s * 1e3:.1f} ms"
    print(
        f"time to first token {result.ttft_s * 1e3:.1f} ms, time per output token {tpot} "
        f"(programs built and weights placed in {total - _spent(result):.1f} s)"
    )
    if args.report:
        write_atomically(args.report, json.dumps(result.to_json(), indent=2) + "\n")
    if args.logits:
        out = io.BytesIO()
        np.savez(out, logits=np.stack(result.logits))
        write_atomically(args.logits, out.getvalue())
    return 0


def _spent(result: GenerationResult) -> float:
    ids = result.ids
    tpot = result.tpot_s or 0.0
    return float(result.ttft_s + tpot * max(ids.shape[1] - 1, 0))


def _decoded(model_dir: Path, ids: list[int]) -> str:
    return str(_tokenizer(model_dir).decode(ids))


class _Shown:
    """A progress line on the user's terminal: tokens made of the most asked."""

    def __init__(self, total: int) -> None:
        from tp_dialect.runtime.progress import Progress, delay

        self.total = total
        self.line = Progress(sys.stderr, after=delay(), label=TOOL, clear=True)

    def __call__(self, k: int, ids: np.ndarray) -> None:
        self.line.say(f"token {k + 1}/{self.total}", force=k + 1 == self.total)

    def close(self) -> None:
        self.line.close()


def _launch(args: argparse.Namespace, argv: list[str]) -> int:
    """``--mpi N``: this command again under ``mpiexec -n N`` with ``--backend mpi``,
    bounded by ``--timeout``; the ranks' output passed on, an error as one line."""
    from tp_dialect.runtime import mpi_exec
    from tp_dialect.runtime.launch import rank_env, run_bounded
    from tp_dialect.tools.run_mpi import _mpiexec, strip_mpi, without_banner

    ranks: int = args.mpi
    if args.backend == "mpi":
        raise UserError("--mpi starts its own ranks: give --mpi N or --backend mpi, not both")
    if args.chips not in (1, ranks):
        raise UserError(f"--mpi {ranks} runs one rank per chip: give --chips {ranks} or omit it")
    mpi_exec.load_mpi()
    cmd = [sys.executable, "-m", "tp_dialect.tools.tp_generate", *strip_mpi(argv)]
    cmd += ["--chips", str(ranks), "--backend", "mpi"]
    cmd += ["--engine", "iree"] if args.backend == "iree" else []
    with tempfile.TemporaryDirectory(prefix="tp-mpi-") as pids:
        cmd = mpi_exec.guarded(ranks, cmd, pids, _mpiexec())
        env = {**rank_env(ranks), mpi_exec.PID_DIR_ENV: pids}
        try:
            proc = run_bounded(cmd, env, args.timeout, None)
        except subprocess.TimeoutExpired:
            raise UserError(
                f"the {ranks} MPI rank(s) did not finish within {args.timeout:g} s"
            ) from None
        recorded = mpi_exec.recorded_errors(pids)
        died = mpi_exec.first_death(pids)
    sys.stdout.write(without_banner(proc.stdout, proc.returncode))
    errors = said_errors(proc.stderr, recorded)
    if errors:
        print(errors[0], file=sys.stderr)
    if proc.returncode != 0:
        if not errors:
            print(
                f"{TOOL}: error: {died or 'an MPI rank stopped'} (mpiexec exit code "
                f"{proc.returncode})",
                file=sys.stderr,
            )
        return 1
    return 0


def said_errors(err: str, recorded: list[str]) -> list[str]:
    """The ranks' error lines, each as ``tp-generate: error: ...``: rank 0's own, a serving
    rank's (``error: rank N: ...``, which the runtime says without a tool's name) from
    ``err``, or else the ones they recorded for the launcher (mpiexec may lose a rank's stderr
    when it tears the world down)."""
    from tp_dialect.tools.run_mpi import rank_lines

    err = re.sub(r"(?<=[^\n])(?<!: )(?=error: rank \d+: )", "\n", err)  # lines run together
    lines = [line for line in rank_lines(err, TOOL) if "error:" in line]
    lines += [f"{TOOL}: {line}" for line in dict.fromkeys(err.splitlines()) if _SERVED(line)]
    return lines or [line if line.startswith(TOOL) else f"{TOOL}: {line}" for line in recorded]


_SERVED = re.compile(r"error: rank \d+: ").match


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 with one line on any error, never a traceback."""
    from tp_dialect.frontend.blocks import GenError
    from tp_dialect.runtime.iree_exec import IreeError
    from tp_dialect.runtime.mpi_exec import MpiError
    from tp_dialect.serving.model import ServingError
    from tp_dialect.signature import BindError

    errors = (BindError, GenError, IreeError, MpiError, ServingError)
    return run_tool(TOOL, _main, argv, errors)


if __name__ == "__main__":
    sys.exit(main())
