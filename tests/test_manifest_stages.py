"""The manifest and the host loader give the same answer at every stage of lowering: source,
sectioned, phased, per-chip programs (with and without the relay op)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Iterable
from io import StringIO
from typing import Any

import numpy as np
import pytest
from helpers import program, tiny
from safetensors.numpy import save_file
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.ir import OpResult
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.analysis.values import origin, sent_values
from tp_dialect.frontend.qwen3 import Qwen3Config
from tp_dialect.ops import AllReduceOp, SectionOp, ShardOp, UnshardOp
from tp_dialect.passes import TP_PASSES
from tp_dialect.program_ops import ChipProgramOp, LinkOp
from tp_dialect.runtime.checkpoint import (
    MemorySource,
    SafetensorsSource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import BindError, entry_function, ports
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

LOWER = "tp-relocate,tp-transfers"
STAGES = {
    "source": "",
    "sectioned": LOWER,
    "phased": f"{LOWER},tp-phase",
    "per-chip": f"{LOWER},tp-phase,tp-link-points",
    "relayed": f"{LOWER},tp-phase,tp-link-points,tp-relay",
}
CONFIGS = {
    "n2": tiny(chips=2, layers=1),
    "n4": tiny(chips=4, layers=1),
    "n4-fold": tiny(chips=4, layers=1, fold=True),
    "n2-fused": tiny(chips=2, layers=1, fused_qkv=True, fused_gate_up=True),
}

Slice = tuple[str, int, tuple[tuple[int, int], ...]]  # (tensor, axis, ranges)


@functools.cache
def lowered(cfg: Qwen3Config, stage: str) -> ModuleOp:
    """``cfg``'s program lowered to ``stage`` (cached: several tests read each stage)."""
    module = program(cfg).clone()
    if STAGES[stage]:
        PassPipeline.parse_spec(TP_PASSES, STAGES[stage]).apply(tp_context(), module)
    return module


# Independent references, read off the source program's IR with no chasing at all (in the
# source every tp.shard reads a function argument and every store is a returned tp.unshard;
# test_manifest_checkpoint checks those against the Megatron split itself).


def _source_loads(module: ModuleOp) -> Counter[tuple[Any, ...]]:
    func = entry_function(module)
    ins, _ = ports(func)
    found: Counter[tuple[Any, ...]] = Counter()
    for op in func.body.block.ops:
        if isinstance(op, ShardOp):
            assert op.source.owner is func.body.block
            s = op.slice
            found[
                (
                    ins[op.source.index].name,  # type: ignore[union-attr]
                    op.chip,
                    s.axis_index,
                    tuple(s.ranges),
                    tuple(s.full_shape),
                )
            ] += 1
    return found


def _source_stores(module: ModuleOp) -> list[tuple[Any, ...]]:
    func = entry_function(module)
    _, outs = ports(func)
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    stores = []
    for port, value in zip(outs, ret.operands, strict=True):
        if isinstance(value.owner, UnshardOp):
            parts = tuple(
                (p.type.encoding.value, s.axis_index, tuple(s.ranges), tuple(s.full_shape))  # type: ignore[attr-defined]
                for p, s in zip(value.owner.parts, value.owner.slices.data, strict=True)
            )
            stores.append((port.name, parts))
    return stores


def _expected_collectives(cfg: Qwen3Config, raised: bool) -> list[tuple[str, list[int], int]]:
    """Two all-reduces a layer over every chip in order: one op, or a fold of N-1 adds
    (unless a pass ``raised`` the fold into the one op: the same sum of the same partials)."""
    if cfg.fold and not raised:
        return [("fold", list(range(cfg.chips)), cfg.chips - 1)] * (2 * cfg.layers)
    return [("allreduce", list(range(cfg.chips)), 1)] * (2 * cfg.layers)


def _without_names(data: dict[str, Any]) -> dict[str, Any]:
    """The manifest's JSON less what a pass may rename: value names."""
    return {
        "chips": data["chips"],
        "loads": [{k: v for k, v in ld.items() if k != "value"} for ld in data["loads"]],
        "stores": [
            {
                "output": st["output"],
                "parts": [{k: v for k, v in p.items() if k != "value"} for p in st["parts"]],
            }
            for st in data["stores"]
        ],
        "collectives": [
            {"kind": c["kind"], "chips": c["chips"], "folds": len(c["fold_ops"])}
            for c in data["collectives"]
        ],
    }


def _reparsed(module: ModuleOp) -> ModuleOp:
    """``module`` printed and parsed again (names as a file spells them)."""
    text = StringIO()
    Printer(stream=text).print_op(module)
    return parse_module(tp_context(), text.getvalue(), "<printed>")[0]


