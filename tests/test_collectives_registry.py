"""The collective registry (`tp_dialect.collectives`) is the one place an algorithm is described.

Every entry is used coherently: the ops' verifiers and parsers accept exactly the registry's
names (printed as they always were, ``algorithm "ring"``), tp-choose-collectives and
tp-relocate accept each as an option, the cost model times each, and each ``allreduce=``
choice stands for a maxloc algorithm the registry holds. And adding an entry is the only edit an
algorithm needs: a copy of the registry's source with one more entry (an all-reduce named
``tree`` moving data as ``oneshot`` does) lowers a program through every pass, costed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ir_helpers import apply, parse
from xdsl.dialects.builtin import TensorType, f32
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import ParseError

from tp_dialect.analysis.timing.cost import allreduce_time, lowered_link_time, maxloc_time
from tp_dialect.attrs import on_chip
from tp_dialect.collectives import (
    ALL_GATHER,
    ALLREDUCE,
    MAXLOC,
    REDUCE_SCATTER,
    by_preference,
    stands_for,
)
from tp_dialect.machine import machine_from
from tp_dialect.ops import AllReduceOp, MaxLocOp
from tp_dialect.passes import TP_PASSES

SOURCE = Path(__file__).resolve().parents[1] / "tp_dialect" / "collectives.py"


def _allreduce(n: int, algorithm: str | None, cols: int = 8) -> str:
    args = ", ".join(f"%p{c}: tensor<1x{cols}xf32, #tp.chip<{c}>>" for c in range(n))
    types = ", ".join(f"tensor<1x{cols}xf32, #tp.chip<{c}>>" for c in range(n))
    named = "" if algorithm is None else f' algorithm "{algorithm}"'
    return (
        f"builtin.module attributes {{tp.chips = {n} : i64}} {{\n"
        f"  func.func @f({args}) -> tensor<1x{cols}xf32> {{\n"
        f"    %s = tp.allreduce {', '.join(f'%p{c}' for c in range(n))}{named} : {types} "
        f"-> tensor<1x{cols}xf32>\n"
        f"    func.return %s : tensor<1x{cols}xf32>\n  }}\n}}\n"
    )


def _computed_allreduce(n: int) -> str:
    """An all-reduce of partials each chip computes (a function argument is a host value,
    which every chip holds: it would cross nothing)."""
    text = _allreduce(n, None)
    squares = "".join(
        f"    %q{c} = arith.mulf %p{c}, %p{c} : tensor<1x8xf32, #tp.chip<{c}>>\n" for c in range(n)
    )
    text = text.replace("    %s = tp.allreduce", squares + "    %s = tp.allreduce")
    return text.replace(
        ", ".join(f"%p{c}" for c in range(n)) + " :", ", ".join(f"%q{c}" for c in range(n)) + " :"
    )


def _maxloc(algorithm: str) -> str:
    vals = "tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>>"
    idx = "tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>>"
    return (
        "builtin.module attributes {tp.chips = 2 : i64} {\n"
        "  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, "
        "%i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) -> tensor<2xi64> {\n"
        f'    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "{algorithm}" : {vals} '
        f"indices {idx} -> tensor<2xf32>, tensor<2xi64>\n"
        "    func.return %i : tensor<2xi64>\n  }\n}\n"
    )


@pytest.mark.parametrize("name", list(ALLREDUCE))
def test_every_allreduce_entry_is_accepted_printed_and_costed(name: str) -> None:
    """Each all-reduce entry parses, verifies, prints as written, is an option value of both
    passes that choose it, and has a positive modelled time over several chips."""
    entry = ALLREDUCE[name]
    assert name in AllReduceOp.ALGORITHMS
    assert (name in AllReduceOp.EVERY_CHIP) == entry.lands_on_every_chip
    module = parse(_allreduce(4, name))
    module.verify()
    assert f'algorithm "{name}"' in str(module)
    for spec in (f"tp-choose-collectives{{allreduce={name}}}", f"tp-relocate{{allreduce={name}}}"):
        PassPipeline.parse_spec(TP_PASSES, spec)  # the option's Literal holds the name
    chosen = parse(_allreduce(4, None))
    apply(chosen, f"tp-choose-collectives{{allreduce={name}}}")
    assert f'algorithm "{name}"' in str(chosen)
    assert stands_for(name) in MAXLOC
    machine = machine_from("sn40l")
    t = TensorType(f32, [1, 64])
    assert allreduce_time(name, t, 4, machine) > 0
    assert lowered_link_time(name, 256.0, 4, machine) > 0
    assert allreduce_time(name, t, 1, machine) == 0  # one chip: the partial is the sum


@pytest.mark.parametrize("name", list(MAXLOC))
def test_every_maxloc_entry_is_accepted_printed_and_costed(name: str) -> None:
    """Each maxloc entry parses, verifies, prints as written, is an option value, and has a
    positive modelled time over two chips."""
    assert name in MaxLocOp.ALGORITHMS
    module = parse(_maxloc(name))
    module.verify()
    assert f'algorithm "{name}"' in str(module)
    PassPipeline.parse_spec(TP_PASSES, f"tp-choose-collectives{{maxloc={name}}}")
    t = on_chip(TensorType(f32, [2]), None)
    assert maxloc_time(name, t, t, 2, machine_from("sn40l")) > 0


def test_auto_order_is_total_and_starts_at_the_default() -> None:
    """Ties under ``auto`` are broken by a preference every entry has once; fold first."""
    order = by_preference()
    assert [e.preference for e in order] == sorted({e.preference for e in order})
    assert order[0].name == "fold"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _allreduce(2, "tree"),
            "'tp.allreduce' algorithm \"tree\" is not one of fold, ring, oneshot, twoshot",
        ),
        (_maxloc("ring"), "'tp.maxloc' algorithm \"ring\" is not one of fold, oneshot"),
    ],
)
def test_a_name_not_in_the_registry_is_refused_naming_the_registry(text: str, message: str) -> None:
    """An algorithm the registry does not hold is a parse error listing the ones it holds."""
    with pytest.raises(ParseError, match=message):
        parse(text)


# A copy of the registry with one more entry, loaded in place of the real one before anything
# imports it; then a program is lowered with the new algorithm and timed.
_ADDED = """
import sys, types
from pathlib import Path
source = Path(sys.argv[1]).read_text()
anchor = '"oneshot", True, _oneshot_exchanges, maxloc="oneshot", preference=1),\\n'
assert anchor in source
added = anchor + '        AllReduceEntry('
added += '"tree", True, _oneshot_exchanges, maxloc="oneshot", preference=4),\\n'
module = types.ModuleType("tp_dialect.collectives")
module.__file__ = sys.argv[1]
sys.modules["tp_dialect.collectives"] = module
exec(compile(source.replace(anchor, added), sys.argv[1], "exec"), module.__dict__)

