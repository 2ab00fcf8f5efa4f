"""IREE's tile sizes for the matrix-vector products of a bf16-weight decode step, as a tuning
spec (IREE's ``--iree-codegen-tuning-spec-path``): the exported segments stay plain MLIR.

A decode step's projections are ``linalg.generic`` matrix-vector products ``y[o] += x[k] *
extf(w[o, k])`` with f32 activations and bf16 weights, the weight read as bf16 and widened in
registers (``arith.extf`` in the body; no widened copy is made). For them IREE's llvm-cpu
default (32 output rows by 16 of the reduction a vector step) spends its time shuffling the
bf16 lanes: it reads at half f32's bytes per second, so bf16 is no faster than f32. 16 rows by
16 runs the same product in about half the time (`benchmarks.backends`, docs/benchmarks.md).
f32 products are left to IREE's default: no tile measured better.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

SPEC = """\
module @tp_matvec attributes {transform.with_named_sequence,
                              iree_codegen.tuning_spec_with_default_entrypoint} {
  transform.named_sequence @apply_op_config(%op: !transform.any_op {transform.readonly},
                                            %config: !transform.any_param {transform.readonly}) {
    transform.annotate %op "compilation_info" = %config : !transform.any_op, !transform.any_param
    transform.yield
  }
  // y[o] += x[k] * extf(w[o, k]) after IREE dropped the batch of 1: x f32, w bf16, y f32
  transform.named_sequence @match_bf16_matvec(%op: !transform.any_op {transform.readonly})
      -> (!transform.any_op, !transform.any_param) {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    %x = transform.get_operand %op[0] : (!transform.any_op) -> !transform.any_value
    transform.iree.match.cast_compatible_type %x = tensor<?xf32> : !transform.any_value
    %w = transform.get_operand %op[1] : (!transform.any_op) -> !transform.any_value
    transform.iree.match.cast_compatible_type %w = tensor<?x?xbf16> : !transform.any_value
    %y = transform.get_operand %op[2] : (!transform.any_op) -> !transform.any_value
    transform.iree.match.cast_compatible_type %y = tensor<?xf32> : !transform.any_value
    %config = transform.param.constant #iree_codegen.compilation_info<
      lowering_config = #iree_cpu.lowering_config<distribution = [64, 0],
        vector_common_parallel = [16, 0], vector_reduction = [0, 16]>,
      translation_info = #iree_codegen.translation_info<
        pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>> -> !transform.any_param
    transform.yield %op, %config : !transform.any_op, !transform.any_param
  }
  transform.named_sequence @__kernel_config(%variant: !transform.any_op {transform.consumed})
      -> !transform.any_op attributes {iree_codegen.tuning_spec_entrypoint} {
    %res = transform.foreach_match in %variant @match_bf16_matvec -> @apply_op_config
      : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
"""


def spec_flag(directory: Path) -> str:
    """The flag handing IREE `SPEC`, written once into ``directory`` under a name that is its
    digest: a flag naming the file names its content (a module cache keyed by its flags
    never mixes modules built with two specs)."""
    path = directory / f"tuning-{hashlib.sha256(SPEC.encode()).hexdigest()[:16]}.mlir"
    if not path.exists() or path.read_text(encoding="utf-8") != SPEC:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".mlir")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(SPEC)
        os.replace(tmp, path)
    return f"--iree-codegen-tuning-spec-path={path}"
