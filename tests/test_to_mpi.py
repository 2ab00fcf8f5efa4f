"""tp-to-mpi: the per-chip programs as one SPMD function over xDSL's ``mpi`` dialect.

The SPMD function, run by N ranks on the interpreter (`tp_dialect.runtime.spmd`: a thread per
rank, messages through queues), computes bit for bit what the per-chip programs compute under
the host's relay — on generated Qwen3 programs for every algorithm tp-link-points spells,
bf16 wires, storage semantics, programs in any order, more ranks than chips, and random
programs (Hypothesis) — with every send completing only when received (MPI's least
guarantee, so a schedule needing buffering deadlocks here as on a real MPI);
xDSL's ``lower-mpi`` takes every one to MPI library calls; a refused program is left as it
was; a message nobody sends is a named error, not a hang; and ``tp-run`` runs the SPMD form
with ``--check``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import CTX, assert_bitwise, program, tiny, tool, values_for
from hypothesis import given, settings
from ir_helpers import SETTINGS, apply, parse
from test_properties_relay import Lowered, lowered
from xdsl.dialects import mpi
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.transforms.lower_mpi import LowerMPIPass

from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.program_ops import ChipProgramOp
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.spmd import SpmdError, run_spmd

PROGRAMS = "tp-relocate{allreduce=%s},tp-transfers,tp-phase,tp-link-points,tp-relay"


def _programs(chips: int, algorithm: str, narrow: bool = False) -> ModuleOp:
    module = program(tiny(chips=chips)).clone()
    apply(module, ("tp-raise-allreduce,tp-narrow-wire," if narrow else "") + PROGRAMS % algorithm)
    return module


def _spmd(module: ModuleOp) -> ModuleOp:
    out = module.clone()
    apply(out, "tp-to-mpi")
    assert not any(op.name.startswith("tp.chip_program") for op in out.walk())
    return out


@pytest.mark.parametrize("algorithm", ["fold", "oneshot", "twoshot"])
@pytest.mark.parametrize("chips", [2, 4])
def test_ranks_compute_the_per_chip_programs_bits(chips: int, algorithm: str) -> None:
    module = _programs(chips, algorithm)
    values = values_for(module)
    spmd = _spmd(module)
    assert_bitwise(run_spmd(spmd, values, chips), run_program(module, values), "value")
    # storage semantics: each rank's in-place cache writes land in its own buffers
    stored = run_spmd(spmd, values, chips, storage=True)
    assert_bitwise(stored, run_program(module, values, storage=True), "storage")


def test_bf16_wires_travel_as_bf16_messages() -> None:
    module = _programs(2, "twoshot", narrow=True)
    values = values_for(module)
    spmd = _spmd(module)
    sent = [op for op in spmd.walk() if isinstance(op, mpi.IsendOp)]
    assert any("bf16" in str(op.buffer.owner.operands[0].type) for op in sent)  # type: ignore[union-attr]
    assert_bitwise(run_spmd(spmd, values, 2), run_program(module, values))


def test_programs_in_any_block_order() -> None:
    """Chip 1's program written before chip 0's: the branches stand where the first did."""
    module = _programs(2, "twoshot")
    values = values_for(module)
    want = run_program(module, values)
    block = next(op for op in module.walk() if isinstance(op, FuncOp)).body.block
    zero, one = (op for op in block.ops if isinstance(op, ChipProgramOp))
    one.detach()
    block.insert_op_before(one, zero)
    assert_bitwise(run_spmd(_spmd(module), values, 2), want)


def test_ranks_past_the_last_chip_do_nothing() -> None:
    module = _programs(2, "oneshot")
    values = values_for(module)
    assert_bitwise(run_spmd(_spmd(module), values, 5), run_program(module, values))


@pytest.mark.parametrize("algorithm", ["fold", "twoshot"])
def test_lower_mpi_takes_it_to_mpi_calls(algorithm: str) -> None:
    spmd = _spmd(_programs(4, algorithm))
    LowerMPIPass().apply(CTX, spmd)
    names = {op.name for op in spmd.walk()}
    assert not {n for n in names if n.startswith("mpi.")}, names
    text = str(spmd)
    for call in ("MPI_Comm_rank", "MPI_Isend", "MPI_Recv", "MPI_Waitall", "MPI_Send"):
        assert f"@{call}(" in text, call


def test_a_message_nobody_sends_is_a_named_error() -> None:
    spmd = _spmd(_programs(2, "oneshot"))
    values = values_for(spmd)
    first = next(op for op in spmd.walk() if isinstance(op, mpi.IsendOp))
    first.detach()
    first.erase()
    with pytest.raises(
        SpmdError, match=r"rank \d waited 1 s for tag \d+ from rank \d: the ranks deadlock"
    ):
        run_spmd(spmd, values, 2, timeout=1.0)


def test_a_refused_program_is_left_as_it_was() -> None:
    text = """builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %out = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.finish %x0 : tensor<4xf32>
    } -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %q = tp.link 1 sends() as [] receives ["q"] : () -> tensor<4xf32, #tp.chip<1>>
      tp.finish
    } -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
    }
    func.return %out : tensor<4xf32>
  }
}"""
    module = parse(text)
    before = str(module)
    with pytest.raises(TpDiagnostic, match="no relay copy brings"):
        apply(module, "tp-to-mpi")
    assert str(module) == before


@settings(max_examples=40, **SETTINGS)
@given(lowered())
def test_random_programs_run_as_ranks_as_under_the_relay(case: Lowered) -> None:
    """Random programs (N = 1..4, fold or ring, some chips starting with a receive): the
    SPMD form computes the relay's bits, under value and storage semantics."""
    spmd = _spmd(case.module)
    n = case.prog.n
    want = run_program(case.module, case.prog.inputs)
    assert_bitwise(run_spmd(spmd, case.prog.inputs, n, timeout=20.0), want)
    stored = run_program(case.module, case.prog.inputs, storage=True)
    assert_bitwise(run_spmd(spmd, case.prog.inputs, n, timeout=20.0, storage=True), stored)


