"""tp.reduce_scatter and tp.all_gather: first-class collectives that cut a tensor into one
block per chip.

The program under test is sequence parallelism's core: a row-parallel projection's partials
reduce-scattered along the tokens, each chip adding its block of the residual stream, the
blocks all-gathered. Its numbers equal a plain numpy ``x @ w + res`` (written here, not tp's)
at every stage — source, placed (the reduce-scatter spelled as each chip's blocks and folds),
transfers, phases, per-chip programs with the host's relay — under value and storage
semantics, for blocks of unequal sizes and both reduce-scatter algorithms; the certificate
holds at every stage; each fault of the all-gather rule is refused naming the chip and the
reason, before and after lowering; and a two-shot all-reduce is their composition: the same
numbers, bit for bit, and the same exchanges.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import tool
from ir_helpers import apply, parse

from tp_dialect.analysis.certify.obligation import check_obligation
from tp_dialect.attrs import even_ranges
from tp_dialect.certificate import status
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.ops import TransferOp
from tp_dialect.runtime.reference import run_program

K, M = 3, 5  # each chip's share of the contraction; the output's width


def _t(shape: tuple[int, ...], chip: int | None = None) -> str:
    enc = "" if chip is None else f", #tp.chip<{chip}>"
    return f"tensor<{'x'.join(map(str, shape))}xf32{enc}>"


def _slices(ranges: list[tuple[int, int]], full: tuple[int, ...], axis: int = 0) -> str:
    full_s = ", ".join(map(str, full))
    return (
        "["
        + ", ".join(
            f"#tp.slice<axis = {axis}, ranges = [({s}, {n})], full = [{full_s}]>" for s, n in ranges
        )
        + "]"
    )


def program(
    n: int,
    s: int,
    algorithm: str = "direct",
    res_rows: list[tuple[int, int]] | None = None,
) -> str:
    """``x @ w + res`` over ``n`` chips: chip c's partial from its K columns of x and rows of
    w, reduce-scattered along the ``s`` tokens (even blocks), each block plus the rows
    ``res_rows[c]`` of the residual (its own block unless a fault says otherwise), gathered."""
    blocks = even_ranges(s, n)
    res_rows = res_rows or blocks
    lines = []
    xt, wt, full = _t((s, n * K)), _t((n * K, M)), (s, M)
    for c in range(n):
        lines += [
            f"%x{c} = tp.shard %x at #tp.slice<axis = 1, ranges = [({c * K}, {K})], "
            f"full = [{s}, {n * K}]> : {xt} -> {_t((s, K), c)}",
            f"%w{c} = tp.shard %w at #tp.slice<axis = 0, ranges = [({c * K}, {K})], "
            f"full = [{n * K}, {M}]> : {wt} -> {_t((K, M), c)}",
            f"%e{c} = tensor.empty() : {_t(full, c)}",
            f"%z{c} = linalg.fill ins(%zero : f32) outs(%e{c} : {_t(full, c)}) -> {_t(full, c)}",
            f"%p{c} = linalg.matmul ins(%x{c}, %w{c} : {_t((s, K), c)}, {_t((K, M), c)}) "
            f"outs(%z{c} : {_t(full, c)}) -> {_t(full, c)}",
        ]
    alg = "" if algorithm == "direct" else f' algorithm "{algorithm}"'
    parts = ", ".join(f"%r{c}" for c in range(n))
    lines.append(
        f"{parts} = tp.reduce_scatter {', '.join(f'%p{c}' for c in range(n))} slices "
        f"{_slices(blocks, full)}{alg} : {', '.join(_t(full, c) for c in range(n))} -> "
        f"{', '.join(_t((b, M), c) for c, (_, b) in enumerate(blocks))}"
    )
    for c, ((_, b), (start, rows)) in enumerate(zip(blocks, res_rows, strict=True)):
        lines += [
            f"%res{c} = tensor.extract_slice %res[{start}, 0] [{rows}, {M}] [1, 1] : "
            f"{_t(full)} to {_t((rows, M))}",
            f"%f{c} = tensor.empty() : {_t((b, M), c)}",
            f"%h{c} = linalg.add ins(%r{c}, %res{c} : {_t((b, M), c)}, {_t((rows, M))}) "
            f"outs(%f{c} : {_t((b, M), c)}) -> {_t((b, M), c)}",
        ]
    lines.append(
        f"%g = tp.all_gather {', '.join(f'%h{c}' for c in range(n))} slices "
        f"{_slices(blocks, full)} : {', '.join(_t((b, M), c) for c, (_, b) in enumerate(blocks))}"
        f" -> {_t(full)}"
    )
    body = "\n    ".join(["%zero = arith.constant 0.0 : f32", *lines])
    return f"""builtin.module attributes {{tp.chips = {n} : i64}} {{
  func.func @sp(%x: {xt}, %w: {wt}, %res: {_t(full)}) -> {_t(full)} {{
    {body}
    func.return %g : {_t(full)}
  }}
}}"""


def _values(n: int, s: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((s, n * K)).astype(np.float32),
        "w": rng.standard_normal((n * K, M)).astype(np.float32),
        "res": rng.standard_normal((s, M)).astype(np.float32),
    }


STAGES = ("tp-relocate", "tp-transfers", "tp-phase")
LINKED = "tp-link-points,tp-relay"


@pytest.mark.parametrize("algorithm", ["direct", "ring"])
@pytest.mark.parametrize(("n", "s"), [(2, 4), (3, 7), (4, 5)])
@pytest.mark.parametrize("storage", [False, True], ids=["values", "storage"])
def test_every_stage_computes_x_w_plus_res(algorithm: str, n: int, s: int, storage: bool) -> None:
    values = _values(n, s)
    want = values["x"].astype(np.float64) @ values["w"] + values["res"]
    module = parse(program(n, s, algorithm))
    apply(module, "tp-verify")
    source = run_program(module, values, storage=storage)["result0"]
    np.testing.assert_allclose(source, want, rtol=1e-5, atol=1e-5)
    linked = module.clone()
    for stage in STAGES:
        apply(module, stage)
        if stage == "tp-transfers":
            apply(linked := module.clone(), LINKED)
        assert status(module) == "valid", stage
        got = run_program(module, values, storage=storage)["result0"]
        if algorithm == "direct":  # a direct fold adds in chip order, as the op does
            np.testing.assert_array_equal(got, source, err_msg=stage)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=stage)
    assert status(linked) == "valid"
    got = run_program(linked, values, storage=storage)["result0"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_each_chip_holds_its_block_of_the_sum() -> None:
    """The op alone, in the interpreter: chip c's result is rows ``blocks[c]`` of Σ partials
    (5 tokens over 2 chips: 3 and 2)."""
    text = program(2, 5).replace("func.return %g", "func.return %r0, %r1, %g")
    text = text.replace(
        f"-> {_t((5, M))} {{", f"-> ({_t((3, M), 0)}, {_t((2, M), 1)}, {_t((5, M))}) {{"
    )
    text = text.replace(
        f"func.return %r0, %r1, %g : {_t((5, M))}",
        f"func.return %r0, %r1, %g : {_t((3, M), 0)}, {_t((2, M), 1)}, {_t((5, M))}",
    )
    values = _values(2, 5, seed=3)
    got = run_program(parse(text), values)
    total = values["x"] @ values["w"]
    np.testing.assert_allclose(got["result0"], total[:3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["result1"], total[3:], rtol=1e-5, atol=1e-6)


FAULTS = [
    # chip 0 adds the residual's rows 2..4 to its block 0..2: gathered, row 0 holds row 2's
    (
        (4, 2, [(2, 2), (2, 2)]),
        r"chip 1's %h1 along axis 0 pairs its parts position by "
        r"position, chip 0's shifts parts by \+2 of an axis of 4 \[slices-misaligned\]",
    ),
    # uneven blocks (3, 2): chip 1 adds rows 2..4 to its block 3..5
    (
        (5, 2, [(0, 3), (2, 2)]),
        r"chip 1's %h1 along axis 0 shifts parts by -1 of an axis of 5, "
        r"chip 0's pairs .*\[slices-misaligned\]",
    ),
]


@pytest.mark.parametrize(("shape", "match"), FAULTS, ids=["swapped-rows", "shifted-rows"])
def test_a_block_gathered_where_it_does_not_belong_is_refused(
    shape: tuple[int, int, list[tuple[int, int]]], match: str
) -> None:
    s, n, rows = shape
    check_obligation(parse(program(n, s)))  # the sound twin is certified
    module = parse(program(n, s, res_rows=rows))
    with pytest.raises(TpDiagnostic, match=match):
        check_obligation(module)
    # ... and the numbers show why: the fault gathers another row's residual.
    values = _values(n, s)
    got = run_program(module, values)["result0"]
    assert not np.allclose(got, values["x"] @ values["w"] + values["res"], atol=1e-4)


def test_the_fault_is_refused_after_lowering_too() -> None:
    module = parse(program(2, 4, res_rows=[(2, 2), (2, 2)]))
    for stage in (*STAGES, LINKED):
        apply(module, stage)
        with pytest.raises(TpDiagnostic, match=r"paired otherwise.*\[slices-misaligned\]"):
            check_obligation(module)


def test_a_block_whose_positions_cannot_be_told_is_refused() -> None:
    """A chip block argument: nothing says which rows it holds."""
    t0, t1, full = _t((2, M), 0), _t((2, M), 1), _t((4, M))
    text = f"""builtin.module attributes {{tp.chips = 2 : i64}} {{
  func.func @f(%b0: {t0}, %b1: {t1}) -> {full} {{
    %g = tp.all_gather %b0, %b1 slices {_slices([(0, 2), (2, 2)], (4, M))} : {t0}, {t1} -> {full}
    func.return %g : {full}
  }}
}}"""
    with pytest.raises(TpDiagnostic, match=r"chip 0's block %b0.*cannot be proven.*\[slices-gap\]"):
        check_obligation(parse(text))


def test_partials_that_overlap_are_refused_as_for_an_all_reduce() -> None:
    """Both chips contract the same columns: the reduce-scatter would sum them twice."""
    text = program(2, 4).replace(
        "ranges = [(3, 3)], full = [4, 6]", "ranges = [(0, 3)], full = [4, 6]"
    )
    text = text.replace("ranges = [(3, 3)], full = [6, 5]", "ranges = [(0, 3)], full = [6, 5]")
    with pytest.raises(TpDiagnostic, match=r"\[slices-overlap\]"):
        check_obligation(parse(text))


def _twoshot(n: int, s: int) -> str:
    """The same partials all-reduced by a two-shot all-reduce, plus the whole residual."""
    full = (s, M)
    text = program(n, s)
    head, _, _ = text.partition(f"{', '.join(f'%r{c}' for c in range(n))} = tp.reduce_scatter")
    return (
        head + f'%sum = tp.allreduce {", ".join(f"%p{c}" for c in range(n))} algorithm "twoshot" : '
        f"{', '.join(_t(full, c) for c in range(n))} -> {_t(full)}\n"
        f"    %g = arith.addf %sum, %res : {_t(full)}\n"
        f"    func.return %g : {_t(full)}\n  }}\n}}"
    )


@pytest.mark.parametrize(("n", "s"), [(2, 4), (4, 8)])
def test_a_two_shot_all_reduce_is_a_reduce_scatter_then_an_all_gather(n: int, s: int) -> None:
    """Same numbers bit for bit, and the same transfers: the reduce-scatter's N(N-1) blocks,
    the all-gather's N(N-1) (the residual added before the gather here, after it there)."""
    values = _values(n, s, seed=5)
    split, composed = parse(program(n, s)), parse(_twoshot(n, s))
    for module in (split, composed):
        apply(module, "tp-relocate,tp-transfers")
    np.testing.assert_array_equal(
        run_program(split, values)["result0"], run_program(composed, values)["result0"]
    )
    moves = [
        sorted((t.src, t.dst) for t in m.walk() if isinstance(t, TransferOp))
        for m in (split, composed)
    ]
    assert moves[0] == moves[1]
    assert len(moves[0]) == 2 * n * (n - 1)


@pytest.mark.parametrize("backend", ["mpi", "iree"])
def test_per_chip_programs_run_on_mpi_ranks_and_natively(tmp_path, backend: str) -> None:  # noqa: ANN001 - pytest's
    """Three MPI ranks; IREE in one process (tp-export writes the all-gather as a
    concatenation in chip order)."""
    module = parse(program(3, 7))
    apply(module, "tp-verify,tp-relocate,tp-transfers," + LINKED)
    path = tmp_path / "sp.mlir"
    path.write_text(str(module))
    values = _values(3, 7, seed=9)
    np.savez(inputs := tmp_path / "in.npz", **values)
    out = tmp_path / "out.npz"
    how = ["--mpi", 3] if backend == "mpi" else ["--backend", "iree"]
    run = tool("tp-run", path, *how, "--inputs", inputs, "--outputs", out)
    assert run.returncode == 0, run.stderr
    got = np.load(out)["result0"]
    np.testing.assert_allclose(got, values["x"] @ values["w"] + values["res"], rtol=1e-5, atol=1e-5)
