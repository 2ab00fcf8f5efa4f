"""What a section costs: a fused section keeps its intermediates on chip."""

from __future__ import annotations

import dataclasses

import pytest
from ir_helpers import parse

from tp_dialect.analysis.timing.cost import op_cost
from tp_dialect.machine import MACHINES
from tp_dialect.ops import SectionOp

_PROGRAM = """
builtin.module attributes {{tp.chips = 1 : i64}} {{
  func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> ({types}) {{
    {results} = tp.section "s" on [0] {{
      %a = arith.addf %x, %x : tensor<4xf32>
      %b = arith.addf %a, %y : tensor<4xf32>
      tp.yield {yielded} : {types}
    }} : {types}
    func.return {results} : {types}
  }}
}}
"""


@pytest.mark.parametrize(
    ("yielded", "hbm_bytes"),
    [
        # Unfused: %a reads 32 B and writes 16, %b the same: 96. Fused, %a stays on chip:
        # read %x twice and %y (48), write %b (16).
        (["%b"], 64),
        # %a is read after the section: written once (16 more), still read on chip by %b.
        (["%a", "%b"], 80),
    ],
)
def test_a_fused_section_keeps_what_only_it_reads_on_chip(
    yielded: list[str], hbm_bytes: int
) -> None:
    types = ", ".join(["tensor<4xf32>"] * len(yielded))
    results = ", ".join(f"%r{i}" for i in range(len(yielded)))
    module = parse(_PROGRAM.format(types=types, results=results, yielded=", ".join(yielded)))
    section = next(op for op in module.walk() if isinstance(op, SectionOp))
    ops = list(section.body.block.ops)[:-1]
    assert sum(op_cost(op).bytes for op in ops) == 96
    assert op_cost(section).bytes == hbm_bytes
    assert op_cost(section).flops == sum(op_cost(op).flops for op in ops)


def test_a_machine_that_dispatches_ops_one_by_one_pays_per_op() -> None:
    """Two adds of 4 floats: 8 FLOPs and 64 bytes (fused). On sn40l (no per-op overhead) the
    roofline alone; on a machine with 10 us per op, 20 us more."""
    module = parse(_PROGRAM.format(types="tensor<4xf32>", results="%r0", yielded="%b"))
    section = next(op for op in module.walk() if isinstance(op, SectionOp))
    cost = op_cost(section)
    assert (cost.flops, cost.bytes, cost.ops) == (8, 64, 2)
    sn40l = MACHINES["sn40l"]
    roof = max(8 / sn40l.peak_flops, 64 / sn40l.hbm_bandwidth)
    assert cost.time(sn40l) == roof
    slow = dataclasses.replace(sn40l, op_overhead=10e-6)
    assert cost.time(slow) == pytest.approx(roof + 20e-6)


def test_an_update_copies_its_destination_only_where_the_machine_copies() -> None:
    """A cache update writing 4 floats into a 64-float cache: 32 bytes in place (the entry
    read and written); on a machine whose updates copy (value semantics), 512 bytes more."""
    module = parse(
        """
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%cache: tensor<16x4xf32>, %row: tensor<1x4xf32>) -> tensor<16x4xf32> {
    %0 = tensor.insert_slice %row into %cache[3, 0] [1, 4] [1, 1]
        : tensor<1x4xf32> into tensor<16x4xf32>
    func.return %0 : tensor<16x4xf32>
  }
}
"""
    )
    update = next(op for op in module.walk() if op.name == "tensor.insert_slice")
    cost = op_cost(update)
    assert (cost.bytes, cost.copied) == (32, 512)
    sn40l = MACHINES["sn40l"]
    assert cost.time(sn40l) == 32 / sn40l.hbm_bandwidth
    copying = dataclasses.replace(sn40l, copies_updates=True)
    assert cost.time(copying) == pytest.approx(544 / sn40l.hbm_bandwidth)
