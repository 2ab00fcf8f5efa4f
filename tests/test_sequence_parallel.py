"""tp-sequence-parallel: a layer's residual adds and post-attention norm on each chip's block of
the tokens, between a reduce-scatter and an all-gather.

On a tiny Qwen3 prefill split over 2 and 4 chips (4 and 6 tokens: even and uneven blocks), the
pass's program computes exactly the source's numbers — bitwise: every row is computed by the
same ops on the same values — at every stage (placed, transfers, phases, per-chip programs
with the relay), under value and storage semantics, certified at each; on two MPI ranks too.
``mode=auto`` keeps a decode step's all-reduces (one token: the only row axis is the hidden
one, where the norm ends the region) and takes a prefill's where the work outweighs the
collectives' latency; a sectioned program is refused.
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import tool
from hf_models import config_for
from ir_helpers import apply, assert_kept_through_lowering, parse
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import SSAValue
from xdsl.printer import Printer

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.analysis.timing.cost import matmul_flops
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.frontend.registry import Pretrained, entry_for
from tp_dialect.frontend.split import split_text
from tp_dialect.ops import AllReduceOp
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.reference import run_program
from tp_dialect.scatter_ops import AllGatherOp, ReduceScatterOp


@functools.cache
def step(chips: int, kind: str = "prefill", tokens: int = 4) -> str:
    """A tiny Qwen3's whole-model ``kind`` step, split over ``chips`` by its HF plan."""
    config = config_for("qwen3", num_hidden_layers=2)
    entry = entry_for("qwen3")
    pretrained = Pretrained(entry, entry.read(config), config)
    text = pretrained.write(pretrained.step(kind, tokens, 1, 8, False))
    return split_text(text, chips, entry.plan)


def _layer(module: ModuleOp) -> FuncOp:
    return next(f for f in module.walk() if isinstance(f, FuncOp) and f.sym_name.data == "layer")


def _ops(module: ModuleOp, kind: type) -> list:
    return [op for op in _layer(module).walk() if isinstance(op, kind)]


@pytest.mark.parametrize(("chips", "tokens"), [(2, 4), (4, 6)])
@pytest.mark.parametrize("storage", [False, True], ids=["values", "storage"])
def test_every_stage_keeps_the_numbers_bitwise(chips: int, tokens: int, storage: bool) -> None:
    source = parse(step(chips, tokens=tokens))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, "tp-verify,tp-sequence-parallel{mode=on}")
    assert status(module) == "valid"
    linked = None
    for stage in ("", "tp-relocate", "tp-transfers", "tp-phase"):
        if stage:
            apply(module, stage)
        if stage == "tp-transfers":
            linked = module.clone()
            apply(linked, "tp-link-points,tp-relay")
        for m in (module, linked) if stage == "tp-transfers" else (module,):
            assert m is not None and status(m) == "valid", stage
            got = run_program(m, values, storage=storage)
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"{stage}: {name}")


def test_the_layer_has_two_reduce_scatters_and_gathers_the_norm_and_the_output() -> None:
    """Per layer: the attention's and the MLP's all-reduces become reduce-scatters along the
    tokens; the post-attention norm (read whole by the gate and up projections) and the
    layer's output (returned) are gathered; the residual adds and the norm run per chip."""
    module = parse(step(2))
    apply(module, "tp-sequence-parallel{mode=on}")
    assert not _ops(module, AllReduceOp)
    scatters, gathers = _ops(module, ReduceScatterOp), _ops(module, AllGatherOp)
    assert len(scatters) == 2 and {s.axis for s in scatters} == {1}  # [batch, tokens, hidden]
    assert sorted(g.result.name_hint for g in gathers) == ["l_out", "l_post_norm"]
    hints = {r.name_hint for op in _layer(module).walk() for r in op.results}
    for c in range(2):
        assert {f"l_attn_res_b{c}", f"l_post_norm_ss_b{c}", f"l_out_b{c}"} <= hints


def test_a_decode_step_keeps_its_all_reduces_under_auto(capsys: pytest.CaptureFixture) -> None:
    module = parse(step(2, "decode", 1))
    apply(module, "tp-sequence-parallel{report=true}")
    assert len(_ops(module, AllReduceOp)) == 2 and not _ops(module, ReduceScatterOp)
    assert "-> kept" in capsys.readouterr().err


def test_auto_takes_a_prefill_when_its_rows_outweigh_the_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """On 4 chips of a machine with free links and slow memory the rows' work decides:
    sequence parallelism; on sn40l the tiny layer's collectives' latencies decide: kept."""
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"link_latency": 0.0, "hbm_bandwidth": 1e6}))
    kept, taken = parse(step(4, tokens=8)), parse(step(4, tokens=8))
    apply(kept, "tp-sequence-parallel{report=true}")
    apply(taken, f'tp-sequence-parallel{{machine="{slow}" report=true}}')
    said = capsys.readouterr().err
    assert "-> kept" in said and "-> sequence-parallel" in said
    assert _ops(kept, AllReduceOp) and not _ops(taken, AllReduceOp)


