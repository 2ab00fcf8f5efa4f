"""tp-fuse on split programs: tp-split lists chip 0's copy of a statement, then chip 1's, …,
so each chip's chain of dependent statements is interleaved with the others'. tp-fuse builds
a group per chip, and takes in a constant fill of a fresh tensor (a reduction's start) on the
way; attention's chain on a chip (scores, mask, max, exp, sum, probs) becomes one section
whose scores never leave the chip. The numbers are the source's, bit for bit, under value
and storage semantics; a statement that reads an open group's value closes it first, and an
in-place write closes the other chips' groups (a read never moves past a write)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hf_models import config_for
from ir_helpers import apply, parse
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg

from tp_dialect.analysis.certify.provenance import Provenance
from tp_dialect.analysis.timing.cost import op_cost
from tp_dialect.frontend.registry import Pretrained, entry_for
from tp_dialect.frontend.split import split_text
from tp_dialect.ops import SectionOp
from tp_dialect.passes.fuse import fusion_groups, group_key
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.shims import SHIMS, TensorParallelShim
from tp_dialect.signature import entry_function


@functools.cache
def prefill(chips: int) -> str:
    """A tiny Qwen3's whole-model prefill of 4 tokens, split over ``chips`` by its HF plan."""
    config = config_for("qwen3", num_hidden_layers=2)
    entry = entry_for("qwen3")
    pretrained = Pretrained(entry, entry.read(config), config)
    text = pretrained.write(pretrained.step("prefill", 4, 1, 8, False))
    return split_text(text, chips, entry.plan)


def _sections(module: ModuleOp) -> list[SectionOp]:
    return [op for op in module.walk() if isinstance(op, SectionOp)]


@pytest.mark.parametrize("chips", [2, 4])
def test_each_chips_attention_chain_becomes_one_section(chips: int) -> None:
    module = parse(prefill(chips))
    apply(module, "tp-fuse{shim=sn40l}")
    # Each layer's attention on chip c: the scores' product, the mask, the max, exp (x -
    # max), the sum and the divide, then the weighted values, in one section on chip c.
    chain = {"arith.mulf", "linalg.index", "arith.maximumf", "arith.subf", "arith.addf"}
    chain |= {"arith.divf"}
    for c in range(chips):
        found = [
            _kinds(s)
            for s in _sections(module)
            if s.label is not None and s.label.data.endswith(f"_c{c}") and chain <= _kinds(s)
        ]
        assert len(found) == 1, (c, found)  # in @layer, the callee every layer calls


def _kinds(section: SectionOp) -> set[str]:
    """What each generic in ``section`` computes, by the first op of its body."""
    return {
        o.body.block.first_op.name
        for o in section.body.block.ops
        if isinstance(o, linalg.GenericOp) and o.body.block.first_op is not None
    }


@pytest.mark.parametrize("chips", [2, 4])
@pytest.mark.parametrize("storage", [False, True], ids=["values", "storage"])
def test_fused_split_programs_keep_the_numbers_at_every_stage(chips: int, storage: bool) -> None:
    source = parse(prefill(chips))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    for stage in ("tp-fuse{shim=sn40l}", "tp-relocate", "tp-transfers,tp-phase"):
        apply(module, stage)
        got = run_program(module, values, storage=storage)
        assert sorted(got) == sorted(want)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{stage}: {name}")


def test_fusing_a_split_prefill_moves_fewer_hbm_bytes() -> None:
    """What the chips' sections read and write through HBM (`cost.op_cost`: a fused
    section keeps what only it reads on chip) falls: here by 16%, the scores of 4 tokens
    being small beside the weights (at qwen3-8b's 2,048 tokens, docs/model.md)."""
    plain, fused = parse(prefill(4)), parse(prefill(4))
    apply(plain, "tp-relocate")
    apply(fused, "tp-fuse{shim=sn40l},tp-relocate")
    moved = [sum(op_cost(s).bytes for s in _sections(m)) for m in (plain, fused)]
    assert moved[1] < 0.9 * moved[0], moved


T0, T1 = "tensor<4xf32, #tp.chip<0>>", "tensor<4xf32, #tp.chip<1>>"


def _groups(text: str) -> list[list[str]]:
    module = parse(text)
    prov = Provenance(module)
    shim = TensorParallelShim(SHIMS["reference"], prov)
    found, _ = fusion_groups(entry_function(module), shim, lambda o: group_key(prov, o))
    return [[o.results[0].name_hint or "?" for o in g] for g in found]


def test_interleaved_chains_group_per_chip() -> None:
    text = f"""builtin.module attributes {{tp.chips = 2 : i64}} {{
  func.func @f(%x0: {T0}, %x1: {T1}) -> ({T0}, {T1}) {{
    %a0 = arith.mulf %x0, %x0 : {T0}
    %a1 = arith.mulf %x1, %x1 : {T1}
    %b0 = arith.addf %a0, %x0 : {T0}
    %b1 = arith.addf %a1, %x1 : {T1}
    func.return %b0, %b1 : {T0}, {T1}
  }}
}}"""
    assert sorted(_groups(text)) == [["a0", "b0"], ["a1", "b1"]]


def test_a_statement_reading_an_open_group_closes_it() -> None:
    """%s (the spine) reads %a0 between %a0 and %b0: chip 0's group closes before %s, so
    %a0 never moves past its reader; %b0 starts a group of its own (it fuses nothing)."""
    text = f"""builtin.module attributes {{tp.chips = 2 : i64}} {{
  func.func @f(%x0: {T0}, %x1: {T1}) -> ({T0}, tensor<4xf32>) {{
    %a0 = arith.mulf %x0, %x0 : {T0}
    %s = tp.allreduce %a0, %x1 : {T0}, {T1} -> tensor<4xf32>
    %b0 = arith.addf %a0, %x0 : {T0}
    func.return %b0, %s : {T0}, tensor<4xf32>
  }}
}}"""
    assert _groups(text) == []


def test_an_in_place_write_closes_the_other_chips_groups() -> None:
    """Chip 1 writes its cache in place between chip 0's two statements: chip 0's group
    closes (a read moved past a write could read the new entry)."""
    c0 = "tensor<4x4xf32, #tp.chip<0>>"
    c1 = "tensor<4x4xf32, #tp.chip<1>>"
    r1 = "tensor<1x4xf32, #tp.chip<1>>"
    text = f"""builtin.module attributes {{tp.chips = 2 : i64}} {{
  func.func @f(%k0: {c0}, %k1: {c1}, %r1: {r1}) -> ({c0}, {c1}) {{
    %a0 = arith.mulf %k0, %k0 : {c0}
    %w1 = tensor.insert_slice %r1 into %k1[0, 0] [1, 4] [1, 1] : {r1} into {c1}
    %b0 = arith.addf %a0, %k0 : {c0}
    func.return %b0, %w1 : {c0}, {c1}
  }}
}}"""
    assert _groups(text) == []
