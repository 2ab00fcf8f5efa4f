"""The fuzz harness itself: verdicts, signatures, the watchdog, delta debugging, the
reproducer folders, and that cases are deterministic and cover what the issue asks for."""

from __future__ import annotations

import os
import random
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz import mutate  # noqa: E402
from fuzz.case import (  # noqa: E402
    CLEAN,
    HANG,
    INTERNAL,
    SUCCESS,
    Case,
    Outcome,
    load_case,
    materialise,
    save_case,
)
from fuzz.cases import make_case  # noqa: E402
from fuzz.corpus import PIPELINES, build_corpus  # noqa: E402
from fuzz.execute import TOOLS, classify, execute, site_of  # noqa: E402
from fuzz.minimise import ddmin, minimise, tokens  # noqa: E402
from fuzz.pool import Pool, Settings, run_isolated  # noqa: E402
from fuzz.reproducers import known_signatures, save_reproducer, slug  # noqa: E402
from fuzz.tprun import KINDS  # noqa: E402

# Fake tools, registered at import so that forked workers have them too.


def _read(argv: Sequence[str] | None) -> str:
    return Path(list(argv or [])[0]).read_text()


def _fake_clean(argv: Sequence[str] | None) -> int:
    print(f"{list(argv or [])[0]}:1:1: error: no", file=sys.stderr)
    print("  no\n  ^", file=sys.stderr)
    return 1


def _fake_ok(argv: Sequence[str] | None) -> int:
    print("fine")
    return 0


def _fake_internal(argv: Sequence[str] | None) -> int:
    if "BOOM" not in _read(argv):
        print("x.mlir:1:1: error: refused", file=sys.stderr)
        return 1
    if os.environ.get("TP_DEBUG"):
        raise KeyError("boom")
    print("fake: internal error: KeyError: 'boom' (set TP_DEBUG=1)", file=sys.stderr)
    return 1


def _fake_escape(argv: Sequence[str] | None) -> int:
    raise RuntimeError("escaped")


def _fake_exit3(argv: Sequence[str] | None) -> int:
    return 3


def _fake_two_errors(argv: Sequence[str] | None) -> int:
    print("fake: error: one\nfake: error: two", file=sys.stderr)
    return 1


def _fake_spin(argv: Sequence[str] | None) -> int:
    while True:
        pass


def _fake_stuck(argv: Sequence[str] | None) -> int:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # Python cannot interrupt it
    time.sleep(60)
    return 0


def _fake_die(argv: Sequence[str] | None) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return 0


def _fake_hog(argv: Sequence[str] | None) -> int:
    hog = bytearray(8 << 30)  # 8 GiB: over the worker's limit
    return len(hog) * 0


TOOLS.update(
    {
        "fake-clean": _fake_clean,
        "fake-ok": _fake_ok,
        "fake-internal": _fake_internal,
        "fake-escape": _fake_escape,
        "fake-exit3": _fake_exit3,
        "fake-two-errors": _fake_two_errors,
        "fake-spin": _fake_spin,
        "fake-stuck": _fake_stuck,
        "fake-die": _fake_die,
        "fake-hog": _fake_hog,
    }
)


def _case(tool: str, text: str = "x") -> Case:
    return Case(tool, ("@{input.mlir}",), {"input.mlir": text.encode()})


# Verdicts.


@pytest.mark.parametrize(
    ("code", "out", "err", "verdict"),
    [
        (0, "module", "", SUCCESS),
        (0, "", "tp-run: warning: no certificate", SUCCESS),
        (1, "", "a.mlir:3:5: error: bad\n  x\n  ^", CLEAN),
        (1, "", "a.mlir: error: bad", CLEAN),
        (1, "", "tp-opt: error: unrecognized arguments: --x", CLEAN),
        (1, "", "tp-run: warning: w\ntp-run: error: bad", CLEAN),
        (1, "", "tp-opt: internal error: KeyError: 'x' (set TP_DEBUG=1)", INTERNAL),
        (1, "", "Traceback (most recent call last):\n  ...", INTERNAL),
        (0, "", "Traceback (most recent call last):\n  ...", INTERNAL),
        (1, "check: FAIL", "", INTERNAL),
        (1, "", "tp-opt: error: a\ntp-opt: error: b", INTERNAL),
        (2, "", "tp-opt: error: x", INTERNAL),
        (None, "", "", INTERNAL),
    ],
)
def test_classify(code: int | None, out: str, err: str, verdict: str) -> None:
    assert classify(code, out, err) == verdict


