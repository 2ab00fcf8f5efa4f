// Per-chip programs of each linkable all-reduce algorithm. oneshot: every chip sends its
// partial and receives every other, and adds them itself (the all-reduce section in every
// program). twoshot: every chip sends slice s of its partial to chip s, folds the slices it
// receives into its reduced slice, sends that to every chip and concatenates what it gets.
// ring: chip c sends its slice c-1 to chip c+1 and adds the slice the chip before sent it to
// its own, sends the sum on, and so round the ring until chip s holds reduced slice s, which
// it sends to every chip (a ring fold: each chip's program adds one partial of each slice).
// RUN: tp-opt %S/Inputs/algorithms.oneshot.mlir --split-input-file --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=ONESHOT
// RUN: tp-opt %S/Inputs/algorithms.twoshot.mlir --split-input-file --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=TWOSHOT
// RUN: tp-opt %S/Inputs/algorithms.ring.mlir --split-input-file --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=RING

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

// -----
// RING-LABEL: func.func @ring3
// RING:      tp.chip_program on 0
// RING:      %s_p2s1 = tp.link 1 sends(%s_p0s2) as ["s_p0s2"] receives ["s_p2s1"]
// RING-NEXT: %s_rs1t1 = tp.section "s.rs1.t1" on [0] {
// RING-NEXT:   linalg.add ins(%s_p2s1, %s_p0s1
// RING:      %s_rs0t1 = tp.link 2 sends(%s_rs1t1) as ["s_rs1t1"] receives ["s_rs0t1"] : (tensor<1x2xf32>) -> tensor<1x2xf32>
// RING-NEXT: %s_rs0 = tp.section "s.rs0" on [0] {
// RING-NEXT:   linalg.add ins(%s_rs0t1, %s_p0s0
// RING:      %s_rs1, %s_rs2 = tp.link 3 sends(%s_rs0) as ["s_rs0"] receives ["s_rs1", "s_rs2"]
// RING-NEXT: %s_1 = tp.section "s" on [0] {
// RING-NEXT:   tensor.concat dim(1) %s_rs0, %s_rs1, %s_rs2
// RING:      tp.chip_program on 2
// RING:      %s_rs0t1 = tp.section "s.rs0.t1" on [2] {
// RING-NEXT:   linalg.add ins(%s_p1s0, %s_p2s0
// RING:      %s_rs2t1 = tp.link 3 sends(%s_rs0t1) as ["s_rs0t1"] receives ["s_rs2t1"]
// RING:      tp.relay {
// RING:        tp.copy round 3 "s_rs0t1" from 2 to 0
// RING-NEXT:   tp.run_to round 3 chip 0 halt 3
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @ring3(%p0: tensor<1x6xf32, #tp.chip<0>>, %p1: tensor<1x6xf32, #tp.chip<1>>, %p2: tensor<1x6xf32, #tp.chip<2>>) -> tensor<1x6xf32> {
    %s = tp.allreduce %p0, %p1, %p2 : tensor<1x6xf32, #tp.chip<0>>, tensor<1x6xf32, #tp.chip<1>>, tensor<1x6xf32, #tp.chip<2>> -> tensor<1x6xf32>
    func.return %s : tensor<1x6xf32>
  }
}
