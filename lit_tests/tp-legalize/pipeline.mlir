// tp-legalize after every stage of the pipeline: what tp-relocate (an all-reduce's section
// with its fused epilogue), tp-transfers (a twoshot's reduce-scatter folds, each on its chip),
// tp-phase, tp-link-points (per-chip programs, link points) and tp-relay write is legal on the
// chip it was placed for: transfers and link points are collectives, barriers, programs and
// the relay control (tests/test_pipeline_legal.py: every algorithm x epilogue x N on Qwen3).
// RUN: tp-opt %s --tp-relocate="allreduce=oneshot epilogue=true shim=sn40l" --tp-legalize=shim=sn40l --tp-transfers --tp-legalize=shim=sn40l --tp-phase --tp-legalize=shim=sn40l --tp-link-points --tp-legalize=shim=sn40l --tp-relay --tp-legalize=shim=sn40l-int8 | filecheck %s --check-prefix=ONESHOT
// RUN: tp-opt %s --tp-relocate="allreduce=twoshot epilogue=true shim=sn40l" --tp-legalize=shim=sn40l --tp-transfers --tp-legalize=shim=sn40l --tp-phase --tp-legalize=shim=sn40l --tp-link-points --tp-legalize=shim=sn40l --tp-relay --tp-legalize=shim=sn40l-int8 | filecheck %s --check-prefix=TWOSHOT

// ONESHOT-LABEL: func.func @residual
// ONESHOT:         tp.chip_program on 0
// ONESHOT:           tp.section "s" on [0] {
// ONESHOT-NEXT:        tp.allreduce {{.*}} algorithm "oneshot"
// ONESHOT-NEXT:        arith.addf
// ONESHOT-NEXT:        arith.mulf
// ONESHOT:         tp.relay
// TWOSHOT-LABEL: func.func @residual
// TWOSHOT:         tp.chip_program on 0
// TWOSHOT:           tp.link {{.*}} receives ["s_p1s0", "s_p2s0"]
// TWOSHOT-NEXT:      tp.section "s.rs0" on [0] {
// TWOSHOT-NEXT:        linalg.add
// TWOSHOT-NEXT:        linalg.add
// TWOSHOT-NEXT:        tp.yield
// TWOSHOT:           tp.section "s" on [0] {
// TWOSHOT-NEXT:        tensor.concat
// TWOSHOT-NEXT:        arith.addf
// TWOSHOT-NEXT:        arith.mulf
// TWOSHOT:         tp.relay
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @residual(%p0: tensor<1x6xf32, #tp.chip<0>>, %p1: tensor<1x6xf32, #tp.chip<1>>, %p2: tensor<1x6xf32, #tp.chip<2>>, %h: tensor<1x6xf32>) -> tensor<1x6xf32> {
    %s = tp.allreduce %p0, %p1, %p2 : tensor<1x6xf32, #tp.chip<0>>, tensor<1x6xf32, #tp.chip<1>>, tensor<1x6xf32, #tp.chip<2>> -> tensor<1x6xf32>
    %r = arith.addf %h, %s : tensor<1x6xf32>
    %y = arith.mulf %r, %r : tensor<1x6xf32>
    func.return %y : tensor<1x6xf32>
  }
}
