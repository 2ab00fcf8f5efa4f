"""Case number ``i`` of campaign ``seed``: a pure function of the two and the corpus.

Most cases are tp-opt runs: a corpus program (drawn by weight) mutated by `fuzz.mutate`,
run through one of its home pipelines or any of `fuzz.corpus.PIPELINES`, sometimes with the
pipeline's flags themselves mutated (a bad option value, a huge chip count, a machine file
that is wrong, a missing output folder). The rest are tp-run cases (`fuzz.tprun`).
"""

from __future__ import annotations

import random
import re

from fuzz.case import Case
from fuzz.corpus import PIPELINES, Corpus
from fuzz.mutate import HUGE_CHIPS, Vocabulary, mutate_text
from fuzz.tprun import machine_json, tp_run_case

TP_RUN_SHARE = 0.12  # fraction of cases that exercise tp-run
HOME_SHARE = 0.6  # of tp-opt cases: run through a home pipeline of the program
FLAG_SHARE = 0.06  # of tp-opt cases: the pipeline's flags mutated too


_VOCABULARIES: dict[int, tuple[Corpus, Vocabulary]] = {}


def _vocabulary(corpus: Corpus) -> Vocabulary:
    """The lines and op names of ``corpus`` (computed once per corpus)."""
    known = _VOCABULARIES.get(id(corpus))
    if known is None or known[0] is not corpus:
        lines = sorted({ln for s in corpus.seeds for ln in s.text.split("\n") if 0 < len(ln) < 400})
        known = (corpus, Vocabulary(corpus.op_names, tuple(lines)))
        _VOCABULARIES[id(corpus)] = known
    return known[1]


def case_rng(seed: int, index: int) -> random.Random:
    """The generator case ``index`` of campaign ``seed`` draws from (independent of every
    other case's)."""
    return random.Random(f"tp-fuzz:{seed}:{index}")


def make_case(corpus: Corpus, seed: int, index: int, tp_run_share: float = TP_RUN_SHARE) -> Case:
    """Guarantees the same case for the same ``(corpus, seed, index, tp_run_share)``: a
    mutated tp-opt run, or (with probability ``tp_run_share``) a tp-run one."""
    rng = case_rng(seed, index)
    if corpus.run_seeds and rng.random() < tp_run_share:
        return tp_run_case(rng, corpus.run_seeds)
    source = rng.choices(corpus.seeds, [s.weight for s in corpus.seeds])[0]
    text, done = mutate_text(rng, source.text, _vocabulary(corpus))
    if source.home and rng.random() < HOME_SHARE:
        pipeline = rng.choice(source.home)
    else:
        pipeline = rng.choice(PIPELINES)
    files: dict[str, bytes] = {"input.mlir": text.encode()}
    files.update(source.files)
    argv = ["@{input.mlir}", *pipeline]
    if rng.random() < FLAG_SHARE:
        argv, flag_what, extra = mutate_flags(rng, argv)
        files.update(extra)
        done.append(f"flags: {flag_what}")
    return Case("tp-opt", tuple(argv), files, source.name, tuple(done))


def mutate_flags(rng: random.Random, argv: list[str]) -> tuple[list[str], str, dict[str, bytes]]:
    """tp-opt's argv changed as a user mistypes it: an option's value (an unknown algorithm
    or shim, a chip count of 0, -1 or 2147483648, a plan or machine file that is missing or
    wrong), a pass given twice, an output into a missing folder, the input dropped (stdin is
    empty), ``--split-input-file``; with the files that needs."""
    argv = list(argv)
    files: dict[str, bytes] = {}
    how = rng.choice(("option", "option", "machine", "split", "twice", "output", "no-input"))
    if how == "option":
        option = rng.choice(
            (
                "--tp-relocate=allreduce=tree",
                "--tp-relocate=allreduce=",
                "--tp-relocate=epilogue=maybe",
                "--tp-fuse=shim=tpu",
                "--tp-phase=order=random",
                f"--tp-split=chips={rng.choice((0, -1, 1, 3, *HUGE_CHIPS))} plan=qwen3",
                "--tp-split=chips=2 plan=nosuch",
                "--tp-split=chips=2 plan=@{input.mlir}",
                "--tp-split=chips=2",
                "--tp-relocate=allreduce=auto machine=nosuch",
                "--tp-relocate=report=true allreduce=auto machine=generic",
                "--tp-verify=x=1",
                "-p",
                "--tp-relocate=allreduce=ring epilogue=true shim=sn40l-int8",
            )
        )
        argv.append(option)
        what = option
    elif how == "machine":
        data, what = machine_json(rng)
        files["machine.json"] = data
        option = rng.choice(
            (
                "--tp-relocate=allreduce=auto machine=@{machine.json}",
                "--tp-phase=machine=@{machine.json}",
            )
        )
        argv.append(option)
        what = f"{option.split('=')[0]} machine: {what}"
    elif how == "split":
        argv.append("--split-input-file")
        what = "--split-input-file"
    elif how == "twice" and len(argv) > 1:
        argv.append(argv[-1])
        what = f"{argv[-1]} twice"
    elif how == "output":
        argv += ["-o", "@{missing/out.mlir}"]
        what = "-o into a missing folder"
    else:
        argv = [a for a in argv if not re.fullmatch(r"@\{input\.mlir\}", a)]
        what = "no input file"
    return argv, what, files
