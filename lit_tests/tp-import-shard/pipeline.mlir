// The README's worked example: MLIR Shard annotations in, tp's certified and scheduled
// program out (sections on chips, the all-reduce's transfers, phases), then per-chip programs
// and the host's relay, certified at the end.
// RUN: tp-opt %S/../../examples/shard_mlp.mlir --tp-import-shard --tp-relocate --tp-transfers --tp-phase --tp-verify | filecheck %s
// RUN: tp-opt %S/../../examples/shard_mlp.mlir --tp-import-shard --tp-relocate --tp-transfers --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=PROGRAMS

// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// CHECK:         func.func @mlp
// CHECK:         tp.section "h_c0" on [0] attributes {tp.phase = 2 : i64}
// CHECK:         tp.section "h_c1" on [1] attributes {tp.phase = 2 : i64}
// CHECK:         tp.transfer %y_c1 from 1 to 0
// CHECK:         tp.allreduce %y_c0, %y_c1 algorithm "fold"

// PROGRAMS-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// PROGRAMS:         %out = tp.chip_program on 0 (%up, %x, %down)
// PROGRAMS:         tp.chip_program on 1 (%up, %x, %down)
// PROGRAMS:         tp.relay
