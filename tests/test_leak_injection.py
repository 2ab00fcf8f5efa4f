"""The certificate is sound on what tp-verify accepts: a leak-injection campaign.

Every unmutated generated Qwen3 program — N = 1..8, seed fold or tp.allreduce, packed
projections, all-reduces carried in bf16, at every stage of the pipeline (source, raised,
sectioned, phased, fused, per-chip programs under the relay) — is certified; and every program
with a leak injected (tests/leak_injection.py: a partial swapped or dropped, a chip scalar
routed into the spine, a chip value captured by a region, a leak wrapped in scf.if / scf.for,
laundered through a cast, two slices overlapped, swapped or their ranges reordered, a partial's
contraction made a max or started from non-zero, an argument moved onto a chip) into those
programs and into random programs at every stage is refused by tp-verify. Each kind runs as a
fixed sample of 4 programs (80 in all) and as a random campaign (428); ``make test`` runs
those of the two the tiers need (tests/slow.txt), ``make test-slow`` the others, and ``make
fuzz`` (or TP_FUZZ_EXAMPLES=n) a campaign of 5,220.
"""

from __future__ import annotations

import functools
import os
import random
from dataclasses import replace

import pytest
from head_programs import head_program
from helpers import program, tiny_on
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ir_helpers import SETTINGS, apply, parse
from leak_injection import COVERAGE_KINDS, MAXLOC_MUTATORS, MUTATORS
from random_programs import programs
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.certificate import stamp, status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.qwen3 import Qwen3Config, generate
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

# Each stage: the stage it starts from, and the passes that lower it from there.
STAGES: dict[str, tuple[str, str]] = {
    "source": ("", ""),
    "raised": ("source", "tp-raise-allreduce"),
    "sectioned": ("source", "tp-relocate,tp-transfers"),
    "phased": ("sectioned", "tp-phase"),
    "programs": ("phased", "tp-link-points,tp-relay"),
    "ring": ("source", "tp-relocate{allreduce=ring},tp-transfers,tp-phase"),
    "fused": ("source", "tp-fuse{shim=sn40l},tp-relocate,tp-transfers,tp-phase"),
}
# Injected programs per mutation kind: 13 kinds x 20 into generated programs and 7 kinds x 24
# into random ones (which have no contractions over slices to drop, overlap, cross, reorder,
# or make other than sums) = 428 in a campaign: the lines they run are the lines 60 a kind
# ran (the campaign's size before it moved to `make fuzz`, which runs 300 a kind: 5,220).
EXAMPLES = int(os.environ.get("TP_FUZZ_EXAMPLES", "20"))
# Each kind runs twice: a "sample" of 4 programs drawn derandomized (the same programs, so the
# same lines, every run: cheap enough for `make test`) and the random campaign above.
CAMPAIGNS = ["sample", "campaign"]


def sized(size: str, examples: int) -> settings:
    """Hypothesis settings for a kind's ``size`` run (``examples``: the campaign's count)."""
    if size == "sample":
        return settings(max_examples=4, derandomize=True, **SETTINGS)
    return settings(max_examples=examples, **SETTINGS)


RANDOM_KINDS = sorted(set(MUTATORS) - {"drop-partial", "overlap-slices"} - COVERAGE_KINDS)


def qwen3(chips: int, fold: bool, fused: bool = False) -> Qwen3Config:
    """A one-layer tiny Qwen3 that N chips divide (dims scaled for N = 3, 5, 6, 7);
    ``fused``: packed qkv and gate_up projections (every chip's slice in several ranges)."""
    return tiny_on(chips, layers=1, fold=fold, fused_qkv=fused, fused_gate_up=fused)


@functools.cache
def staged(
    chips: int,
    fold: bool,
    stage: str,
    outline: bool = False,
    fused: bool = False,
    narrow: bool = False,
) -> ModuleOp:
    """The generated program at ``stage`` (cached; callers clone it); ``outline``: two layers
    as one ``@layer`` called twice (at the programs stage, per-chip functions); ``fused``:
    packed projections; ``narrow``: its all-reduces carried in bf16 (tp-narrow-wire: each
    partial through an ``arith.truncf``, which the certificate looks through)."""
    start, passes = STAGES[stage]
    if not start:
        cfg = qwen3(chips, fold, fused)
        module = outlined(cfg) if outline else program(cfg)
        if narrow:
            module = module.clone()
            apply(module, "tp-raise-allreduce,tp-narrow-wire")
        return module
    module = staged(chips, fold, start, outline, fused, narrow).clone()
    apply(module, passes)
    return module


