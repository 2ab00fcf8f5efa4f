"""The programs the harness mutates, each with the pipelines it is at home in.

* the built-in example (``examples/megatron_mlp.mlir``);
* every lit input (``lit_tests/**/*.mlir`` and their ``Inputs/``), split at ``// -----``,
  comment lines dropped, each chunk with the tp-opt flags of its file's ``RUN:`` lines
  (``%S/Inputs/x.json`` carried along as a file of the case);
* generated programs: a tiny Qwen3 (2 chips, 1 layer; also with folds, fused weights,
  unsharded) and a tiny GPT-2 (unsharded and split over 2 chips), and their lowered stages
  (sectioned with each all-reduce algorithm, with transfers, phased, per-chip programs with
  the relay) — lowered here by tp-opt itself;
* for tp-run: small runnable programs with valid inputs and weights to mutate.

`build_corpus` is deterministic and cached per process (workers inherit it by fork).
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from fuzz.execute import REPO

# Every pipeline a mutant may be run through (argv after the input file); at least the
# ten the issue names, and every pass since. A pass option's file is a case file (@{name}).
PIPELINES: tuple[tuple[str, ...], ...] = (
    (),
    ("-p", "tp-verify"),
    ("--tp-raise-allreduce",),
    ("-p", "tp-relocate{allreduce=fold}"),
    ("--tp-relocate=allreduce=ring",),
    ("--tp-relocate=allreduce=oneshot",),
    ("--tp-relocate=allreduce=twoshot",),
    ("--tp-relocate=allreduce=auto",),
    ("--tp-relocate=allreduce=oneshot epilogue=true shim=sn40l",),
    ("--tp-relocate", "--tp-transfers"),
    ("-p", "tp-relocate{allreduce=ring},tp-transfers"),
    ("--tp-relocate", "--tp-transfers", "--tp-phase"),
    ("--tp-relocate=allreduce=twoshot", "--tp-transfers", "--tp-phase=order=source"),
    ("--tp-relocate", "--tp-transfers", "--tp-link-points"),
    ("--tp-relocate", "--tp-transfers", "--tp-link-points", "--tp-relay"),
    (
        "--tp-relocate=allreduce=oneshot",
        "--tp-transfers",
        "--tp-link-points",
        "--tp-relay",
        "--tp-verify",
    ),
    ("--tp-transfers",),
    ("--tp-phase",),
    ("--tp-link-points",),
    ("--tp-relay",),
    ("--tp-fuse",),
    ("--tp-fuse=shim=sn40l report=true",),
    ("--tp-legalize",),
    ("--tp-legalize=shim=sn40l",),
    ("--tp-narrow-wire",),
    ("--tp-sequence-parallel=mode=on",),
    (
        "-p",
        "tp-sequence-parallel{mode=on tiles=2},tp-narrow-wire{wire=int8 shim=sn40l-int8},"
        "tp-relocate,tp-transfers,tp-link-points,tp-relay,tp-verify",
    ),
    ("-p", "tp-raise-allreduce,tp-narrow-wire{report=true},tp-relocate,tp-transfers"),
    ("--tp-to-mpi",),
    (
        "--tp-relocate=allreduce=twoshot",
        "--tp-transfers",
        "--tp-link-points",
        "--tp-relay",
        "--tp-to-mpi",
    ),
    ("--tp-split=chips=2 plan=qwen3",),
    ("--tp-split=chips=2 plan=gpt2",),
    (
        "-p",
        "tp-verify,tp-raise-allreduce,tp-relocate,tp-transfers,tp-phase,tp-verify",
        "--verify-each",
    ),
    ("--tp-export-shard",),
    ("-p", "tp-export-shard,tp-import-shard"),
)


@dataclass(frozen=True)
class Seed:
    """A tp-opt input to mutate: its ``text``, the pipelines it is at home in (argv tails,
    files as ``@{name}``), the extra ``files`` those name, and how often to pick it
    (``weight``, relative)."""

    name: str
    text: str
    home: tuple[tuple[str, ...], ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    weight: float = 1.0


@dataclass(frozen=True)
class RunSeed:
    """A tp-run program with valid ``inputs`` (per-step values and caches, at
    ``position``) and ``weights``, by argument name; ``max_positions`` is the cache length
    (0 when it has none)."""

    name: str
    text: str
    inputs: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]
    position: int
    max_positions: int
    weight: float = 1.0


@dataclass(frozen=True)
class Corpus:
    """Every seed, tp-opt's and tp-run's, and the op names seen in them (for renaming)."""

    seeds: tuple[Seed, ...]
    run_seeds: tuple[RunSeed, ...]
    op_names: tuple[str, ...]
    problems: tuple[str, ...] = ()  # seeds that could not be built (said in the summary)


def lit_seeds(root: Path | None = None) -> list[Seed]:
    """Every chunk of every lit input under ``root`` (default ``lit_tests/``) that holds IR,
    comment lines dropped, with its file's tp-opt RUN flags as home pipelines."""
    root = root or REPO / "lit_tests"
    seeds = []
    for path in sorted(root.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        raw = path.read_text()
        home, files = _run_pipelines(raw, path.parent)
        for i, chunk in enumerate(raw.split("// -----")):
            lines = [ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//")]
            text = "\n".join(lines).strip("\n")
            if not re.search(r"[A-Za-z]", text):
                continue
            rel = path.relative_to(REPO)
            seeds.append(Seed(f"{rel}#{i}", text + "\n", tuple(home), dict(files), 1.0))
    return seeds


def _run_pipelines(text: str, folder: Path) -> tuple[list[tuple[str, ...]], dict[str, bytes]]:
    """The tp-opt flags of a lit file's RUN lines (input, pipes and redirections dropped;
    ``%S/...`` files read into the case as ``@{basename}``), and those files."""
    pipelines: list[tuple[str, ...]] = []
    files: dict[str, bytes] = {}
    for line in text.splitlines():
        found = re.match(r"\s*//\s*RUN:\s*(?:not\s+)?tp-opt\s+%s(.*)", line)
        if not found:
            continue
        command = found.group(1).split("|")[0].replace("2>&1", "")
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        argv: list[str] = []
        skip = False
        for word in words:
            if skip:
                skip = False
                continue
            if word in ("--split-input-file", "--verify-diagnostics"):
                continue
            if word == "-o":
                skip = True
                continue
            for ref in re.findall(r"%S/([\w./-]+)", word):
                source = folder / ref
                if source.is_file():
                    files[source.name] = source.read_bytes()
            argv.append(re.sub(r"%S/(?:[\w.-]+/)*([\w.-]+)", r"@{\1}", word))
        if tuple(argv) not in pipelines:
            pipelines.append(tuple(argv))
    return pipelines, files


def _lower(text: str, passes: tuple[str, ...]) -> str | None:
    """``text`` run through tp-opt with ``passes`` (in this process), or None on failure
    (tp-opt's message then goes to stderr)."""
    import tempfile

    from tp_dialect.tools.tp_opt import main

    with tempfile.TemporaryDirectory(prefix="tp-fuzz-corpus-") as tmp:
        src = Path(tmp) / "in.mlir"
        src.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(src), *passes])
    if code != 0:
        print(f"fuzz: tp-opt {' '.join(passes)}: {err.getvalue().strip()[:300]}", file=sys.stderr)
        return None
    return out.getvalue()


