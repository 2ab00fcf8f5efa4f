"""Weights from a Hugging Face model directory (issue 24 §6): ``model.safetensors`` or a sharded
index, f32/bf16/f16 stored, names with or without the family's prefix, each tensor checked
against the program's weight ports before anything runs; every refusal one line, exit 1.

The directories are written by ``tests/hf_models.py`` and read back, for the expected values,
by ``tests/hf_reference.load_tensors`` (an independent reader). Two programs read them: the
Qwen3 decode stack ``tp-gen qwen3`` writes at the tiny model's dimensions (its ports are
``model.layers.{i}.…``: a part of the model, so the directory's other tensors are left
alone), and a toy whole-model step written here (``input_ids`` in, ``next_ids`` out, every
tensor a port, the embedding and head cut by rows over 2 chips) for the rules of a whole
model: every tensor read, a tied head one tensor.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hf_models import config_for, expected_tensors, write_model
from hf_reference import load_tensors
from safetensors.numpy import load_file, save_file

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.runtime.checkpoint import (
    ModelWeights,
    SafetensorsSource,
    open_model_dir,
    place_weights,
)
from tp_dialect.runtime.session import Session
from tp_dialect.signature import BindError
from tp_dialect.tools.run_mpi import per_chip
from tp_dialect.tools.source import parse_module
from tp_dialect.tools.tp_gen import main as tp_gen
from tp_dialect.tools.tp_run import main as tp_run
from tp_dialect.universe import tp_context

# The tiny qwen3 of tests/hf_models.py, as tp-gen flags.
QWEN3 = ["--hidden", "64", "--heads", "8", "--kv-heads", "4", "--head-dim", "16"]
QWEN3 += ["--intermediate", "128", "--layers", "2", "--max-positions", "8"]


def _module(path: Path) -> Any:
    module, _ = parse_module(tp_context(), path.read_text(), str(path))
    return module


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Path:
    """The tiny Qwen3's decode stack on 2 chips (f32 weight ports)."""
    path = tmp_path_factory.mktemp("stack") / "stack.mlir"
    assert tp_gen(["qwen3", *QWEN3, "--chips", "2", "-o", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def stack_bf16(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stack") / "stack_bf16.mlir"
    assert tp_gen(["qwen3", *QWEN3, "--chips", "2", "--dtype", "bf16", "-o", str(path)]) == 0
    return path


def _toy(cfg: dict[str, Any], chips: int = 2) -> str:
    """A whole-model step over ``cfg``'s tensors: every tensor a weight port; the embedding
    (and an untied head) cut by rows, chip c holding rows [c V/N, (c+1) V/N); a tied table
    cut twice per chip (the embedding's use and the head's). Its result is a constant: what
    is checked here is what the runtime reads, not what a step computes."""
    tensors = expected_tensors(cfg)
    tied = "lm_head.weight" not in tensors
    args = [
        '%input_ids: tensor<1x1xi64> {tp.name = "input_ids", tp.role = "input"}',
        '%position: i64 {tp.name = "position", tp.role = "input"}',
    ]
    body = []
    for k, (name, shape) in enumerate(tensors.items()):
        ty = "tensor<" + "x".join(map(str, shape)) + "xf32>"
        args.append(f'%w{k}: {ty} {{tp.name = "{name}", tp.role = "weight"}}')
        if name not in ("model.embed_tokens.weight", "lm_head.weight"):
            continue
        v, h = shape
        n = v // chips
        for c in range(chips):
            for u in range(2 if tied else 1):
                body.append(
                    f"    %s{k}_{c}_{u} = tp.shard %w{k} at #tp.slice<axis = 0, ranges = "
                    f"[({c * n}, {n})], full = [{v}, {h}]> : {ty} -> "
                    f"tensor<{n}x{h}xf32, #tp.chip<{c}>>"
                )
    body += [
        "    %ids = arith.constant dense<0> : tensor<1xi64>",
        "    func.return %ids : tensor<1xi64>",
    ]
    return (
        f"builtin.module attributes {{tp.chips = {chips} : i64}} {{\n"
        f"  func.func @decode({', '.join(args)}) -> "
        '(tensor<1xi64> {tp.name = "next_ids"}) {\n' + "\n".join(body) + "\n  }\n}\n"
    )


def toy_program(directory: Path, name: str = "toy.mlir", **overrides: Any) -> Path:
    """The toy whole model for the tiny one-layer llama ``overrides`` configure."""
    path = directory / name
    path.write_text(_toy(config_for("llama", num_hidden_layers=1, **overrides)))
    return path


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = tp_run([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_error(capsys, *argv: object) -> str:
    """tp-run's one error line (exit 1, no traceback, nothing but warnings besides)."""
    code, out, err = run(capsys, *argv)
    assert code == 1, out + err
    assert "Traceback" not in err and "internal" not in err
    lines = [ln for ln in err.splitlines() if not ln.startswith("tp-run: warning")]
    assert len(lines) == 1, err
    assert lines[0].startswith("tp-run: error: ")
    return lines[0].removeprefix("tp-run: error: ")


def outputs(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _rows(full: np.ndarray, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
    """Independent slicing: the listed index ranges of ``full`` along ``axis``."""
    idx = np.concatenate([np.arange(s, s + n) for s, n in ranges])
    return np.take(full, idx, axis=axis)


def _prefixed(tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``tensors`` under the ``*ForCausalLM`` names (an unprefixed checkpoint's read back)."""
    return {
        k if k.startswith(("model.", "lm_head")) else f"model.{k}": v for k, v in tensors.items()
    }


# -- values: each form of directory, every chip's slice ------------------------------------

FORMS = [
    {"dtype": "float32"},
    {"dtype": "bfloat16"},
    {"dtype": "float16"},
    {"dtype": "float32", "shards": 3},
    {"dtype": "bfloat16", "shards": 3, "prefixed": False},
    {"dtype": "float32", "prefixed": False},
]


@pytest.fixture(scope="module")
def stack_programs(stack) -> Any:
    """The stack lowered to per-chip programs, as ``tp-run --mpi`` runs it (rank c: chip c)."""
    return per_chip(_module(stack), "fold", say=False)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(map(str, f.values())))
def test_each_chip_reads_its_slice_of_the_stored_tensor_widened(
    stack_programs, tmp_path, form
) -> None:
    directory = write_model(tmp_path / "m", "qwen3", seed=5, **form)
    stored = _prefixed(load_tensors(directory))
    loads = read_manifest(stack_programs).loads
    weights = open_model_dir(directory)
    for chip in (0, 1):
        placement = place_weights(stack_programs, weights, chip=chip)
        mine = [ld for ld in loads if ld.chip == chip and not ld.tensor.startswith("past_")]
        assert len(mine) == 14 and set(placement.placed) == {ld.op for ld in mine}
        for load in mine:
            want = _rows(stored[load.tensor], load.slice.axis_index, load.slice.ranges)
            got = placement.placed[load.op]
            assert got.dtype == np.float32  # widened from the dtype stored, exactly
            np.testing.assert_array_equal(got, want.astype(np.float32))
        norm = "model.layers.1.input_layernorm.weight"  # read whole, by chip 0's program
        if chip == 0:
            np.testing.assert_array_equal(placement.values[norm], stored[norm].astype(np.float32))


@pytest.mark.parametrize("form", FORMS[1:5], ids=lambda f: "-".join(map(str, f.values())))
def test_tp_run_from_a_directory_equals_the_run_from_the_tensors_widened(
    stack, tmp_path, capsys, form
) -> None:
    directory = write_model(tmp_path / "m", "qwen3", seed=6, **form)
    plain = tmp_path / "plain.safetensors"  # the reference reader's tensors, as f32, prefixed
    save_file(
        {k: v.astype(np.float32) for k, v in _prefixed(load_tensors(directory)).items()}, str(plain)
    )
    got, want = tmp_path / "got.npz", tmp_path / "want.npz"
    for weights, out in ((directory, got), (plain, want)):
        code, _, err = run(
            capsys, stack, "--weights", weights, "--random-inputs", 1, "--outputs", out
        )
        assert code == 0, err
    a, b = outputs(got), outputs(want)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_api_checks_then_reads_by_the_programs_names(stack, tmp_path) -> None:
    directory = write_model(tmp_path / "m", "qwen3", dtype="bfloat16", shards=3, prefixed=False)
    stored = load_tensors(directory)
    weights = open_model_dir(directory)
    assert isinstance(weights, ModelWeights)
    assert weights.check(_module(stack)) == []
    q = "model.layers.0.self_attn.q_proj.weight"
    whole = weights.read(q)
    assert whole.dtype == np.dtype("bfloat16")
    np.testing.assert_array_equal(whole, stored["layers.0.self_attn.q_proj.weight"])
    part = weights.read(q, (0, [(16, 8), (96, 16)]), dtype=np.float32)
    want = _rows(stored["layers.0.self_attn.q_proj.weight"], 0, [(16, 8), (96, 16)])
    np.testing.assert_array_equal(part, want.astype(np.float32))
    with pytest.raises(BindError, match=r"checkpoint has no tensor 'model.layers.9.mlp'"):
        weights.read("model.layers.9.mlp")


# -- a whole model: every tensor read, a tied head one tensor -------------------------------


class _Counting(SafetensorsSource):
    """A checkpoint counting the reads of each tensor."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reads: dict[str, int] = {}

    def ranges(self, name: str, axis: int, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
        self.reads[name] = self.reads.get(name, 0) + 1
        return super().ranges(name, axis, ranges)


def test_a_tied_table_is_one_tensor_read_once_per_slice(tmp_path) -> None:
    directory = write_model(
        tmp_path / "m", "llama", num_hidden_layers=1, tie_word_embeddings=True, shards=2
    )
    module = _module(toy_program(tmp_path, tie_word_embeddings=True))
    table = load_tensors(directory)["model.embed_tokens.weight"]
    source = _Counting(directory / "model.safetensors.index.json")
    placement = place_weights(module, source)
    assert source.reads == {"model.embed_tokens.weight": 2}  # chip 0's rows, chip 1's rows
    by_chip: dict[int, list[np.ndarray]] = {0: [], 1: []}
    for load in read_manifest(module).loads:
        by_chip[load.chip].append(placement.placed[load.op])
    for chip, (embedding, head) in by_chip.items():
        assert embedding is head  # the embedding's and the head's rows on a chip: one array
        np.testing.assert_array_equal(embedding, table[chip * 48 : (chip + 1) * 48])
    # A session's programs (prefill and decode alike) share the reads too.
    session = Session(_Counting(directory / "model.safetensors.index.json"))
    session.prepare(module)
    session.prepare(module)
    assert session.source.source.reads == {"model.embed_tokens.weight": 2}  # type: ignore[attr-defined]


def test_a_whole_model_runs_from_its_directory(tmp_path, capsys) -> None:
    for tied in (False, True):
        directory = write_model(
            tmp_path / f"m{tied}", "llama", num_hidden_layers=1, tie_word_embeddings=tied
        )
        program = toy_program(tmp_path, f"toy{tied}.mlir", tie_word_embeddings=tied)
        code, out, err = run(capsys, program, "--weights", directory, "--random-inputs", 0)
        assert code == 0 and out.startswith("ran "), err


def test_check_programs_refuses_a_tensor_no_program_reads(tmp_path) -> None:
    directory = write_model(tmp_path / "m", "llama", num_hidden_layers=1)
    tied = _module(toy_program(tmp_path, tie_word_embeddings=True))
    with pytest.raises(BindError, match=r"checkpoint tensor 'lm_head.weight' is read by no"):
        open_model_dir(directory).check(tied, tied)


# -- refusals through tp-run: one line each, exit 1 -----------------------------------------


def _rewrite(directory: Path, change) -> Path:
    """``directory``'s single-file checkpoint rewritten as ``change`` makes its tensors."""
    tensors = dict(load_tensors(directory))
    change(tensors)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    return directory


def test_a_missing_tensor_is_named(stack, tmp_path, capsys) -> None:
    gone = "model.layers.1.mlp.down_proj.weight"
    directory = _rewrite(write_model(tmp_path / "m", "qwen3"), lambda t: t.pop(gone))
    said = one_error(capsys, stack, "--weights", directory, "--random-inputs", 0)
    assert said.startswith(f"checkpoint has no tensor '{gone}' (expected f32 of shape [64, 128])")


def test_a_misshaped_tensor_is_named_by_its_stored_name(stack, tmp_path, capsys) -> None:
    name = "layers.0.self_attn.k_proj.weight"

    def cut(t: dict[str, np.ndarray]) -> None:
        t[name] = t[name][:16]

    directory = _rewrite(write_model(tmp_path / "m", "qwen3", prefixed=False), cut)
    said = one_error(capsys, stack, "--weights", directory, "--random-inputs", 0)
    assert said == (
        f"checkpoint tensor '{name}' (argument 'model.{name}'): expected shape [64, 64], "
        "found [16, 64]"
    )


def test_an_extra_tensor_of_a_whole_model_is_named(tmp_path, capsys) -> None:
    extra = "model.layers.0.self_attn.o_proj.bias"

    def add(t: dict[str, np.ndarray]) -> None:
        t[extra] = np.zeros(64, np.float32)
        t["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(4, np.float32)  # ignored

    directory = _rewrite(write_model(tmp_path / "m", "llama", num_hidden_layers=1), add)
    said = one_error(capsys, toy_program(tmp_path), "--weights", directory, "--random-inputs", 0)
    assert said == (
        f"checkpoint tensor '{extra}' is read by no argument: a whole model reads every "
        "tensor of its checkpoint"
    )


def test_an_untied_head_where_the_program_ties_it_is_named(tmp_path, capsys) -> None:
    directory = write_model(tmp_path / "m", "llama", num_hidden_layers=1)
    program = toy_program(tmp_path, tie_word_embeddings=True)
    said = one_error(capsys, program, "--weights", directory, "--random-inputs", 0)
    assert said.startswith("checkpoint tensor 'lm_head.weight' is read by no argument")
    assert said.endswith("this checkpoint's model has a head of its own")


def test_a_narrowing_dtype_is_refused(stack_bf16, tmp_path, capsys) -> None:
    directory = write_model(tmp_path / "m", "qwen3", dtype="float32", shards=3)
    said = one_error(capsys, stack_bf16, "--weights", directory, "--random-inputs", 0)
    assert said.startswith("22 problems with the arguments: (1) checkpoint tensor ")
    assert "is float32, not bfloat16 (--cast same_kind converts, rounding)" in said


def test_both_names_of_a_tensor_are_refused(stack, tmp_path, capsys) -> None:
    name = "model.layers.0.mlp.up_proj.weight"

    def twice(t: dict[str, np.ndarray]) -> None:
        t[name.removeprefix("model.")] = t[name]

    directory = _rewrite(write_model(tmp_path / "m", "qwen3"), twice)
    said = one_error(capsys, stack, "--weights", directory, "--random-inputs", 0)
    assert said == (
        f"checkpoint holds both '{name}' and '{name.removeprefix('model.')}', each a name of "
        f"argument '{name}': keep one"
    )


def _index(directory: Path) -> tuple[Path, dict[str, Any]]:
    path = directory / "model.safetensors.index.json"
    return path, json.loads(path.read_text())


def test_a_shard_holding_a_tensor_its_index_does_not_map_is_refused(stack, tmp_path, capsys):
    directory = write_model(tmp_path / "m", "qwen3", shards=3)
    path, index = _index(directory)
    name = "model.layers.0.self_attn.q_proj.weight"
    shard = index["weight_map"].pop(name)
    path.write_text(json.dumps(index))
    said = one_error(capsys, stack, "--weights", directory, "--random-inputs", 0)
    assert f"checkpoint shard '{shard}' holds tensor '{name}', which its index" in said
    assert said.endswith("maps nowhere") or "maps nowhere;" in said


def test_an_index_mapping_a_tensor_to_a_shard_without_it_is_refused(stack, tmp_path, capsys):
    directory = write_model(tmp_path / "m", "qwen3", shards=3)
    path, index = _index(directory)
    files = sorted(set(index["weight_map"].values()))
    name = "model.layers.1.mlp.down_proj.weight"
    held = index["weight_map"][name]
    index["weight_map"]["model.layers.1.mlp.extra.weight"] = files[0]  # unread: not a whole model
    index["weight_map"][name] = next(f for f in files if f != held)
    path.write_text(json.dumps(index))
    said = one_error(capsys, stack, "--weights", directory, "--random-inputs", 0)
    assert f"holds tensor '{name}', which its index" in said


def test_a_missing_shard_is_named(stack, tmp_path, capsys) -> None:
    directory = write_model(tmp_path / "m", "qwen3", shards=3)
    _, index = _index(directory)
    shard = index["weight_map"]["model.layers.1.mlp.down_proj.weight"]
    (directory / shard).unlink()
    said = one_error(capsys, stack, "--weights", directory, "--random-inputs", 0)
    assert f"to shard '{shard}', which cannot be read: No such file or directory" in said


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda d: d / "absent", "No such file or directory"),
        (
            lambda d: (d / "empty").mkdir() or d / "empty",
            "a directory holding neither model.safetensors nor model.safetensors.index.json",
        ),
        (
            lambda d: (
                ((d / "j").mkdir(), (d / "j" / "model.safetensors.index.json").write_text("{"))
                and d / "j"
            ),
            "not a JSON index",
        ),
        (
            lambda d: (
                ((d / "w").mkdir(), (d / "w" / "model.safetensors.index.json").write_text("{}"))
                and d / "w"
            ),
            "not a sharded checkpoint's index: no 'weight_map' object",
        ),
    ],
)
def test_an_unreadable_directory_is_one_line(stack, tmp_path, capsys, make, says) -> None:
    said = one_error(capsys, stack, "--weights", make(tmp_path), "--random-inputs", 0)
    assert said.startswith("cannot open checkpoint ") and says in said


def test_a_directory_with_both_files_reads_the_single_file_as_transformers_does(tmp_path):
    directory = write_model(tmp_path / "m", "qwen3", shards=3)
    save_file({"only": np.zeros(2, np.float32)}, str(directory / "model.safetensors"))
    assert set(open_model_dir(directory).names()) == {"only"}


# -- MPI: each rank reads its own slices from the directory --------------------------------


def _tp_run_process(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "tp-run"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ranks_read_a_sharded_bf16_directory_as_one_process_does(stack, tmp_path, capsys) -> None:
    directory = write_model(tmp_path / "m", "qwen3", dtype="bfloat16", shards=3, prefixed=False)
    here, ranks = tmp_path / "here.npz", tmp_path / "ranks.npz"
    common = ("--weights", directory, "--position", 2)
    code, _, err = run(capsys, stack, *common, "--random-inputs", 1, "--outputs", here)
    assert code == 0, err
    proc = _tp_run_process(stack, *common, "--random-inputs", 1, "--outputs", ranks, "--mpi", 2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    a, b = outputs(here), outputs(ranks)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    gone = "layers.1.mlp.up_proj.weight"
    _rewrite_sharded(directory, gone)
    proc = _tp_run_process(stack, *common, "--random-inputs", 1, "--mpi", 2)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and f"checkpoint has no tensor 'model.{gone}'" in lines[0], proc.stderr


def _rewrite_sharded(directory: Path, gone: str) -> None:
    """``directory``'s sharded checkpoint without tensor ``gone`` (its shard and index too)."""
    path, index = _index(directory)
    shard = index["weight_map"].pop(gone)
    path.write_text(json.dumps(index))
    held = {k: v for k, v in load_file(str(directory / shard)).items() if k != gone}
    save_file(held, str(directory / shard), metadata={"format": "pt"})


def test_gpt2s_stack_reads_an_lm_head_models_directory(tmp_path, capsys) -> None:
    """The GPT-2 decode stack names its ports ``h.{i}.…`` (GPT2Model's names); a
    GPT2LMHeadModel's directory stores ``transformer.h.{i}.…``: the prefix is added to find
    them, and a base model's directory binds as is."""
    program = tmp_path / "gpt2.mlir"
    flags = ["--hidden", "64", "--heads", "4", "--layers", "2", "--max-positions", "8"]
    assert tp_gen(["gpt2", "--unsharded", *flags, "-o", str(program)]) == 0
    results = []
    for name, form in (("lm", {"shards": 3}), ("base", {"prefixed": False})):
        directory = write_model(tmp_path / name, "gpt2", dtype="bfloat16", seed=2, **form)
        out = tmp_path / f"{name}.npz"
        code, _, err = run(
            capsys, program, "--weights", directory, "--random-inputs", 1, "--outputs", out
        )
        assert code == 0, err
        results.append(outputs(out))
    plain = tmp_path / "plain.safetensors"
    tensors = load_tensors(tmp_path / "base")
    save_file({k: v.astype(np.float32) for k, v in tensors.items()}, str(plain))
    out = tmp_path / "plain.npz"
    code, _, err = run(capsys, program, "--weights", plain, "--random-inputs", 1, "--outputs", out)
    assert code == 0, err
    results.append(outputs(out))
    for got in results[:2]:
        assert got.keys() == results[2].keys()
        assert all(np.array_equal(got[k], results[2][k]) for k in got)


def test_a_hub_cache_snapshot_of_symlinks_reads(stack, tmp_path, capsys) -> None:
    """The Hugging Face hub's cache keeps a snapshot's files as symlinks into ``blobs/``."""
    model = write_model(tmp_path / "m", "qwen3", shards=3, seed=4)
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "abc"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    for k, file in enumerate(sorted(model.iterdir())):
        file.rename(blobs / f"blob{k}")
        (snapshot / file.name).symlink_to(Path("../..") / "blobs" / f"blob{k}")
    want = {k: v.astype(np.float32) for k, v in load_tensors(snapshot).items()}
    got = open_model_dir(snapshot)
    name = "model.layers.1.self_attn.v_proj.weight"
    np.testing.assert_array_equal(got.read(name, dtype=np.float32), want[name])
    code, _, err = run(capsys, stack, "--weights", snapshot, "--random-inputs", 0)
    assert code == 0, err