@functools.cache
def outlined(cfg: Qwen3Config) -> ModuleOp:
    module, _ = parse_module(
        tp_context(), generate(replace(cfg, layers=2), outline=True), "<outlined>"
    )
    module.verify()
    return module


def lowered(module: ModuleOp, stage: str) -> ModuleOp:
    """``module`` (a source program, lowered in place) at ``stage``."""
    start, passes = STAGES[stage]
    if start:
        lowered(module, start)
        apply(module, passes)
    return module


def _text(module: ModuleOp) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _assert_refused(module: ModuleOp, what: str) -> None:
    try:
        check_obligation(module)
    except TpDiagnostic:
        return
    pytest.fail(f"tp-verify certified a program with {what}:\n{_text(module)}")


@pytest.mark.parametrize("chips", range(1, 9))
@pytest.mark.parametrize("fold", [False, True])
def test_every_generated_program_is_certified_at_every_stage(chips: int, fold: bool) -> None:
    for stage, outline in [(s, o) for s in STAGES for o in (False, True)]:
        if outline and chips not in (2, 4):
            continue  # outlined: a sample of the chip counts
        module = staged(chips, fold, stage, outline).clone()
        check_obligation(module)  # raises on a false refusal
        stamp(module)
        assert status(module) == "valid"


@pytest.mark.parametrize("chips", [2, 4])
def test_narrowed_programs_are_certified_at_every_stage(chips: int) -> None:
    """bf16 on the wire (the bases the campaign injects into below): certified at every
    stage, flat and outlined, and narrowed indeed."""
    for stage in STAGES:
        for outline in (False, True):
            module = staged(chips, True, stage, outline, False, True).clone()
            assert "arith.truncf" in _text(module), stage
            check_obligation(module)


@pytest.mark.parametrize("chips", [1, 2, 4])
def test_packed_programs_are_certified_at_every_stage(chips: int) -> None:
    """Slices of several ranges (packed qkv, gate_up): their positions pair up at every
    stage, flat and outlined."""
    for stage in STAGES:
        for outline in (False, True):
            check_obligation(staged(chips, False, stage, outline, True).clone())


BASES = [(c, f, s, False) for c in (1, 2, 3, 4) for f in (False, True) for s in STAGES]
# Outlined programs: a leak in @layer (or in a per-chip function) is in every call.
BASES += [(c, f, s, True) for c in (2, 4) for f in (False, True) for s in STAGES]
# Packed projections: slices of several ranges, flat and outlined.
BASES += [(c, False, s, o, True) for c in (1, 2, 4) for s in STAGES for o in (False, True)]
# bf16 on the wire: partials rounded by arith.truncf on their chips, which coverage looks through.
BASES += [(c, True, s, o, False, True) for c in (2, 4) for s in STAGES for o in (False, True)]


@pytest.mark.parametrize("size", CAMPAIGNS)
@pytest.mark.parametrize("kind", sorted(MUTATORS))
def test_leaks_injected_into_generated_programs_are_refused(kind: str, size: str) -> None:
    @sized(size, EXAMPLES)
    @given(base=st.sampled_from(BASES), seed=st.integers(0, 2**32 - 1))
    def inject(base: tuple[int | bool | str, ...], seed: int) -> None:
        module = staged(*base).clone()
        what = MUTATORS[kind](module, random.Random(seed))
        assume(what is not None)  # no place for this kind in this program
        where = f"(N, fold, stage, outline, fused, narrow = {base})"
        _assert_refused(module, f"{kind}: {what} {where}")

    inject()


RANDOM_STAGES = ["source", "raised", "sectioned", "ring", "phased", "programs"]


