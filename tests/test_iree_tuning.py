"""The bf16 matrix-vector tuning spec (`tp_dialect.runtime.iree_tuning`): IREE accepts it, it
sets the tile of a bf16-weight projection and leaves the numbers those of plain numpy."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tp_dialect.runtime.iree_tuning import SPEC, spec_flag

MATVEC = """
func.func @main(%x: tensor<1x256xf32>, %w: tensor<96x256xbf16>) -> tensor<1x96xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x96xf32>) -> tensor<1x96xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>,
                                        affine_map<(b, o, k) -> (o, k)>,
                                        affine_map<(b, o, k) -> (b, o)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x256xf32>, tensor<96x256xbf16>) outs(%f : tensor<1x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a, %b32 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x96xf32>
  return %r : tensor<1x96xf32>
}
"""


def test_the_flag_names_a_file_holding_the_spec_under_its_digest(tmp_path: Path) -> None:
    flag = spec_flag(tmp_path)
    path = Path(flag.removeprefix("--iree-codegen-tuning-spec-path="))
    assert path.parent == tmp_path and path.read_text() == SPEC
    path.write_text("stale")  # a file of that name holding something else is rewritten
    assert spec_flag(tmp_path) == flag and path.read_text() == SPEC


def test_a_bf16_matvec_compiles_with_the_spec_tiled_16_by_16_and_equals_numpy(
    tmp_path: Path,
) -> None:
    import iree.compiler as compiler
    import iree.runtime as runtime

    dump = tmp_path / "dump"
    vmfb = compiler.compile_str(
        MATVEC,
        target_backends=["llvm-cpu"],
        extra_args=[
            "--iree-llvmcpu-target-cpu=host",
            spec_flag(tmp_path),
            f"--iree-hal-dump-executable-configurations-to={dump}",
        ],
    )
    configured = "".join(p.read_text() for p in dump.glob("*.mlir"))
    assert "vector_common_parallel = [16, 0], vector_reduction = [0, 16]" in configured
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 256)).astype(np.float32)
    w = rng.standard_normal((96, 256)).astype(ml_dtypes.bfloat16)
    config = runtime.Config("local-task")
    ctx = runtime.SystemContext(config=config)
    ctx.add_vm_module(runtime.VmModule.copy_buffer(config.vm_instance, vmfb))
    got = np.asarray(ctx.modules.module["main"](x, w).to_host())
    want = x.astype(np.float64) @ w.astype(np.float64).T
    assert np.max(np.abs(got - want)) <= 1e-5 * np.max(np.abs(want))


def test_the_module_cache_compiles_for_the_cpu_with_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tp's CPU builds hand IREE the spec (a broken one makes IREE refuse), and the spec is
    part of the cache key (a module built with another spec is never found)."""
    from tp_dialect.runtime import iree_tuning
    from tp_dialect.runtime.iree_exec import IreeError, ModuleCache

    cache = ModuleCache(tmp_path / "modules")
    key = cache.key(MATVEC)
    assert cache.get(MATVEC, "the matvec")
    monkeypatch.setattr(iree_tuning, "SPEC", "module { this is not a spec }")
    assert cache.key(MATVEC) != key
    with pytest.raises(IreeError, match="the matvec: IREE refused it"):
        cache.get(MATVEC, "the matvec")