def _rows(full: np.ndarray, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
    """Independent slicing: the listed index ranges of ``full`` along ``axis``."""
    idx = np.concatenate([np.arange(s, s + n) for s, n in ranges])
    return np.take(full, idx, axis=axis)


class CountingSource:
    """A TensorSource that records every whole and every slice read."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self.inner = MemorySource(tensors)
        self.wholes: list[str] = []
        self.slices: list[Slice] = []

    def shape(self, name: str) -> tuple[int, ...] | None:
        return self.inner.shape(name)

    def dtype(self, name: str) -> np.dtype:  # place_weights checks dtypes from headers first
        return self.inner.dtype(name)

    def whole(self, name: str) -> np.ndarray:
        self.wholes.append(name)
        return self.inner.whole(name)

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        ranges = tuple(ranges)
        self.slices.append((name, axis, ranges))
        return self.inner.ranges(name, axis, ranges)

    def names(self) -> Collection[str]:
        return self.inner.names()


@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_manifest_is_the_same_at_every_stage(config: str, stage: str) -> None:
    cfg = CONFIGS[config]
    source, module = program(cfg), lowered(cfg, stage)
    m = read_manifest(module)
    # One load per tp.shard op, each the source's (tensor, chip, axis, ranges, full shape).
    loads = Counter(
        (ld.tensor, ld.chip, ld.slice.axis_index, tuple(ld.slice.ranges), ld.slice.full_shape)
        for ld in m.loads
    )
    assert loads == _source_loads(source)
    assert len(m.loads) == sum(isinstance(op, ShardOp) for op in module.walk())
    stores = [
        (
            st.output,
            tuple((c, s.axis_index, tuple(s.ranges), s.full_shape) for c, _, s in st.parts),
        )
        for st in m.stores
    ]
    assert stores == _source_stores(source)
    collectives = [
        (c.kind, [p.type.encoding.value for p in c.partials], len(c.copies[0]))  # type: ignore[attr-defined]
        for c in m.collectives
    ]
    # tp-relocate may raise the seed's fold into one tp.allreduce (the same sum).
    raised = any(isinstance(op, AllReduceOp) for op in module.walk())
    assert collectives == _expected_collectives(cfg, raised)
    if stage in ("per-chip", "relayed"):
        # A fold is spine work: every chip's program folds the partials it received.
        copies = cfg.chips if cfg.fold and not raised else 1
        assert all(len(c.copies) == copies for c in m.collectives)
        programs = [op for op in module.walk() if isinstance(op, ChipProgramOp)]
        assert len(programs) == cfg.chips
        for ld in m.loads:  # each chip's shards sit in that chip's program
            owner = ld.op.parent_op()
            while not isinstance(owner, ChipProgramOp):
                assert owner is not None
                owner = owner.parent_op()
            assert owner.chip_index == ld.chip
    # The exported map (less renamable value names) is the source program's, in its order.
    original = _without_names(read_manifest(source).to_json())
    if raised and cfg.fold:
        for coll in original["collectives"]:
            coll.update(kind="allreduce", folds=1)
    assert _without_names(m.to_json()) == original


@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_place_weights_reads_only_slices_at_every_stage(config: str, stage: str) -> None:
    cfg = CONFIGS[config]
    source, module = program(cfg), lowered(cfg, stage)
    weights = random_weights(source, seed=5)
    expected = _source_loads(source)
    roles = {p.name: p.role for p in ports(entry_function(source))[0]}
    sliced = {t for t, *_ in expected if roles[t] == "weight"}
    counting = CountingSource(weights)
    placement = place_weights(module, counting)
    # Every slice of the source's loading map read exactly once; no sharded weight whole.
    want = {(t, axis, ranges) for t, _, axis, ranges, _ in expected if t in sliced}
    assert sorted(counting.slices) == sorted(want)
    assert not sliced & set(counting.wholes)
    assert set(counting.wholes) == set(weights) - sliced  # the spine: norm weights
    assert all(placement.values[t].strides == (0,) * weights[t].ndim for t in sliced)
    # Each tp.shard op of a weight is placed, with its slice of the full tensor.
    shards = {op for op in module.walk() if isinstance(op, ShardOp)}
    assert set(placement.placed) <= shards
    assert len(placement.placed) == sum(n for k, n in expected.items() if k[0] in sliced)
    for ld in read_manifest(module).loads:
        if ld.tensor in sliced:
            want_rows = _rows(weights[ld.tensor], ld.slice.axis_index, ld.slice.ranges)
            np.testing.assert_array_equal(placement.placed[ld.op], want_rows)


@pytest.mark.parametrize("config", ["n2", "n4-fold", "n2-fused"])
def test_lowered_programs_run_on_placed_slices(tmp_path, config: str) -> None:
    """Sectioned and per-chip programs (under the relay), their weights placed slice by
    slice from a safetensors file, give the source program's numbers on whole weights."""
    cfg = CONFIGS[config]
    source = program(cfg)
    weights = random_weights(source, seed=7)
    path = tmp_path / "ckpt.safetensors"
    save_file(weights, str(path))
    inputs = random_inputs(source, seed=8, position=5)
    want = run_program(source, {**weights, **inputs})
    for stage in ("sectioned", "relayed"):
        module = _reparsed(lowered(cfg, stage))  # as tp-run reads it from a file
        placement = place_weights(module, SafetensorsSource(path))
        got = run_program(module, {**placement.values, **inputs}, placement.placed)
        assert got.keys() == want.keys()
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], value, err_msg=f"{stage}: {name}")


