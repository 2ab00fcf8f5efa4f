"""Ports a runtime that knows no model can bind: names from the text, roles from the program.

A generated program states each argument's role (weight, input, cache and its axis); a
hand-written one without roles still runs, its arguments named by their SSA names and
bound from either file (the checkpoint or the inputs).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import program, tiny, tool
from ir_helpers import apply, parse
from safetensors.numpy import save_file

from tp_dialect.runtime.checkpoint import (
    MemorySource,
    place_weights,
    random_inputs,
    random_weights,
)
from tp_dialect.runtime.model.memory import weight_bytes
from tp_dialect.runtime.reference import run_program
from tp_dialect.signature import BindError, entry_function, ports

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "megatron_mlp.mlir"

# y = x @ w.T, w cut by rows onto two chips: a hand-written program, no tp.name, no tp.role.
W, W_C = "tensor<4x3xf32>", "tensor<2x3xf32, #tp.chip<{c}>>"
CUT = "#tp.slice<axis = 0, ranges = [({start}, 2)], full = [4, 3]>"
MAPS = (
    "affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, "
    "affine_map<(i, j, k) -> (i, j)>"
)
MATMUL = "\n".join(
    [
        "builtin.module attributes {tp.chips = 2 : i64} {",
        f"func.func @f(%x: tensor<2x3xf32>, %w: {W}) -> tensor<2x4xf32> {{",
        *(
            f"%w{c} = tp.shard %w at {CUT.format(start=2 * c)} : {W} -> {W_C.format(c=c)}"
            for c in range(2)
        ),
        "%e = tensor.empty() : tensor<2x4xf32>",
        "%zero = arith.constant 0.0 : f32",
        f"%full = tp.unshard %w0, %w1 slices [{CUT.format(start=0)}, {CUT.format(start=2)}]"
        f" : {W_C.format(c=0)}, {W_C.format(c=1)} -> {W}",
        "%acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>",
        f"%y = linalg.generic {{indexing_maps = [{MAPS}], iterator_types = "
        '["parallel", "parallel", "reduction"]} '
        f"ins(%x, %full : tensor<2x3xf32>, {W}) outs(%acc : tensor<2x4xf32>) {{",
        "^bb0(%a: f32, %b: f32, %c: f32):",
        "  %m = arith.mulf %a, %b : f32",
        "  %s = arith.addf %c, %m : f32",
        "  linalg.yield %s : f32",
        "} -> tensor<2x4xf32>",
        "func.return %y : tensor<2x4xf32>",
        "}",
        "}",
    ]
)


def mlp_values(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((1, 8)).astype(np.float32),
        "gate": rng.standard_normal((16, 8)).astype(np.float32),
        "up": rng.standard_normal((16, 8)).astype(np.float32),
        "down": rng.standard_normal((8, 16)).astype(np.float32),
    }


def mlp_numpy(v: dict[str, np.ndarray]) -> np.ndarray:
    g, u = v["x"] @ v["gate"].T, v["x"] @ v["up"].T
    return v["x"] + (g / (1.0 + np.exp(-g)) * u) @ v["down"].T


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("tp-run: warning")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- names -----------------------------------------------------------------------------------


def test_arguments_without_tp_name_are_named_by_their_ssa_names() -> None:
    ins, outs = ports(entry_function(parse(MATMUL)))
    assert [(p.name, p.alias) for p in ins] == [("x", "arg0"), ("w", "arg1")]
    assert [p.name for p in outs] == ["result0"]


def test_a_text_name_taken_twice_falls_back_to_positions() -> None:
    text = (
        'func.func @f(%w_0: f32, %w: f32, %v: f32 {tp.name = "w2"}, %w2: f32) -> f32 {\n'
        "  func.return %v : f32\n}\n"
    )
    ins, _ = ports(entry_function(parse(text)))
    # xDSL keeps %w_0 as "w", so it and %w clash; %w2 clashes with a tp.name.
    assert [p.name for p in ins] == ["arg0", "arg1", "w2", "arg3"]


def test_binding_by_text_names_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    module = parse(MATMUL)
    out = run_program(module, {"x": x, "w": w})
    np.testing.assert_allclose(out["result0"], x @ w.T, rtol=1e-6)
    # The positional names still bind (callers written before text names).
    again = run_program(module, {"arg0": x, "arg1": w})
    np.testing.assert_array_equal(again["result0"], out["result0"])


def test_tp_run_binds_a_hand_written_program_from_one_npz(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    prog, inputs, outputs = tmp_path / "mm.mlir", tmp_path / "in.npz", tmp_path / "out.npz"
    prog.write_text(MATMUL)
    np.savez(inputs, x=x, w=w)
    proc = tool("tp-run", prog, "--inputs", inputs, "--outputs", outputs)
    assert proc.returncode == 0, proc.stderr
    with np.load(outputs) as data:
        np.testing.assert_allclose(data["result0"], x @ w.T, rtol=1e-6)


# -- either file -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "in_checkpoint",
    [(), ("gate", "up", "down"), ("x", "down"), ("x", "gate", "up", "down")],
    ids=["all-in-npz", "weights-in-ckpt", "mixed", "all-in-ckpt"],
)
def test_any_port_comes_from_either_file(tmp_path: Path, in_checkpoint: tuple[str, ...]) -> None:
    values = mlp_values()
    ckpt, inputs, outputs = tmp_path / "w.safetensors", tmp_path / "in.npz", tmp_path / "o.npz"
    args: list[object] = [MLP, "--outputs", outputs]
    if in_checkpoint:
        save_file({k: values[k] for k in in_checkpoint}, str(ckpt))
        args += ["--weights", ckpt]
    rest = {k: v for k, v in values.items() if k not in in_checkpoint}
    if rest:
        np.savez(inputs, **rest)
        args += ["--inputs", inputs]
    proc = tool("tp-run", *args)
    assert proc.returncode == 0, proc.stderr
    with np.load(outputs) as data:
        np.testing.assert_allclose(data["result0"], mlp_numpy(values), rtol=1e-5, atol=1e-6)


def test_a_port_in_both_files_alike_is_taken_from_the_inputs() -> None:
    values = mlp_values()
    module = parse(MLP.read_text())
    other = {**values, "x": values["x"] + 1.0}
    placement = place_weights(module, MemorySource(other), {"x": values["x"]})
    out = run_program(module, placement.values, placement.placed)
    np.testing.assert_allclose(out["result0"], mlp_numpy(values), rtol=1e-5, atol=1e-6)


def test_a_port_in_neither_file_is_one_line(tmp_path: Path) -> None:
    values = mlp_values()
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=values["x"], gate=values["gate"], up=values["up"])
    line = one_line_error(tool("tp-run", MLP, "--inputs", inputs))
    assert line == (
        "tp-run: error: checkpoint has no tensor 'down' or 'arg3' (expected f32 of shape "
        "[8, 16]), nor do the inputs; none of the 3 tensors in the inputs is named alike: "
        "'gate', 'up', 'x'"
    )
    np.savez(inputs, gate=values["gate"], up=values["up"], down=values["down"])
    line = one_line_error(tool("tp-run", MLP, "--inputs", inputs))
    assert "the inputs have no tensor 'x' or 'arg0' (expected f32 of shape [1, 8])" in line


def test_a_port_in_both_files_with_different_shapes_is_one_line(tmp_path: Path) -> None:
    values = mlp_values()
    ckpt, inputs = tmp_path / "w.safetensors", tmp_path / "in.npz"
    save_file({"gate": values["gate"], "up": values["up"], "down": values["down"]}, str(ckpt))
    np.savez(inputs, x=values["x"], gate=values["gate"][:4])
    line = one_line_error(tool("tp-run", MLP, "--weights", ckpt, "--inputs", inputs))
    assert "'gate' is in both the checkpoint (shape [16, 8]) and the inputs (shape [4, 8])" in line


def test_no_arguments_at_all_is_one_line() -> None:
    line = one_line_error(tool("tp-run", MLP))
    assert "give the arguments" in line


def test_a_malformed_role_is_one_line(tmp_path: Path) -> None:
    prog = tmp_path / "bad.mlir"
    prog.write_text(MATMUL.replace("%x: tensor<2x3xf32>", '%x: tensor<2x3xf32> {tp.role = "w"}'))
    line = one_line_error(tool("tp-run", prog, "--random-weights", 1, "--random-inputs", 2))
    assert "argument 'x': tp.role must be one of weight, input, cache" in line


_ADD_I32 = """builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%x: tensor<4xi32>ATTRS, %y: tensor<4xi32>) -> tensor<4xi32> {
    %z = arith.addi %x, %y : tensor<4xi32>
    func.return %z : tensor<4xi32>
  }
}"""


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (' {tp.name = "y"}', "tp.name 'y' is given to more than one argument"),
        (" {tp.name = 7}", "argument #0: tp.name must be a string, got 7 : i64"),
    ],
)
def test_a_malformed_name_is_one_line(tmp_path: Path, attrs: str, message: str) -> None:
    text = _ADD_I32.replace("ATTRS", attrs)
    if "y" in attrs:  # both arguments named y
        text = text.replace("%y: tensor<4xi32>)", '%y: tensor<4xi32> {tp.name = "y"})')
    prog = tmp_path / "bad.mlir"
    prog.write_text(text)
    line = one_line_error(tool("tp-run", prog, "--random-weights", 1, "--random-inputs", 2))
    assert message in line


def test_integer_ports_run_and_an_unheld_type_is_one_line(tmp_path: Path) -> None:
    """i32 arguments bind and add as numpy does; a complex argument is refused in a line."""
    prog = tmp_path / "add.mlir"
    prog.write_text(_ADD_I32.replace("ATTRS", ""))
    x, y = np.arange(4, dtype=np.int32), np.array([5, -1, 7, 2**30], dtype=np.int32)
    out = run_program(parse(_ADD_I32.replace("ATTRS", "")), {"x": x, "y": y})
    assert out["result0"].dtype == np.int32 and np.array_equal(out["result0"], x + y)
    cplx = tmp_path / "c.mlir"
    cplx.write_text(
        "builtin.module attributes {tp.chips = 1 : i64} {\n"
        "  func.func @f(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {\n"
        "    func.return %x : tensor<4xcomplex<f32>>\n  }\n}\n"
    )
    line = one_line_error(tool("tp-run", cplx, "--random-inputs", 2))
    assert "'x' is of type tensor<4xcomplex<f32>>, which tp-run cannot hold" in line


# -- roles -----------------------------------------------------------------------------------


def test_the_generator_states_every_arguments_role() -> None:
    cfg = tiny(chips=2, layers=2)
    ins, _ = ports(entry_function(program(cfg)))
    roles = {p.name: (p.role, p.cache_axis) for p in ins}
    assert roles.pop("hidden_states") == ("input", None)
    assert roles.pop("position") == ("input", None)
    for i in range(cfg.layers):
        assert roles.pop(f"past_key.{i}") == ("cache", 2)
        assert roles.pop(f"past_value.{i}") == ("cache", 2)
    assert roles and set(roles.values()) == {("weight", None)}
    assert all(name.startswith("model.layers.") for name in roles)


def test_roles_survive_lowering() -> None:
    module = program(tiny(chips=2)).clone()
    before = ports(entry_function(module))[0]
    apply(module, "tp-relocate,tp-transfers,tp-link-points")
    assert ports(entry_function(module))[0] == before


def test_random_values_follow_roles() -> None:
    module = program(tiny(chips=2))
    ins, _ = ports(entry_function(module))
    weights = random_weights(module, seed=1)
    inputs = random_inputs(module, seed=2, position=5)
    assert set(weights) == {p.name for p in ins if p.role == "weight"}
    assert set(inputs) == {p.name for p in ins if p.role != "weight"}
    assert int(inputs["position"]) == 5
    cache = inputs["past_key.0"]
    assert np.all(cache[:, :, 5:] == 0) and np.all(cache[:, :, :5] != 0)
    with pytest.raises(BindError, match="position 17 is beyond the cache's 16 positions"):
        random_inputs(module, seed=2, position=17)


def test_weight_bytes_count_the_weight_role_only() -> None:
    module = program(tiny(chips=2))
    func = entry_function(module)
    ins, _ = ports(func)
    want = sum(int(np.prod(p.shape)) * p.numpy_dtype.itemsize for p in ins if p.role == "weight")
    assert weight_bytes(func) == want


def test_a_program_without_roles_gets_them_from_its_uses() -> None:
    ins, _ = ports(entry_function(parse(MLP.read_text())))
    assert [(p.name, p.role) for p in ins] == [
        ("x", "input"),
        ("gate", "weight"),
        ("up", "weight"),
        ("down", "weight"),
    ]


def test_a_program_without_roles_runs_on_random_values(tmp_path: Path) -> None:
    outputs = tmp_path / "o.npz"
    proc = tool("tp-run", MLP, "--random-weights", 1, "--random-inputs", 2, "--outputs", outputs)
    assert proc.returncode == 0, proc.stderr
    with np.load(outputs) as data:
        assert data["result0"].shape == (1, 8) and np.all(np.isfinite(data["result0"]))


def test_a_stated_cache_axis_is_where_random_inputs_fill() -> None:
    text = MATMUL.replace(
        "%x: tensor<2x3xf32>", '%x: tensor<2x3xf32> {tp.role = "cache", tp.cache_axis = 1 : i64}'
    )
    inputs = random_inputs(parse(text), seed=0, position=2)
    assert set(inputs) == {"x"}
    assert np.all(inputs["x"][:, 2:] == 0) and np.all(inputs["x"][:, :2] != 0)
    with pytest.raises(BindError, match="tp.cache_axis must be an integer axis below its rank 2"):
        ports(entry_function(parse(text.replace("= 1 : i64", "= 2 : i64"))))


def test_an_older_generated_file_without_roles_still_runs_from_both_files() -> None:
    """A generated program from before roles: the same numbers, bound from either file."""
    from tp_dialect.frontend.qwen3 import generate

    cfg = tiny(chips=2)
    text = generate(cfg)
    old = re.sub(r', tp\.role = "[a-z]+"(, tp\.cache_axis = 2 : i64)?', "", text)
    assert "tp.role" not in old and old != text
    new_module, old_module = program(cfg), parse(old)
    weights = random_weights(new_module, seed=1)
    inputs = random_inputs(new_module, seed=2, position=4)
    want = run_program(new_module, {**weights, **inputs})
    placement = place_weights(old_module, MemorySource(weights), inputs)
    got = run_program(old_module, placement.values, placement.placed)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_the_certificate_refuses_ports_it_cannot_read(tmp_path: Path) -> None:
    """Which entry argument is which weight decides coverage; a malformed role is refused by
    tp-verify in a located line, not certified."""
    text = tmp_path / "t.mlir"
    cfg = tiny(chips=2, layers=1)
    good = str(program(cfg))
    text.write_text(good.replace('tp.role = "weight"', 'tp.role = "bogus"', 1))
    proc = tool("tp-opt", text, "--tp-verify")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and not proc.stdout
    line = proc.stderr.splitlines()[0]  # then the source line and a caret, as MLIR shows
    assert 'tp.role must be one of weight, input, cache, got "bogus"' in line
    assert re.match(r".*t\.mlir:\d+:\d+: error: ", line)