def test_execute_verdicts_and_signatures(tmp_path: Path) -> None:
    assert execute(_case("fake-clean"), tmp_path, 5).verdict == CLEAN
    assert execute(_case("fake-ok"), tmp_path, 5).verdict == SUCCESS
    assert execute(_case("fake-internal", "ok"), tmp_path, 5).verdict == CLEAN
    internal = execute(_case("fake-internal", "a BOOM b"), tmp_path, 5)
    assert internal.verdict == INTERNAL
    assert internal.signature[:3] == (INTERNAL, "fake-internal", "KeyError")
    assert "internal error" in internal.message
    escaped = execute(_case("fake-escape"), tmp_path, 5)
    assert escaped.verdict == INTERNAL and escaped.signature[2] == "RuntimeError"
    assert execute(_case("fake-exit3"), tmp_path, 5).verdict == INTERNAL
    assert execute(_case("fake-two-errors"), tmp_path, 5).verdict == INTERNAL


def test_a_spinning_tool_is_a_hang(tmp_path: Path) -> None:
    t0 = time.monotonic()
    outcome = execute(_case("fake-spin"), tmp_path, 0.5)
    assert outcome.verdict == HANG and outcome.signature[:2] == (HANG, "fake-spin")
    assert time.monotonic() - t0 < 5


def test_site_names_tp_frames_first() -> None:
    try:
        from tp_dialect.frontend.qwen3 import Qwen3Config

        Qwen3Config.preset("no-such-preset")
    except Exception as err:  # noqa: BLE001
        site = site_of(err.__traceback__)
    assert site[0].startswith("tp_dialect/frontend/qwen3.py:")


# The watchdog: what SIGALRM cannot stop, a crash, a runaway allocation.


def test_watchdog_kills_an_uninterruptible_worker() -> None:
    t0 = time.monotonic()
    outcome = run_isolated(_case("fake-stuck"), timeout=0.5)
    assert outcome.verdict == HANG and "uninterruptible" in outcome.signature
    assert time.monotonic() - t0 < 30


def test_a_dead_worker_is_an_internal_error() -> None:
    outcome = run_isolated(_case("fake-die"), timeout=5)
    assert outcome.verdict == INTERNAL and "worker died" in outcome.signature
    assert "signal 9" in outcome.message


def test_a_runaway_allocation_is_a_memory_error_not_the_machines() -> None:
    outcome = run_isolated(_case("fake-hog"), timeout=5, memory=2 << 30)
    assert outcome.verdict == INTERNAL and outcome.signature[2] == "MemoryError"


def test_pool_answers_every_task_and_survives_failures() -> None:
    cases = [_case(t) for t in ("fake-ok", "fake-die", "fake-clean", "fake-stuck", "fake-ok")]
    with Pool(2, Settings(lambda i: cases[i], timeout=0.5)) as pool:
        pending, seen = list(range(len(cases))), {}
        while pending or pool.busy():
            while pending and pool.idle():
                pool.submit(("case", pending.pop(0)))
            for task, reply in pool.collect(1.0):
                seen[task[1]] = reply[2].verdict
    assert seen == {0: SUCCESS, 1: INTERNAL, 2: CLEAN, 3: HANG, 4: SUCCESS}


# Delta debugging.


def test_ddmin_finds_the_two_units_that_matter() -> None:
    units = list(range(100))
    kept = ddmin(units, lambda us: 3 in us and 57 in us, time.monotonic() + 30)
    assert kept == [3, 57]


def test_ddmin_stops_at_its_deadline() -> None:
    calls = []
    kept = ddmin(list(range(50)), lambda us: calls.append(1) or True, time.monotonic() - 1)
    assert kept == list(range(50)) and not calls


def test_tokens_concatenate_to_the_text() -> None:
    text = '%x = tp.section "a b" on [0, 1] {\n  tp.yield %y : tensor<4xf32>\n}'
    assert "".join(tokens(text)) == text