def test_origin_follows_links_to_the_chip_that_computed_a_partial() -> None:
    """Chip 0's program sums partials it received: each one's origin (through the links) is
    what the chip that owns it computed, in that chip's program."""
    module = lowered(CONFIGS["n4"], "per-chip")
    func = entry_function(module)
    sends = sent_values(func)
    programs = {op.chip_index: op for op in func.walk() if isinstance(op, ChipProgramOp)}
    allreduce = next(op for op in programs[0].walk() if isinstance(op, AllReduceOp))
    for chip, partial in enumerate(allreduce.partials):
        computed = origin(partial, sends)
        assert isinstance(computed, OpResult)
        assert not isinstance(computed.op, SectionOp | ChipProgramOp | LinkOp)
        assert programs[chip].is_ancestor(computed.op)
        assert (chip == 0) == (origin(partial) is computed)  # only chip 0's own is local
    # Every weight shard, in whichever program, reads a function argument.
    for op in module.walk():
        if isinstance(op, ShardOp):
            assert origin(op.source).owner is func.body.block
    # A source program has nothing to see through.
    for op in entry_function(program(CONFIGS["n4"])).walk():
        assert all(origin(v) is v for v in (*op.operands, *op.results))


# Per-chip programs that each fold the partials they exchanged (a fold is spine work, so
# every chip sums for itself): two copies of ONE collective.
EXCHANGE = """
!w = tensor<2x4xf32>
!c0 = tensor<1x4xf32, #tp.chip<0>>
!c1 = tensor<1x4xf32, #tp.chip<1>>
!s = tensor<1x4xf32>
#row0 = #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>
#row1 = #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @exchange(%w: !w {tp.name = "w"}) -> (!s {tp.name = "out"}) {
    %out = tp.chip_program on 0 (%w) {
    ^bb0(%w_0: !w):
      %p0 = tp.section "p0" on [0] {
        %r = tp.shard %w_0 at #row0 : !w -> !c0
        tp.yield %r : !c0
      } : !c0
      %p1 = tp.link 1 sends(%p0) as ["p0"] receives ["p1"] : (!c0) -> !c1
      %e = tensor.empty() : !s
      %sum = tp.section "sum" on [0] {
        %a = linalg.add ins(%p0, %p1 : !c0, !c1) outs(%e : !s) -> !s
        tp.yield %a : !s
      } : !s
      tp.finish %sum : !s
    } : (!w) -> (!s)
    %unused = tp.chip_program on 1 (%w) {
    ^bb0(%w_1: !w):
      %p1 = tp.section "p1" on [1] {
        %r = tp.shard %w_1 at #row1 : !w -> !c1
        tp.yield %r : !c1
      } : !c1
      %p0 = tp.link 1 sends(%p1) as ["p1"] receives ["p0"] : (!c1) -> !c0
      %e = tensor.empty() : !s
      %sum = tp.section "sum" on [1] {
        %a = linalg.add ins(%p0, %p1 : !c0, !c1) outs(%e : !s) -> !s
        tp.yield %a : !s
      } : !s
      tp.finish %sum : !s
    } : (!w) -> (!s)
    func.return %out : !s
  }
}
"""