def test_a_sectioned_program_is_refused() -> None:
    module = parse(step(2))
    apply(module, "tp-relocate")
    with pytest.raises(TpDiagnostic, match="runs on statements: run it before tp-relocate"):
        apply(module, "tp-sequence-parallel")


def test_per_chip_programs_run_on_two_mpi_ranks(tmp_path: Path) -> None:
    source = parse(step(2))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, "tp-sequence-parallel{mode=on},tp-relocate,tp-transfers,tp-link-points,tp-relay")
    (path := tmp_path / "sp.mlir").write_text(str(module))
    np.savez(inputs := tmp_path / "in.npz", **values)
    run = tool("tp-run", path, "--mpi", 2, "--inputs", inputs, "--outputs", tmp_path / "o.npz")
    assert run.returncode == 0, run.stderr
    got = np.load(tmp_path / "o.npz")
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_narrowing_after_it_carries_the_reduce_scatters_and_the_norm_in_bf16() -> None:
    """tp-narrow-wire after tp-sequence-parallel: the reduce-scatters (their blocks read by
    the residual add) and the gathered norm (read by the projections) carry bf16, the
    gathered output (returned) f32. The numbers are within bf16 rounding of the source's,
    and the same, bit for bit, at every stage after; certified at each."""
    source = parse(step(2))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, "tp-verify,tp-sequence-parallel{mode=on},tp-narrow-wire")
    width = {
        op.parts[0].type.element_type.name: None  # type: ignore[attr-defined]
        for op in _ops(module, ReduceScatterOp)
    }
    assert list(width) == ["bf16"]
    gathered = {
        g.result.name_hint: g.result.type.element_type.name for g in _ops(module, AllGatherOp)
    }  # type: ignore[attr-defined]
    assert gathered == {"l_post_norm_bf16": "bf16", "l_out": "f32"}
    narrow = run_program(module, values)
    for name in want:
        np.testing.assert_allclose(narrow[name], want[name], rtol=2e-2, atol=2e-2, err_msg=name)
    assert_kept_through_lowering(module, values, narrow)


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(("chips", "tokens", "tiles"), [(2, 8, 2), (2, 7, 2), (2, 8, 4)])
def test_tiles_keep_the_numbers_bitwise(chips: int, tokens: int, tiles: int) -> None:
    """Each all-reduce's partials made tile by tile, one reduce-scatter a tile (7 tokens in 2
    tiles of 4 and 3, each cut 2 + 2 and 2 + 1): bitwise the source at every stage,
    certified at each."""
    source = parse(step(chips, tokens=tokens))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, f"tp-verify,tp-sequence-parallel{{mode=on tiles={tiles}}}")
    assert status(module) == "valid"
    assert len(_ops(module, ReduceScatterOp)) == 2 * tiles
    # The contractions are cut into tiles, not added to: the same FLOPs as the source's.
    assert matmul_flops(module) == matmul_flops(source)
    # The gather side: the MLP's projections read the gathered norm's tiles, not their join.
    readers = [
        op
        for op in module.walk()
        if isinstance(op, linalg.GenericOp)
        and any(
            isinstance(v.owner, AllGatherOp) and "post_norm" in str(v.name_hint) for v in op.inputs
        )
    ]
    assert len(readers) == 2 * chips * tiles  # gate and up, per chip and tile
    got = run_program(module, values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert_kept_through_lowering(module, values, want)


def test_an_inlined_model_is_made_in_tiles_across_its_layers() -> None:
    """Inlined (tp-inline), the whole model is one function: the embedding's lookups are made
    tile by tile too, each chip reading the same window of the ids (a spine input is cut once
    for every chip: cut per chip, the lookups read different ids values and were refused), and
    the region crosses the layers. Certified, bitwise the source at every stage."""
    source = parse(step(2, tokens=8))
    values = {**random_weights(source, 3), **random_inputs(source, 4, position=0)}
    want = run_program(source, values)
    module = source.clone()
    apply(module, "tp-verify,tp-inline,tp-sequence-parallel{mode=on tiles=2}")
    assert status(module) == "valid"
    scatters = [op for op in module.walk() if isinstance(op, ReduceScatterOp)]
    assert len(scatters) == 2 * (1 + 2 * 2)  # the embedding's and two a layer, in 2 tiles
    got = run_program(module, values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert_kept_through_lowering(module, values, want)


LIT_TILES = Path(__file__).parent.parent / "lit_tests" / "tp-sequence-parallel" / "tiles.mlir"
CHIP0_ROW = "tensor<1x8xf32, #tp.chip<0>>"
ZEROS = (
    f"    %zb0 = tensor.empty() : {CHIP0_ROW}\n"
    f"    %zb = linalg.fill ins(%zero : f32) outs(%zb0 : {CHIP0_ROW}) -> {CHIP0_ROW}\n"
)


def test_tiles_gathered_with_a_constant_block_still_name_their_rows() -> None:
    """A constant block stands for its own slice's rows: two tiles gathered with one never
    look alike, so chip 1 building tile 1's MLP from tile 0 is refused (the gathers' runs
    fell back to each tile's own whole axis, so it was certified), and the same program with
    each chip reading its own tile is certified."""
    module = parse(_program(LIT_TILES.read_text()))
    apply(module, "tp-sequence-parallel{mode=on tiles=2}")
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    text = out.getvalue()
    edits = [
        ("    %y_t0 = tp.all_gather %y_t0b0,", ZEROS + "    %y_t0 = tp.all_gather %zb,"),
        ("%y_t1 = tp.all_gather %y_t1b0,", "%y_t1 = tp.all_gather %zb,"),
    ] + [
        (
            f"%out_t{t}b{b} = arith.addf %t_t{t}b{b}, %h_t{t}b{b}",
            f"%out_t{t}b{b} = arith.addf %t_t{t}b{b}, %t_t{t}b{b}",
        )
        for t in (0, 1)
        for b in (0, 1)
        for out in [f"%out_t{t}b{b} = arith.addf"]
    ]
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    check_obligation(parse(text))  # each chip reads its own tile: certified
    mixed = text.replace("ins(%y_t1, %wu1", "ins(%y_t0, %wu1")
    assert mixed != text
    with pytest.raises(TpDiagnostic, match=r"partials holding different parts of its result"):
        check_obligation(parse(mixed))


def _program(lit: str) -> str:
    """The module a lit file holds (after its comment lines)."""
    return "\n".join(line for line in lit.splitlines() if not line.startswith("//"))


def test_too_many_tiles_are_refused() -> None:
    module = parse(step(2, tokens=4))
    with pytest.raises(TpDiagnostic, match=r"tiles=4: %l_o_sum has 4 rows, fewer than a row"):
        apply(module, "tp-sequence-parallel{mode=on tiles=4}")


def test_tiles_by_cost_are_reported(capsys: pytest.CaptureFixture) -> None:
    module = parse(step(2, tokens=8))
    apply(module, "tp-sequence-parallel{mode=on tiles=0 report=true}")
    said = capsys.readouterr().err
    assert "tiles 1: " in said and "2: " in said and "4: " in said and "-> " in said


def test_a_generic_reading_its_row_index_stays_out_of_the_region() -> None:
    """A chip's block would count its rows from 0: the op reads what it needs whole (the
    residual sum and the sums of squares, gathered)."""
    source = parse((DATA / "sp_index_body.mlir").read_text())
    values = {
        name: np.random.default_rng(5).standard_normal(shape).astype(np.float32)
        for name, shape in (("x", (4, 8)), ("w", (8, 8)), ("res", (4, 8)), ("g", (8,)))
    }
    want = run_program(source, values)
    module = source.clone()
    apply(module, "tp-verify,tp-sequence-parallel{mode=on}")
    assert status(module) == "valid" and _gathered_names(module) == {"h", "ss"}
    got = run_program(module, values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def _gathered_norm(v: SSAValue) -> bool:
    """Whether ``v`` is an all-gathered tile of the post-attention norm."""
    return isinstance(v.owner, AllGatherOp) and "post_norm" in str(v.name_hint)


def _gathered_names(module: ModuleOp) -> set[str]:
    return {op.result.name_hint for op in module.walk() if isinstance(op, AllGatherOp)}


def test_a_certified_program_is_never_left_uncertified(capsys: pytest.CaptureFixture) -> None:
    """Partials that are chip arguments: the blocks' rows cannot be told, so the result would
    not be certified; the pass keeps the all-reduce and says why."""
    source = parse(
        (Path(__file__).parent.parent / "lit_tests/tp-legalize/pipeline.mlir").read_text()
    )
    apply(source, "tp-verify")
    module = source.clone()
    apply(module, "tp-sequence-parallel{mode=on}")
    assert status(module) == "valid" and str(module) == str(source)
    assert "kept every all-reduce: the result would not be certified" in capsys.readouterr().err


def test_a_function_of_several_blocks_is_refused_where_it_branches() -> None:
    text = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    cf.br ^bb1
  ^bb1:
    func.return %a : tensor<4xf32>
  }
}"""
    with pytest.raises(TpDiagnostic, match="'cf.br' ends block 1 of 2"):
        apply(parse(text), "tp-sequence-parallel")