def test_minimise_keeps_the_signature(tmp_path: Path) -> None:
    text = "\n".join(f"line {i} with words" for i in range(40)) + "\nthe BOOM line\nend"
    case = Case("fake-internal", ("@{input.mlir}", "--flag", "x"), {"input.mlir": text.encode()})
    first = execute(case, tmp_path, 5)
    small, outcome, tried = minimise(case, first, lambda c: execute(c, tmp_path, 5), 30)
    assert outcome.signature == first.signature and tried > 0
    assert small.files["input.mlir"].decode().strip() == "BOOM"
    assert small.argv == ("@{input.mlir}",)


# Cases and folders.


def test_case_round_trip(tmp_path: Path) -> None:
    case = Case(
        "tp-run",
        ("@{p.mlir}", "--inputs", "@{in.npz}"),
        {"p.mlir": b"module", "in.npz": bytes(range(256)), "sub/x.json": b"{}"},
        "origin",
        ("m1", "m2"),
    )
    save_case(case, tmp_path / "c", {"verdict": INTERNAL})
    back, found = load_case(tmp_path / "c")
    assert back == case and found == {"verdict": INTERNAL}
    argv = materialise(case, tmp_path / "m")
    assert argv == [str(tmp_path / "m/p.mlir"), "--inputs", str(tmp_path / "m/in.npz")]
    assert (tmp_path / "m/sub/x.json").read_bytes() == b"{}"


def test_reproducer_folders_are_found_by_signature(tmp_path: Path) -> None:
    signature = (INTERNAL, "tp-opt", "ValueError", "passes/relocate.py:_place")
    assert re.fullmatch(r"internal-tp-opt-ValueError-place-[0-9a-f]{8}", slug(signature))
    path = save_reproducer(tmp_path, _case("fake-ok"), signature, {"verdict": INTERNAL})
    assert known_signatures(tmp_path) == {signature: path}
    assert slug((HANG, "tp-opt", "xdsl lexer")).startswith("hang-tp-opt-xdsl_lexer-")


# The corpus and the mutations.


def test_corpus_holds_every_kind_of_program() -> None:
    corpus = build_corpus()
    names = [s.name for s in corpus.seeds]
    assert "examples/megatron_mlp.mlir" in names
    assert sum(n.startswith("lit_tests/") for n in names) > 100
    assert {"gen:qwen3-tiny-2", "gen:gpt2-tiny-unsharded"} <= set(names)
    assert any(n.endswith(":programs") for n in names)
    assert len(PIPELINES) >= 10
    assert {s.name for s in corpus.run_seeds} >= {"examples/megatron_mlp.mlir"}


def test_cases_are_deterministic_and_varied() -> None:
    corpus = build_corpus()
    first = [make_case(corpus, 7, i) for i in range(300)]
    again = [make_case(corpus, 7, i) for i in range(300)]
    assert first == again
    assert make_case(corpus, 8, 0) != first[0]
    tools = {c.tool for c in first}
    assert tools == {"tp-opt", "tp-run"}
    kinds = {c.mutations[0].split(":")[0] for c in first if c.tool == "tp-run"}
    assert kinds >= set(KINDS) - {"outputs"}
    pipelines = {c.argv[1:] for c in first if c.tool == "tp-opt"}
    assert len(pipelines) >= 10


@pytest.mark.parametrize("name", sorted(mutate.MUTATORS))
def test_every_mutator_changes_a_program(name: str) -> None:
    seeds = {s.name: s.text for s in build_corpus().seeds}
    text = seeds["examples/megatron_mlp.mlir"] + seeds["gen:qwen3-tiny-2:programs"]
    vocab = mutate.Vocabulary(("tp.shard", "linalg.generic"), ("%z = tp.frob",))
    changed = 0
    for i in range(20):
        result = mutate.MUTATORS[name][0](random.Random(i), text, vocab)
        changed += result is not None and result[0] != text
    assert changed >= 15


def test_huge_chip_counts_are_drawn() -> None:
    text = "builtin.module attributes {tp.chips = 2 : i64} {}"
    seen = set()
    for i in range(200):
        result = mutate.chip_count(random.Random(i), text, mutate.Vocabulary())
        assert result is not None
        seen |= set(re.findall(r"tp\.chips = (\d+)", result[0]))
    assert {"2147483648", "65536"} <= seen


def test_outcome_failed() -> None:
    assert Outcome(INTERNAL).failed and Outcome(HANG).failed
    assert not Outcome(CLEAN).failed and not Outcome(SUCCESS).failed
