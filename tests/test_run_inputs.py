"""tp-run checks every input against its port before running (issue 15): dtype by an
explicit cast policy, shape, positions in range, machine figures, output paths; and every
refusal is one located or named line, exit 1."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.missing import instead
from tp_dialect.tools.source import parse_module
from tp_dialect.tools.tp_gen import main as tp_gen
from tp_dialect.tools.tp_run import main
from tp_dialect.universe import tp_context


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("prog") / "layer.mlir"
    assert tp_gen(["qwen3", "--preset", "tiny", "--chips", "2", "-o", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def tensors(program) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    module, _ = parse_module(tp_context(), program.read_text(), str(program))
    return random_weights(module, 0), random_inputs(module, 1, 3)


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def save(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def outputs(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error:" in line]


# -- dtype: the cast policy ----------------------------------------------------------


def test_f64_input_is_refused_by_default_with_the_flag_that_converts(
    program, tensors, tmp_path, capsys
) -> None:
    _, inputs = tensors
    bad = {**inputs, "hidden_states": inputs["hidden_states"].astype(np.float64)}
    code, out, err = run(
        capsys, program, "--random-weights", 0, "--inputs", save(tmp_path / "i.npz", **bad)
    )
    assert code == 1 and "ran " not in out
    assert error_lines(err) == [
        "tp-run: error: argument 'hidden_states' is float64, not float32 "
        "(--cast same_kind converts, rounding)"
    ]


def test_same_kind_converts_says_so_and_equals_the_run_on_rounded_inputs(
    program, tensors, tmp_path, capsys
) -> None:
    _, inputs = tensors
    wide = {**inputs, "hidden_states": inputs["hidden_states"].astype(np.float64) + 1e-9}
    rounded = {**inputs, "hidden_states": wide["hidden_states"].astype(np.float32)}
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    code, _, err = run(
        capsys,
        program,
        "--random-weights",
        0,
        "--inputs",
        save(tmp_path / "wide.npz", **wide),
        "--cast",
        "same_kind",
        "--outputs",
        a,
    )
    assert code == 0, err
    assert "tp-run: note: argument 'hidden_states' converted from float64 to f32" in err
    code, _, err = run(
        capsys,
        program,
        "--random-weights",
        0,
        "--inputs",
        save(tmp_path / "r.npz", **rounded),
        "--outputs",
        b,
    )
    assert code == 0, err
    got, want = outputs(a), outputs(b)
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_bf16_checkpoint_converts_exactly_by_default_and_is_refused_by_cast_no(
    program, tensors, tmp_path, capsys
) -> None:
    weights, _ = tensors
    bf16 = {k: v.astype(ml_dtypes.bfloat16) for k, v in weights.items()}
    ckpt = tmp_path / "w.safetensors"
    save_file(bf16, str(ckpt))
    out = tmp_path / "o.npz"
    code, _, err = run(capsys, program, "--weights", ckpt, "--random-inputs", 1, "--outputs", out)
    assert code == 0, err
    assert "note:" not in err  # exact: nothing rounds
    # The same numbers as f32 weights holding the bf16 values.
    exact = tmp_path / "w32.safetensors"
    save_file({k: v.astype(np.float32) for k, v in bf16.items()}, str(exact))
    ref = tmp_path / "r.npz"
    assert run(capsys, program, "--weights", exact, "--random-inputs", 1, "--outputs", ref)[0] == 0
    for k, v in outputs(ref).items():
        np.testing.assert_array_equal(outputs(out)[k], v)
    code, _, err = run(capsys, program, "--weights", ckpt, "--random-inputs", 1, "--cast", "no")
    assert code == 1
    assert len(error_lines(err)) == 1 and "is bfloat16, not float32" in err


@pytest.mark.parametrize(
    "dtype, refused",
    [(np.float64, True), (np.float16, False), (np.int32, True), (np.float32, False)],
)
def test_checkpoint_dtypes_follow_the_safe_rule(
    program, tensors, tmp_path, capsys, dtype, refused
) -> None:
    weights, _ = tensors
    ckpt = tmp_path / "w.safetensors"
    save_file({k: v.astype(dtype) for k, v in weights.items()}, str(ckpt))
    code, out, err = run(capsys, program, "--weights", ckpt, "--random-inputs", 1)
    assert code == (1 if refused else 0), err
    if refused:
        assert "ran " not in out
        lines = error_lines(err)
        assert len(lines) == 1 and f"is {np.dtype(dtype)}, not float32" in lines[0]


def test_integer_hidden_states_are_refused_by_default(program, tensors, tmp_path, capsys):
    _, inputs = tensors
    bad = {**inputs, "hidden_states": np.ones(inputs["hidden_states"].shape, np.int64)}
    code, _, err = run(
        capsys, program, "--random-weights", 0, "--inputs", save(tmp_path / "i.npz", **bad)
    )
    assert code == 1
    assert error_lines(err) == [
        "tp-run: error: argument 'hidden_states' is int64, not float32 "
        "(--cast same_kind converts, rounding)"
    ]


def test_a_float_position_is_refused_whatever_the_cast(program, tensors, tmp_path, capsys) -> None:
    _, inputs = tensors
    path = save(tmp_path / "p.npz", **{**inputs, "position": np.float64(3.7)})
    for cast in ("no", "safe", "same_kind"):
        code, out, err = run(
            capsys, program, "--random-weights", 0, "--inputs", path, "--cast", cast
        )
        assert code == 1 and "ran " not in out
        assert error_lines(err) == ["tp-run: error: argument 'position' is float64, not int64"]


def test_a_narrower_integer_position_binds(program, tensors, tmp_path, capsys) -> None:
    _, inputs = tensors
    path = save(tmp_path / "p.npz", **{**inputs, "position": np.int32(3)})
    code, _, err = run(capsys, program, "--random-weights", 0, "--inputs", path, "--cast", "no")
    assert code == 0, err


def test_a_wrong_shape_is_named(program, tensors, tmp_path, capsys) -> None:
    _, inputs = tensors
    path = save(tmp_path / "s.npz", **{**inputs, "position": np.array([3, 4])})
    code, _, err = run(capsys, program, "--random-weights", 0, "--inputs", path)
    assert code == 1
    assert error_lines(err) == ["tp-run: error: argument 'position': expected shape [], found [2]"]


# -- positions in range ----------------------------------------------------------------


@pytest.mark.parametrize("position", [-1, 16, 2**40])
def test_a_position_outside_the_cache_is_located_at_the_insert(
    program, tensors, tmp_path, capsys, position
) -> None:
    _, inputs = tensors
    path = save(tmp_path / "p.npz", **{**inputs, "position": np.int64(position)})
    code, out, err = run(capsys, program, "--random-weights", 0, "--inputs", path)
    assert code == 1 and "ran " not in out
    first = error_lines(err)[0]
    assert first.startswith(f"{program}:") and "'tensor.insert_slice': offset" in first
    line = int(first.split(":")[1])
    assert "tensor.insert_slice" in program.read_text().splitlines()[line - 1]
    assert f"offset {position}," in first and "leave its 16 entries" in first


def test_position_flag_at_the_cache_size_is_refused(program, capsys) -> None:
    code, _, err = run(
        capsys, program, "--random-weights", 0, "--random-inputs", 0, "--position", 16
    )
    assert code == 1
    assert error_lines(err) == [
        "tp-run: error: position 16 is beyond the cache's 16 positions (0..15)"
    ]
    assert (
        run(capsys, program, "--random-weights", 0, "--random-inputs", 0, "--position", 15)[0] == 0
    )


@pytest.mark.parametrize("position", [2**63 - 1, 2**63, 10**20])
def test_position_flag_beyond_i64_or_the_cache_is_one_line(program, capsys, position) -> None:
    code, _, err = run(
        capsys, program, "--random-weights", 0, "--random-inputs", 0, "--position", position
    )
    assert code == 1 and "internal" not in err
    [line] = error_lines(err)
    if position > 2**63 - 1:
        assert line == (
            f"tp-run: error: position {position} does not fit argument 'position' "
            "(i64: 0..9223372036854775807)"
        )
    else:
        assert line == (
            f"tp-run: error: position {position} is beyond the cache's 16 positions (0..15)"
        )


def test_position_flag_with_an_inputs_file_is_refused(program, tensors, tmp_path, capsys) -> None:
    """--position with --inputs used to be ignored silently (the file's position ran): the
    file holds the position with the caches filled up to it, so it is an error."""
    weights, _ = tensors
    module, _ = parse_module(tp_context(), program.read_text(), str(program))
    at7 = save(tmp_path / "at7.npz", **random_inputs(module, 1, 7))
    out = tmp_path / "out.npz"
    code, stdout, err = run(
        capsys, program, "--random-weights", 0, "--inputs", at7, "--position", 3, "--outputs", out
    )
    assert code == 1 and "ran " not in stdout and not out.exists()
    assert error_lines(err) == [
        "tp-run: error: --position 3 with --inputs: the inputs file holds the step's position, "
        "with the caches filled up to it; set it there (--position is for --random-inputs)"
    ]
    # Nor is it ignored where nothing is random: a dry run, weights only.
    for flags in (("--dry-run",), ("--random-weights", 0)):
        code, _, err = run(capsys, program, *flags, "--position", 3)
        assert code == 1
        assert error_lines(err) == [
            "tp-run: error: --position 3 is for --random-inputs, which is not given"
        ]
    assert run(capsys, program, "--random-weights", 0, "--inputs", at7)[0] == 0


# -- input files -----------------------------------------------------------------------


def _truncated(path: Path, tensors) -> Path:
    _, inputs = tensors
    buf = io.BytesIO()
    np.savez(buf, **inputs)
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    return path


def _damaged_member(path: Path, tensors) -> Path:
    _, inputs = tensors
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hidden_states.npy", b"\x93NUMPY garbage")
    return path


def _npy(path: Path) -> Path:
    np.save(path, np.zeros(3))
    return path


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p, t: (p.write_bytes(b""), p)[1], "not an .npz of arrays"),
        (_truncated, "not an .npz of arrays"),
        (_damaged_member, "a damaged .npz"),
        (lambda p, t: _npy(p.with_suffix(".npy")), "a single array"),
        (lambda p, t: p.parent / "missing.npz", "No such file"),
    ],
)
def test_bad_inputs_files_are_one_line(program, tensors, tmp_path, capsys, make, says) -> None:
    path = make(tmp_path / "bad.npz", tensors)
    code, _, err = run(capsys, program, "--random-weights", 0, "--inputs", path)
    assert code == 1
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith(f"tp-run: error: cannot read inputs '{path}'")
    assert says in lines[0] and "internal" not in err


# -- checkpoints ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, says",
    [
        (
            lambda p: p.parent,
            "a directory holding neither model.safetensors nor model.safetensors.index.json "
            "(tp reads safetensors checkpoints)",
        ),
        (
            lambda p: Path("/dev/null"),
            "not a regular file; give a .safetensors file, a model directory or its "
            "model.safetensors.index.json",
        ),
        (lambda p: (p.write_bytes(b"tensors"), p)[1], "not a safetensors file (header too small)"),
        (
            lambda p: (p.write_text("not tensors\n" * 9), p)[1],
            "not a safetensors file (header too large)",
        ),
        (lambda p: p.parent / "missing.safetensors", "No such file or directory"),
    ],
)
def test_weights_that_are_not_a_safetensors_file_are_one_line(
    program, tmp_path, capsys, make, says
) -> None:
    # A directory used to say "No such device (os error 19)"; a model directory is read now.
    path = make(tmp_path / "w.safetensors")
    code, _, err = run(capsys, program, "--weights", path, "--random-inputs", 0)
    assert code == 1 and "internal" not in err
    assert error_lines(err) == [f"tp-run: error: cannot open checkpoint '{path}': {says}"]


def test_a_fifo_for_weights_is_refused_without_waiting_for_a_writer(program, tmp_path) -> None:
    fifo = tmp_path / "w.safetensors"
    os.mkfifo(fifo)
    tp_run = Path(sys.executable).parent / "tp-run"
    proc = subprocess.run(  # opening a FIFO waits for a writer: bounded, in a process
        [str(tp_run), str(program), "--weights", str(fifo), "--random-inputs", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == [
        f"tp-run: error: cannot open checkpoint '{fifo}': not a regular file; give a "
        ".safetensors file, a model directory or its model.safetensors.index.json"
    ]


def test_a_missing_tensor_names_what_the_checkpoint_holds_instead(
    program, tensors, tmp_path, capsys
) -> None:
    """One tensor renamed, and another model's file: each error says what was looked for
    and what the file holds instead. (A file whose names differ from the program's by a
    Hugging Face prefix, ``model.`` or ``transformer.``, binds: tests/test_hf_checkpoints.py.)"""
    weights, _ = tensors
    renamed = tmp_path / "renamed.safetensors"
    gone = "model.layers.0.mlp.down_proj.weight"
    kept = {k: v for k, v in weights.items() if k != gone}
    save_file({**kept, "model.layers.0.mlp.down_prj.weight": weights[gone]}, str(renamed))
    code, _, err = run(capsys, program, "--weights", renamed, "--random-inputs", 0)
    assert error_lines(err) == [
        f"tp-run: error: checkpoint has no tensor '{gone}' (expected f32 of shape [64, 128]), "
        "nor do the inputs; the closest of the 11 tensors in the checkpoint: "
        "'model.layers.0.mlp.down_prj.weight', 'model.layers.0.mlp.up_proj.weight', "
        "'model.layers.0.mlp.gate_proj.weight'"
    ]
    gpt2 = tmp_path / "gpt2.mlir"
    assert tp_gen(["gpt2", "--unsharded", "-o", str(gpt2)]) == 0
    module, _ = parse_module(tp_context(), gpt2.read_text(), str(gpt2))
    lm_head = tmp_path / "lm.safetensors"
    save_file({f"transformer.{k}": v for k, v in random_weights(module, 0).items()}, str(lm_head))
    code, _, err = run(capsys, program, "--weights", lm_head, "--random-inputs", 0)
    (line,) = error_lines(err)  # every missing tensor in one error: the first 3 said
    assert line.startswith(
        "tp-run: error: 11 problems with the arguments: (1) checkpoint has no tensor "
        "'model.layers.0.input_layernorm.weight' (expected f32 of shape [64]), nor do the "
        "inputs; none of the 12 tensors in the checkpoint is named alike: "
        "'transformer.h.0.attn.c_attn.bias', 'transformer.h.0.attn.c_attn.weight', "
        "'transformer.h.0.attn.c_proj.bias', …; (2) checkpoint has no tensor "
        "'model.layers.0.self_attn.q_proj.weight'"
    )
    assert line.endswith("; and 8 more") and line.count("checkpoint has no tensor") == 3


@pytest.mark.parametrize(
    "name, names, says",
    [
        (
            "h.0.w",
            {"transformer.h.0.w", "transformer.h.1.w"},
            "'transformer.h.0.w' is in the checkpoint: the file's names carry the prefix "
            "'transformer.', the program's do not",
        ),
        (
            "model.layers.0.w",
            {"layers.0.w", "layers.1.w"},
            "'layers.0.w' is in the checkpoint: the program's names carry the prefix 'model.', "
            "the file's do not",
        ),
        (
            "model.layers.0.w",
            {"model.layers.0.v", "model.layers.0.ww", "x"},
            "the closest of the 3 tensors in the checkpoint: 'model.layers.0.ww', "
            "'model.layers.0.v'",
        ),
        (
            "w",
            {"a", "b", "c", "d"},
            "none of the 4 tensors in the checkpoint is named alike: 'a', 'b', 'c', …",
        ),
        ("w", {"q"}, "the only tensor in the checkpoint is 'q'"),
        ("w", set(), "there are no tensors in the checkpoint"),
    ],
)
def test_what_a_file_holds_instead_of_a_missing_name(name: str, names: set[str], says: str) -> None:
    assert instead(name, names) == says


# -- flags -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ("--random-weights", "-5", "--random-inputs", "0"),
        ("--random-weights", "0", "--random-inputs", "-1"),
        ("--random-weights", "0", "--random-inputs", "0", "--check", "--atol", "nan"),
        ("--random-weights", "0", "--random-inputs", "0", "--check", "--rtol", "-1"),
        ("--random-weights", "0", "--random-inputs", "0", "--cast", "unsafe"),
        ("--random-weights", "0", "--random-inputs", "0", "--position", "-1"),
    ],
)
def test_bad_flags_are_refused_before_running(program, capsys, flags) -> None:
    code, out, err = run(capsys, program, *flags)
    assert code == 1 and "ran " not in out
    assert "error:" in err and "internal" not in err


# -- machine files -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("barrier_latency", 1e308, "outside what a machine can be"),
        ("link_bandwidth", 0, "must be a finite number above 0"),
        ("link_bandwidth", 1e-300, "outside what a machine can be"),
        ("peak_flops", "fast", "must be a number"),
        ("peak_flops", float("nan"), "must be a finite number above 0"),
        ("link_bandwidth", "x", "must be a number"),
        ("max_chips", 2**40, "outside what a machine can be"),
    ],
)
def test_machine_fields_out_of_range_are_named(program, tmp_path, capsys, field, value, says):
    machine = tmp_path / "m.json"
    machine.write_text(json.dumps({field: value}))
    code, _, err = run(capsys, program, "--dry-run", "--machine", machine, "--mode", "all")
    assert code == 1
    lines = error_lines(err)
    assert len(lines) == 1 and f"{field}" in lines[0] and says in lines[0]


def test_auto_allreduce_with_a_machine_file_whose_path_has_spaces(program, tmp_path, capsys):
    machine = tmp_path / "my machine=x.json"
    machine.write_text(json.dumps({"link_latency": 1e-6}))
    code, out, err = run(
        capsys, program, "--dry-run", "--machine", machine, "--allreduce", "auto", "--mode", "relay"
    )
    assert code == 0, err
    assert "modelled in" in out


# -- outputs -----------------------------------------------------------------------------


def test_an_output_in_a_missing_directory_is_refused_before_the_run(program, tmp_path, capsys):
    target = tmp_path / "nowhere" / "out.npz"
    code, out, err = run(
        capsys, program, "--random-weights", 0, "--random-inputs", 0, "--outputs", target
    )
    assert code == 1 and "ran " not in out
    assert error_lines(err) == [
        f"tp-run: error: cannot write '{target}': no directory '{target.parent}'"
    ]


def test_a_new_output_follows_the_umask_and_an_old_one_keeps_its_mode(
    program, tmp_path, capsys
) -> None:
    new, old = tmp_path / "new.npz", tmp_path / "old.npz"
    old.write_bytes(b"x")
    old.chmod(0o604)
    mask = os.umask(0o027)
    try:
        for target in (new, old):
            code, _, err = run(
                capsys, program, "--random-weights", 0, "--random-inputs", 0, "--outputs", target
            )
            assert code == 0, err
    finally:
        os.umask(mask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o640
    assert stat.S_IMODE(old.stat().st_mode) == 0o604
    assert set(outputs(old)) == set(outputs(new))


# -- errors in a copy lowered for the model ------------------------------------------------

HOST_OUTPUT_READ = Path(__file__).parent / "fuzz_reproducers/hang-tp-run-source-4e7812a6"


def test_a_refusal_in_a_copy_lowered_for_the_model_is_located_in_the_source(capsys) -> None:
    program = HOST_OUTPUT_READ / "program.mlir"
    code, _, err = run(capsys, program, "--dry-run", "--mode", "relay")
    assert code == 1
    first = error_lines(err)[0]
    assert first.startswith(f"{program}:9:5: error: 'linalg.generic' reads %full, a host output")
    assert first.endswith("[host-store-used]")


def test_run_program_never_makes_an_integer_of_a_float(program, tensors) -> None:
    """The library entry binds by the same rule: a position of 3.7 is refused, not run as 3."""
    from tp_dialect.runtime.reference import run_program
    from tp_dialect.signature import BindError

    weights, inputs = tensors
    module, _ = parse_module(tp_context(), program.read_text(), str(program))
    with pytest.raises(BindError, match="argument 'position' is float64, not int64"):
        run_program(module, {**weights, **inputs, "position": np.float64(3.7)})
    got = run_program(module, {**weights, **inputs, "position": np.int32(3)})
    want = run_program(module, {**weights, **inputs})
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