def test_copies_of_one_fold_in_several_programs_are_one_collective() -> None:
    module, _ = parse_module(tp_context(), EXCHANGE, "<exchange>")
    module.verify()
    m = read_manifest(module)
    assert [(c.kind, len(c.partials), len(c.copies)) for c in m.collectives] == [("fold", 2, 2)]
    (coll,) = m.collectives
    programs = [op for op in module.walk() if isinstance(op, ChipProgramOp)]
    for program_op, copy in zip(programs, coll.copies, strict=True):
        assert [program_op.is_ancestor(op) for op in copy] == [True]
    assert [(ld.tensor, ld.chip, tuple(ld.slice.ranges)) for ld in m.loads] == [
        ("w", 0, ((0, 1),)),
        ("w", 1, ((1, 1),)),
    ]
    w = np.arange(8, dtype=np.float32).reshape(2, 4)
    counting = CountingSource({"w": w})
    placement = place_weights(module, counting)
    assert counting.wholes == [] and sorted(counting.slices) == [
        ("w", 0, ((0, 1),)),
        ("w", 0, ((1, 1),)),
    ]
    got = run_program(module, placement.values, placement.placed)
    np.testing.assert_array_equal(got["out"], w[0:1] + w[1:2])


# Two chips cut the same slice of one weight (a replicated row): after lowering, the two
# tp.shard ops sit in two chip programs; the host reads the row once and places it twice.
REPLICATED = """
!w = tensor<4x4xf32>
!c0 = tensor<1x4xf32, #tp.chip<0>>
!c1 = tensor<1x4xf32, #tp.chip<1>>
!two1 = tensor<2x4xf32, #tp.chip<1>>
#row0 = #tp.slice<axis = 0, ranges = [(0, 1)], full = [4, 4]>
#row1 = #tp.slice<axis = 0, ranges = [(1, 1)], full = [4, 4]>
#rows23 = #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 4]>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @rep(%x: tensor<1x4xf32> {tp.name = "hidden_states"}, %w: !w {tp.name = "w"})
      -> (tensor<1x4xf32> {tp.name = "out"}) {
    %r0 = tp.shard %w at #row0 : !w -> !c0
    %r1 = tp.shard %w at #row0 : !w -> !c1
    %v0 = tp.shard %w at #row1 : !w -> !c0
    %v1 = tp.shard %w at #rows23 : !w -> !two1
    %c1 = tensor.extract_slice %v1[1, 0] [1, 4] [1, 1] : !two1 to !c1
    %h0 = arith.mulf %r0, %v0 : !c0
    %h1 = arith.mulf %r1, %c1 : !c1
    %s = tp.allreduce %h0, %h1 : !c0, !c1 -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}
"""


@pytest.mark.parametrize("stage", ["source", "relayed"])
def test_a_slice_cut_alike_by_several_shards_is_read_once(stage: str) -> None:
    module, _ = parse_module(tp_context(), REPLICATED, "<replicated>")
    if STAGES[stage]:
        PassPipeline.parse_spec(TP_PASSES, STAGES[stage]).apply(tp_context(), module)
    module.verify()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    x = rng.standard_normal((1, 4)).astype(np.float32)
    counting = CountingSource({"w": w})
    placement = place_weights(module, counting)
    assert counting.wholes == []
    assert sorted(counting.slices) == [
        ("w", 0, ((0, 1),)),
        ("w", 0, ((1, 1),)),
        ("w", 0, ((2, 2),)),
    ]
    by_chip_rows = {
        (ld.chip, ld.slice.ranges[0]): placement.placed[ld.op] for ld in read_manifest(module).loads
    }
    assert len(by_chip_rows) == 4
    assert by_chip_rows[(0, (0, 1))] is by_chip_rows[(1, (0, 1))]  # one array, two chips
    assert placement.placed_bytes == 4 * 4 * 4  # rows 0, 1, 2, 3 once each
    got = run_program(module, {**placement.values, "hidden_states": x}, placement.placed)
    np.testing.assert_allclose(got["out"], x + w[0] * w[1] + w[0] * w[3], rtol=1e-6)


def test_missing_or_misshaped_tensor_is_named_for_per_chip_programs() -> None:
    cfg = CONFIGS["n2"]
    module = lowered(cfg, "relayed")
    weights = random_weights(program(cfg), seed=1)
    missing = {k: v for k, v in weights.items() if k != "model.layers.0.mlp.down_proj.weight"}
    with pytest.raises(BindError, match=r"no tensor 'model.layers.0.mlp.down_proj.weight'"):
        place_weights(module, MemorySource(missing))
    bad = {**weights, "model.layers.0.self_attn.q_proj.weight": np.zeros((3, 64), np.float32)}
    with pytest.raises(
        BindError,
        match=r"'model.layers.0.self_attn.q_proj.weight': expected shape \[128, 64\], "
        r"found \[3, 64\]",
    ):
        place_weights(module, MemorySource(bad))