from xdsl.dialects.builtin import TensorType, f32
from tp_dialect.analysis.timing.cost import allreduce_time
from tp_dialect.machine import machine_from
from tp_dialect.passes.universe import lowered
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

program, _ = parse_module(tp_context(), sys.argv[2], "added.mlir")
spec = "tp-choose-collectives{allreduce=A},tp-relocate{allreduce=A},tp-transfers"
outs = {}
for name in ("tree", "oneshot"):
    moved = lowered(program, spec.replace("=A", "=" + name))
    outs[name] = (str(moved), str(lowered(moved, "tp-link-points,tp-relay")))
assert 'algorithm "tree"' in outs["tree"][1], outs["tree"][1]
for tree, oneshot in zip(outs["tree"], outs["oneshot"]):
    assert tree.replace('"tree"', '"oneshot"') == oneshot
m = machine_from("sn40l")
t = TensorType(f32, [1, 64])
assert allreduce_time("tree", t, 4, m) == allreduce_time("oneshot", t, 4, m) > 0
print("lowered", outs["tree"][0].count("tp.transfer"), "transfers")
"""


def test_adding_an_entry_is_the_only_edit_an_algorithm_needs() -> None:
    """With one entry added to the registry's source (nothing else edited), the new name is
    accepted by the parser, the options and the verifier, lowered to per-chip programs with
    its transfers (oneshot's: every partial to every other chip), and costed."""
    run = subprocess.run(
        [sys.executable, "-c", _ADDED, str(SOURCE), _computed_allreduce(4)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "lowered 12 transfers"


def test_python_built_passes_check_their_options() -> None:
    """A pass built in Python skips the pipeline parser's Literal check: each new pass checks
    its options itself, a plain one-line diagnostic naming the pass and the values."""
    from xdsl.dialects.builtin import ModuleOp

    from tp_dialect.diagnostics import TpDiagnostic
    from tp_dialect.passes.choose_collectives import TpChooseCollectives
    from tp_dialect.passes.epilogue import TpFuseEpilogue
    from tp_dialect.universe import tp_context

    cases = [
        (
            TpChooseCollectives(allreduce="tree"),  # type: ignore[arg-type]
            "tp-choose-collectives: allreduce=tree is not one of fold, ring, oneshot, "
            "twoshot, auto",
        ),
        (
            TpChooseCollectives(maxloc="ring"),  # type: ignore[arg-type]
            "tp-choose-collectives: maxloc=ring is not one of fold, oneshot, auto",
        ),
        (TpFuseEpilogue(shim="tpu"), "tp-fuse-epilogue: no shim 'tpu'"),  # type: ignore[arg-type]
    ]
    for built, message in cases:
        with pytest.raises(TpDiagnostic) as err:
            built.apply(tp_context(), ModuleOp([]))
        assert str(err.value).startswith(message), err.value


@pytest.mark.parametrize("n", range(2, 9))
def test_split_all_reduces_are_a_reduce_scatter_then_an_all_gather(n: int) -> None:
    """twoshot is the direct reduce-scatter then the direct all-gather, ring the ring's N-1
    steps then the same all-gather; by hand: the direct one sends every ordered pair of chips
    1/N of the tensor, once; a ring step every chip to the next."""
    pairs = tuple((a, b, n) for a in range(n) for b in range(n) if a != b)
    ring_step = tuple((c, (c + 1) % n, n) for c in range(n))
    assert REDUCE_SCATTER["direct"].exchanges(n) == ((1, pairs),)
    assert REDUCE_SCATTER["ring"].exchanges(n) == ((n - 1, ring_step),)
    assert ALL_GATHER["direct"].exchanges(n) == ((1, pairs),)
    assert ALLREDUCE["twoshot"].exchanges(n) == ((1, pairs), (1, pairs))
    assert ALLREDUCE["ring"].exchanges(n) == ((n - 1, ring_step), (1, pairs))