SOURCE_HOME: tuple[tuple[str, ...], ...] = PIPELINES[:16] + PIPELINES[20:24] + PIPELINES[26:]
SECTIONED_HOME: tuple[tuple[str, ...], ...] = (
    ("-p", "tp-verify"),
    ("--tp-transfers",),
    ("--tp-transfers", "--tp-phase"),
    ("--tp-transfers", "--tp-link-points", "--tp-relay", "--tp-verify"),
    ("--tp-phase=order=source",),
    ("--tp-fuse",),
)
PHASED_HOME: tuple[tuple[str, ...], ...] = (
    ("-p", "tp-verify"),
    ("--tp-link-points",),
    ("--tp-link-points", "--tp-relay"),
    ("--tp-link-points", "--tp-relay", "--tp-verify"),
    ("--tp-phase",),
)
PROGRAMS_HOME: tuple[tuple[str, ...], ...] = (
    ("-p", "tp-verify"),
    ("--tp-relay",),
    ("--tp-relay", "--tp-verify"),
    (),
)


def generated_seeds() -> tuple[list[Seed], list[str]]:
    """The generated Qwen3 and GPT-2 programs and their lowered stages (a stage tp-opt
    cannot produce today is left out and named in the second list)."""
    from tp_dialect.frontend import gpt2, qwen3

    seeds: list[Seed] = []
    problems: list[str] = []
    tiny = qwen3.Qwen3Config.preset("tiny", chips=2, layers=1)
    source = qwen3.generate(tiny)
    seeds.append(Seed("gen:qwen3-tiny-2", source, SOURCE_HOME, {}, 1.0))
    seeds.append(
        Seed(
            "gen:qwen3-tiny-2-fold",
            qwen3.generate(qwen3.Qwen3Config.preset("tiny", chips=2, layers=1, fold=True)),
            (("--tp-raise-allreduce",), ("-p", "tp-verify"), ("--tp-relocate",)),
            {},
            0.5,
        )
    )
    seeds.append(
        Seed(
            "gen:qwen3-tiny-2-fused",
            qwen3.generate(
                qwen3.Qwen3Config.preset(
                    "tiny", chips=2, layers=1, fused_qkv=True, fused_gate_up=True
                )
            ),
            SOURCE_HOME,
            {},
            0.3,
        )
    )
    unsharded = qwen3.generate(tiny.unsharded())
    seeds.append(
        Seed(
            "gen:qwen3-tiny-unsharded",
            unsharded,
            (("--tp-split=chips=2 plan=qwen3",), ("-p", "tp-split{chips=4 plan=qwen3}")),
            {},
            0.5,
        )
    )
    gpt = gpt2.generate(gpt2.GPT2Config.preset("tiny", layers=1))
    seeds.append(
        Seed(
            "gen:gpt2-tiny-unsharded",
            gpt,
            (("--tp-split=chips=2 plan=gpt2",), ("-p", "tp-verify")),
            {},
            0.5,
        )
    )
    # The outlined forms: @layer written once, called per layer (two layers, so a call's
    # operands and results link layers).
    two = qwen3.Qwen3Config.preset("tiny", chips=2, layers=2)
    outlined = qwen3.generate(two, outline=True)
    seeds.append(
        Seed(
            "gen:qwen3-tiny-2-outlined",
            outlined,
            (*SOURCE_HOME, ("--tp-inline",), ("--tp-inline", "--tp-relocate")),
            {},
            0.8,
        )
    )
    seeds.append(
        Seed(
            "gen:qwen3-tiny-unsharded-outlined",
            qwen3.generate(two.unsharded(), outline=True),
            (("--tp-split=chips=2 plan=qwen3",), ("--tp-inline", "--tp-split=chips=2 plan=qwen3")),
            {},
            0.4,
        )
    )
    stages: list[tuple[str, str, tuple[str, ...], tuple[tuple[str, ...], ...], float]] = [
        (
            "gen:qwen3-tiny-2-outlined:phased",
            outlined,
            ("--tp-relocate", "--tp-transfers", "--tp-phase"),
            (*PHASED_HOME, ("--tp-inline",)),
            0.4,
        ),
        ("gen:qwen3-tiny-2:relocated", source, ("--tp-relocate",), SECTIONED_HOME, 0.4),
        (
            "gen:qwen3-tiny-2:ring-transfers",
            source,
            ("--tp-relocate=allreduce=ring", "--tp-transfers"),
            PHASED_HOME,
            0.3,
        ),
        (
            "gen:qwen3-tiny-2:phased",
            source,
            ("--tp-relocate=allreduce=oneshot", "--tp-transfers", "--tp-phase"),
            PHASED_HOME,
            0.4,
        ),
        (
            "gen:qwen3-tiny-2:programs",
            source,
            ("--tp-relocate", "--tp-transfers", "--tp-link-points", "--tp-relay"),
            PROGRAMS_HOME,
            0.4,
        ),
        (
            # Per-chip functions called once a layer, and a relay with a tp.relay_repeat.
            "gen:qwen3-tiny-2-outlined:programs",
            outlined,
            ("--tp-relocate", "--tp-transfers", "--tp-phase", "--tp-link-points", "--tp-relay"),
            (*PROGRAMS_HOME, ("--tp-inline",)),
            0.4,
        ),
        ("gen:gpt2-tiny-2:split", gpt, ("--tp-split=chips=2 plan=gpt2",), SOURCE_HOME, 0.3),
        (
            "gen:gpt2-tiny-2:phased",
            gpt,
            ("--tp-split=chips=2 plan=gpt2", "--tp-relocate", "--tp-transfers", "--tp-phase"),
            PHASED_HOME,
            0.2,
        ),
    ]
    for name, text, passes, home, weight in stages:
        lowered = _lower(text, passes)
        if lowered is None:
            problems.append(f"{name}: tp-opt {' '.join(passes)} failed on the generated program")
            continue
        seeds.append(Seed(name, lowered, home, {}, weight))
    return seeds, problems