@pytest.mark.parametrize("size", CAMPAIGNS)
@pytest.mark.parametrize("kind", RANDOM_KINDS)
def test_leaks_injected_into_random_programs_are_refused(kind: str, size: str) -> None:
    @sized(size, EXAMPLES * 6 // 5)
    @given(prog=programs(), stage=st.sampled_from(RANDOM_STAGES), seed=st.integers(0, 2**32 - 1))
    def inject(prog: object, stage: str, seed: int) -> None:
        module = lowered(parse(prog.text()), stage)  # type: ignore[attr-defined]
        check_obligation(module)  # the program as generated is sound
        what = MUTATORS[kind](module, random.Random(seed))
        assume(what is not None)
        _assert_refused(module, f"{kind}: {what} ({stage})")

    inject()


def test_moving_an_argument_onto_a_chip_makes_the_certificate_stale() -> None:
    module = staged(2, False, "source").clone()
    stamp(module)
    assert status(module) == "valid"
    what = MUTATORS["move-argument"](module, random.Random(0))
    assert what is not None
    assert status(module) == "stale"


def test_the_digest_sees_structure_properties_apart_from_attributes_and_forward_uses() -> None:
    """Edits that change meaning change the digest: a property swapped with a same-named
    attribute; a function moved into another region (its calls resolve elsewhere)."""
    from tp_dialect.certificate import digest

    base = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<2x8xf32>) -> tensor<2x4xf32, #tp.chip<0>> {
    %a = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 8]>
      {slice = #tp.slice<axis = 1, ranges = [(4, 4)], full = [2, 8]>}
      : tensor<2x8xf32> -> tensor<2x4xf32, #tp.chip<0>>
    func.return %a : tensor<2x4xf32, #tp.chip<0>>
  }
}"""
    swapped = (
        base.replace("(0, 4)", "(X, 4)").replace("(4, 4)", "(0, 4)").replace("(X, 4)", "(4, 4)")
    )
    assert digest(parse(base)) != digest(parse(swapped))
    # The same ops in the same walk order; only which region @g sits in differs (and so
    # which @f its call resolves to).
    outer = """builtin.module {
  func.func @f(%x: f32) -> f32 {
    func.return %x : f32
  }
  builtin.module @inner {
    func.func @f(%x: f32) -> f32 {
      %y = arith.mulf %x, %x : f32
      func.return %y : f32
    }
  }
  func.func @g(%x: f32) -> f32 {
    %y = func.call @f(%x) : (f32) -> f32
    func.return %y : f32
  }
}"""
    inner = """builtin.module {
  func.func @f(%x: f32) -> f32 {
    func.return %x : f32
  }
  builtin.module @inner {
    func.func @f(%x: f32) -> f32 {
      %y = arith.mulf %x, %x : f32
      func.return %y : f32
    }
    func.func @g(%x: f32) -> f32 {
      %y = func.call @f(%x) : (f32) -> f32
      func.return %y : f32
    }
  }
}"""
    assert digest(parse(outer)) != digest(parse(inner))


@pytest.mark.parametrize("stage", ["source", "sectioned", "phased", "programs"])
@pytest.mark.parametrize(("chips", "algorithm"), [(2, "fold"), (3, "oneshot")])
@pytest.mark.parametrize("kind", sorted(MAXLOC_MUTATORS))
def test_maxloc_injection_is_refused_at_every_stage(
    stage: str, chips: int, algorithm: str, kind: str
) -> None:
    """A vocab-parallel head (V = 7: uneven runs) broken on a random chip's argmax, at each
    stage: refused by the maxloc rule, by name."""
    text = head_program(chips, hidden=2 * chips, vocab=7, layers=0)
    passes = {
        "source": "",
        "sectioned": f"tp-relocate{{maxloc={algorithm}}},tp-transfers",
        "phased": f"tp-relocate{{maxloc={algorithm}}},tp-transfers,tp-phase",
        "programs": f"tp-relocate{{maxloc={algorithm}}},tp-transfers,tp-phase,"
        "tp-link-points,tp-relay",
    }[stage]
    reason = r"\[slices-misaligned\]" if kind == "maxloc-offset" else r"\[not-argmax\]"
    for seed in range(4):
        module = parse(text)
        if passes:
            apply(module, passes)
        check_obligation(module)  # sound before the injection
        what = MAXLOC_MUTATORS[kind](module, random.Random(seed))
        assert what is not None
        with pytest.raises(TpDiagnostic, match=reason):
            check_obligation(module)
