"""Property: tp-export's segments, run under its manifest's relay, compute what the per-chip
programs compute.

Random valid programs from `random_programs.programs` (N = 1..4; fold or ring; with or without
tp-phase; shards sometimes hoisted into chip-typed host arguments so a chip's start halt
receives) are lowered to per-chip programs and their relay (`test_properties_relay.lowered`),
then exported. The export must hold no tp op and no ``#tp.chip`` type; its manifest must run
every segment exactly once, each with as many arguments and results as its function takes and
gives; and the reference interpreter running each exported function as the manifest says
(`tp_dialect.runtime.segments`, the relay IREE's backend runs too) must give bitwise the
outputs of the interpreter on the per-chip programs, and the generator's numpy model's to
f32 rounding. No IREE here: this checks the cut, the carried values and the manifest.
"""

from __future__ import annotations

import numpy as np
from exported_runner import interpreted
from hypothesis import given, settings
from ir_helpers import SETTINGS, check_ir
from test_properties_relay import Lowered, lowered
from xdsl.dialects.func import FuncOp

from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.segments import run_segments
from tp_dialect.signature import entry_function, ports


@settings(max_examples=70, **SETTINGS)
@given(lowered())
def test_exported_segments_under_the_manifest_compute_the_programs_outputs(
    case: Lowered,
) -> None:
    want = run_program(case.module, case.prog.inputs)
    _, outs = ports(entry_function(case.module))
    exported = case.module.clone()
    export_module(exported)
    check_ir(exported)
    assert not [op.name for op in exported.walk() if op.dialect_name() == "tp"]
    assert "#tp.chip" not in str(exported)
    manifest = manifest_of(exported)
    funcs = {f.sym_name.data: f for f in exported.ops if isinstance(f, FuncOp)}
    runs = [s["run"] for s in manifest["relay"] if "run" in s]
    assert sorted(runs) == sorted(s["function"] for s in manifest["segments"])
    for entry in [*manifest["segments"], manifest["host"]]:
        f = funcs[entry["function"]]
        assert len(entry["arguments"]) == len(f.function_type.inputs.data)
        assert len(entry["results"]) == len(f.function_type.outputs.data)

    host_input, call = interpreted(exported, case.prog.inputs)

    got = run_segments(manifest, host_input, call)
    assert len(got) == len(outs)
    ring = "allreduce=ring" in case.spec
    for port, value in zip(outs, got, strict=True):
        np.testing.assert_array_equal(np.asarray(value), want[port.name], err_msg=port.name)
        reference = case.prog.expected[port.name]
        scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
        atol = 1e-5 * scale if ring else 0.0
        np.testing.assert_allclose(value, reference, rtol=1e-6, atol=atol, err_msg=port.name)