def run_seeds() -> tuple[list[RunSeed], list[str]]:
    """tp-run's programs with valid inputs and weights: the built-in example, the tiny
    Qwen3 (source and per-chip programs; outlined, as written and phased), the tiny GPT-2
    and the lit ports example."""
    from tp_dialect.frontend import gpt2, qwen3
    from tp_dialect.runtime.checkpoint import random_inputs, random_weights
    from tp_dialect.tools.source import parse_module
    from tp_dialect.universe import tp_context

    texts = [
        ("examples/megatron_mlp.mlir", (REPO / "examples/megatron_mlp.mlir").read_text(), 0, 2.0),
        (
            "gen:qwen3-tiny-2",
            qwen3.generate(qwen3.Qwen3Config.preset("tiny", chips=2, layers=1)),
            16,
            0.7,
        ),
        (
            "gen:gpt2-tiny-unsharded",
            gpt2.generate(gpt2.GPT2Config.preset("tiny", layers=1)),
            16,
            0.5,
        ),
    ]
    ports = REPO / "lit_tests/tools/tp_run_ports.mlir"
    if ports.is_file():
        body = "\n".join(
            ln for ln in ports.read_text().splitlines() if not ln.lstrip().startswith("//")
        )
        texts.append(("lit_tests/tools/tp_run_ports.mlir", body + "\n", 0, 0.5))
    programs = _lower(texts[1][1], ("--tp-relocate", "--tp-transfers", "--tp-link-points"))
    problems: list[str] = []
    if programs is not None:
        texts.append(("gen:qwen3-tiny-2:programs", programs, 16, 0.3))
    else:
        problems.append("gen:qwen3-tiny-2:programs: tp-opt could not lower it for tp-run")
    # The outlined form, as written, phased and as per-chip functions under a repeated relay
    # (the interpreter, the model and --stats follow its calls).
    outlined = qwen3.generate(qwen3.Qwen3Config.preset("tiny", chips=2, layers=2), outline=True)
    texts.append(("gen:qwen3-tiny-2-outlined", outlined, 16, 0.4))
    phased = _lower(outlined, ("--tp-relocate", "--tp-transfers", "--tp-phase"))
    if phased is not None:
        texts.append(("gen:qwen3-tiny-2-outlined:phased", phased, 16, 0.4))
    else:
        problems.append("gen:qwen3-tiny-2-outlined:phased: tp-opt could not lower it")
    linked = _lower(phased or outlined, ("--tp-link-points", "--tp-relay"))
    if linked is not None:
        texts.append(("gen:qwen3-tiny-2-outlined:programs", linked, 16, 0.4))
    else:
        problems.append("gen:qwen3-tiny-2-outlined:programs: tp-opt could not lower it")
    seeds = []
    for name, text, max_positions, weight in texts:
        position = 3 if max_positions else 0
        try:
            module, _ = parse_module(tp_context(), text, name)
            inputs = random_inputs(module, 1, position)
            weights = random_weights(module, 0)
        except Exception as err:  # noqa: BLE001 - tp is being changed; say, do not stop
            problems.append(f"{name}: cannot bind it for tp-run: {type(err).__name__}: {err}")
            continue
        seeds.append(RunSeed(name, text, inputs, weights, position, max_positions, weight))
    return seeds, problems


