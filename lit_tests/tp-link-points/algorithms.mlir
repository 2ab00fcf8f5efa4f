// Per-chip programs of each linkable all-reduce algorithm. oneshot: every chip sends its
// partial and receives every other, and adds them itself (the all-reduce section in every
// program). twoshot: every chip sends slice s of its partial to chip s, folds the slices it
// receives into its reduced slice, sends that to every chip and concatenates what it gets.
// RUN: tp-opt %s --tp-relocate=allreduce=oneshot --tp-transfers --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=ONESHOT
// RUN: tp-opt %s --tp-relocate=allreduce=twoshot --tp-transfers --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=TWOSHOT

// ONESHOT-LABEL: func.func @mlp
// ONESHOT:      tp.chip_program on 0
// ONESHOT:      %h1 = tp.link 1 sends(%h0) as ["h0"] receives ["h1"]
// ONESHOT-NEXT: %s = tp.section "s" on [0] {
// ONESHOT-NEXT:   tp.allreduce %h0, %h1 algorithm "oneshot"
// ONESHOT:      tp.chip_program on 1
// ONESHOT:      %h0 = tp.link 1 sends(%h1) as ["h1"] receives ["h0"]
// ONESHOT-NEXT: %s = tp.section "s" on [1] {
// ONESHOT-NEXT:   tp.allreduce %h0, %h1 algorithm "oneshot"
// ONESHOT:      tp.relay {
// ONESHOT-NEXT:   tp.run_to round 0 chip 0 halt 1
// ONESHOT-NEXT:   tp.run_to round 0 chip 1 halt 1
// ONESHOT-NEXT:   tp.copy round 1 "h1" from 1 to 0
// ONESHOT-NEXT:   tp.run_to round 1 chip 0 halt 2
// ONESHOT-NEXT:   tp.copy round 1 "h0" from 0 to 1
// ONESHOT-NEXT:   tp.run_to round 1 chip 1 halt 2

// TWOSHOT-LABEL: func.func @mlp
// TWOSHOT:      tp.chip_program on 0
// TWOSHOT:      %s_p1s0 = tp.link 1 sends(%s_p0s1) as ["s_p0s1"] receives ["s_p1s0"]
// TWOSHOT-NEXT: %s_rs0 = tp.section "s.rs0" on [0] {
// TWOSHOT-NEXT:   linalg.add ins(%s_p0s0, %s_p1s0
// TWOSHOT:      %s_rs1 = tp.link 2 sends(%s_rs0) as ["s_rs0"] receives ["s_rs1"]
// TWOSHOT-NEXT: %s = tp.section "s" on [0] {
// TWOSHOT-NEXT:   tensor.concat dim(1) %s_rs0, %s_rs1
// TWOSHOT:      tp.chip_program on 1
// TWOSHOT:      tp.link 1 sends(%s_p1s0) as ["s_p1s0"] receives []
// TWOSHOT:      %s_p0s1 = tp.link 2 sends() as [] receives ["s_p0s1"]
// TWOSHOT-NEXT: %s_rs1 = tp.section "s.rs1" on [1] {
// TWOSHOT:      %s_rs0 = tp.link 3 sends(%s_rs1) as ["s_rs1"] receives ["s_rs0"]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}