def test_tp_run_runs_the_spmd_form_and_checks_it(tmp_path: Path) -> None:
    source, spmd, outputs = (tmp_path / n for n in ("layer.mlir", "spmd.mlir", "out.npz"))
    done = tool("tp-gen", "qwen3", "--preset", "tiny", "--chips", 2, "-o", source)
    assert done.returncode == 0, done.stderr
    done = tool("tp-opt", source, "-p", (PROGRAMS % "twoshot") + ",tp-to-mpi", "-o", spmd)
    assert done.returncode == 0, done.stderr
    run = ("--random-weights", 0, "--random-inputs", 1, "--check", "--outputs", outputs)
    done = tool("tp-run", spmd, *run)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "hidden_states" in done.stdout and "FAIL" not in done.stdout
    with np.load(outputs) as got:
        assert np.isfinite(got["hidden_states"]).all()


def test_the_shard_example_goes_through_to_ranks(tmp_path: Path) -> None:
    """The README's way: the annotated MLP imported, certified, lowered to the SPMD form and
    run as ranks against its own annotated source (annotations taken out), with a note that
    tp-verify does not read the MPI form."""
    example = Path(__file__).resolve().parents[1] / "examples" / "shard_mlp.mlir"
    spmd = tmp_path / "spmd.mlir"
    passes = "tp-import-shard,tp-relocate,tp-transfers,tp-phase,tp-verify,tp-link-points,"
    done = tool("tp-opt", example, "-p", passes + "tp-relay,tp-to-mpi", "-o", spmd)
    assert done.returncode == 0, done.stderr
    done = tool("tp-run", spmd, "--random-weights", 0, "--random-inputs", 1, "--against", example)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "result0" in done.stdout and "FAIL" not in done.stdout
    assert "an SPMD function over mpi (tp-to-mpi's), which tp-verify does not read" in done.stderr


@pytest.mark.parametrize("narrow", [False, True])
def test_real_mpi_ranks_compute_the_in_process_bits(tmp_path: Path, narrow: bool) -> None:
    """``tp-run --mpi 2`` on the SPMD form: two MPI processes (mpich through mpi4py), the
    mpi ops over MPI itself, compute what the threads compute in one process (f32 and bf16
    messages)."""
    module = _programs(2, "twoshot", narrow=narrow)
    spmd = tmp_path / "spmd.mlir"
    spmd.write_text(str(_spmd(module)))
    outputs = tmp_path / "out.npz"
    run = ("--random-weights", 0, "--random-inputs", 1, "--outputs", outputs)
    done = tool("tp-run", spmd, *run, "--mpi", 2, "--check")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "on 2 MPI rank(s) (SPMD over mpi)" in done.stdout and "FAIL" not in done.stdout
    local = tmp_path / "local.npz"
    assert tool("tp-run", spmd, *run[:-1], local).returncode == 0
    with np.load(outputs) as a, np.load(local) as b:
        assert_bitwise(dict(a), dict(b), "MPI ranks")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--stats",), "--stats counts per-chip programs' ranks: not an SPMD module's"),
        (("--relay", "host"), "an SPMD module over mpi has no host rank: not --relay host"),
        (("--mpi", 3), "--mpi 3 does not fit the program: it has 2 chip(s)"),
    ],
)
def test_what_spmd_ranks_cannot_do_is_refused_before_they_start(
    tmp_path: Path, flags: tuple[object, ...], said: str
) -> None:
    spmd = tmp_path / "spmd.mlir"
    spmd.write_text(str(_spmd(_programs(2, "oneshot"))))
    mpi_flags = () if "--mpi" in flags else ("--mpi", 2)
    done = tool("tp-run", spmd, "--random-weights", 0, "--random-inputs", 1, *mpi_flags, *flags)
    assert done.returncode == 1
    assert said in done.stderr and "Traceback" not in done.stderr