# How tp-opt's inputs are shared among the kinds of program (each kind's seeds keep their
# relative weights within it).
SHARES: dict[str, float] = {"example": 0.15, "lit": 0.60, "generated": 0.25}


def _share(seeds: list[Seed], share: float) -> list[Seed]:
    """``seeds`` with weights scaled to sum to ``share``."""
    total = sum(s.weight for s in seeds)
    return [replace(s, weight=s.weight * share / total) for s in seeds] if total else []


@functools.cache
def build_corpus() -> Corpus:
    """The whole corpus (deterministic; built once per process)."""
    seeds = [
        Seed(
            "examples/megatron_mlp.mlir",
            (REPO / "examples/megatron_mlp.mlir").read_text(),
            SOURCE_HOME,
            {},
            6.0,
        )
    ]
    lit = lit_seeds()
    generated, problems = generated_seeds()
    seeds = _share(seeds, SHARES["example"]) + _share(lit, SHARES["lit"])
    seeds += _share(generated, SHARES["generated"])
    runs, run_problems = run_seeds()
    names = sorted(
        {
            m
            for s in seeds
            for m in re.findall(r"(?<![\w%@#^.!])([a-z_]+\.[a-z_][a-z_.]*)\b", s.text)
        }
        - {"tp.chips", "tp.name", "tp.config", "tp.role", "tp.phase", "tp.certificate"}
    )
    names = [n for n in names if not n.endswith(".")]
    for problem in [*problems, *run_problems]:
        print(f"fuzz: warning: {problem}", file=sys.stderr)
    return Corpus(tuple(seeds), tuple(runs), tuple(names), tuple(problems + run_problems))
