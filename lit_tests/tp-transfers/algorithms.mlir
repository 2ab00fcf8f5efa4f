// tp-transfers spells each all-reduce algorithm's exchange as transfers. oneshot: every
// partial to every other chip, each chip adding them in chip order itself. twoshot: first
// spelled as a reduce-scatter (slice s of every partial to chip s, folded there in chip
// order) and an all-gather (every reduced slice to every chip, concatenated).
// RUN: tp-opt %S/Inputs/algorithms.oneshot.mlir --tp-transfers | filecheck %s --check-prefix=ONESHOT
// RUN: tp-opt %S/Inputs/algorithms.twoshot.mlir --tp-transfers | filecheck %s --check-prefix=TWOSHOT

// ONESHOT-LABEL: func.func @mlp
// ONESHOT:      tp.transfer %h0 from 0 to 1
// ONESHOT-NEXT: tp.transfer %h1 from 1 to 0
// ONESHOT-NEXT: %s = tp.section "s" on [0, 1] {
// ONESHOT-NEXT:   tp.allreduce %h0, %h1 algorithm "oneshot"
// ONESHOT-NOT:  tp.transfer %s

// TWOSHOT-LABEL: func.func @mlp
// TWOSHOT:      %s_p0s0 = tp.section "s.p0s0" on [0] {
// TWOSHOT-NEXT:   tensor.extract_slice %h0[0, 0] [1, 2] [1, 1]
// TWOSHOT:      %s_p0s1 = tp.section "s.p0s1" on [0] {
// TWOSHOT-NEXT:   tensor.extract_slice %h0[0, 2] [1, 2] [1, 1]
// TWOSHOT:      tp.transfer %s_p1s0 from 1 to 0
// TWOSHOT-NEXT: %s_rs0 = tp.section "s.rs0" on [0] {
// TWOSHOT-NEXT:   linalg.add ins(%s_p0s0, %s_p1s0
// TWOSHOT:      tp.transfer %s_p0s1 from 0 to 1
// TWOSHOT-NEXT: %s_rs1 = tp.section "s.rs1" on [1] {
// TWOSHOT-NEXT:   linalg.add ins(%s_p0s1, %s_p1s1
// TWOSHOT:      tp.transfer %s_rs0 from 0 to 1
// TWOSHOT-NEXT: tp.transfer %s_rs1 from 1 to 0
// TWOSHOT-NEXT: %s = tp.section "s" on [0, 1] {
// TWOSHOT-NEXT:   tensor.concat dim(1) %s_rs0, %s_rs1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}
