// tp-transfers spells a ring all-reduce out as ordinary sections and transfers: on each chip
// its partial cut into N slices along the longest axis; a reduce-scatter in N-1 steps — slice
// s starts on chip s+1 as that chip's own slice, and at step t chip s+1+t (mod N) adds its
// slice s to the sum so far, which the chip before it sends it (one add a section, the
// section on the chip whose slice it adds), so slice s is a left fold in the rotated chip
// order s+1, ..., s (a ring fold: tp-verify certifies it) ending on chip s; then each reduced
// slice goes from chip s to every chip (straight, not hop by hop: a chip's program cannot
// pass on a copy it received without a section between), concatenated on every chip, the
// fused epilogue after it. N = 1: the partial is the sum (algorithm "fold"). A tensor no axis
// cuts into N slices stays one ring collective (tp-link-points refuses it: not-linkable).
// RUN: tp-opt %S/Inputs/ring.mlir --split-input-file --tp-transfers --tp-verify | filecheck %s

// Three chips, a 1x6 sum cut into 1x2 slices along axis 1.
// CHECK-LABEL: func.func @three
// CHECK:      %s_z0 = tensor.empty() : tensor<1x2xf32>
// CHECK:      %s_p0s0 = tp.section "s.p0s0" on [0] {
// CHECK-NEXT:   tensor.extract_slice %h0[0, 0] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
// CHECK:      %s_p2s2 = tp.section "s.p2s2" on [2] {
// CHECK-NEXT:   tensor.extract_slice %h2[0, 4] [1, 2] [1, 1]
// Step 1: chip s+1 hands its slice s to chip s+2, which adds its own.
// CHECK:      tp.transfer %s_p1s0 from 1 to 2
// CHECK-NEXT: %s_rs0t1 = tp.section "s.rs0.t1" on [2] {
// CHECK-NEXT:   linalg.add ins(%s_p1s0, %s_p2s0 : tensor<1x2xf32, #tp.chip<1>>, tensor<1x2xf32, #tp.chip<2>>) outs(%s_z0 : tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK:      tp.transfer %s_p2s1 from 2 to 0
// CHECK-NEXT: %s_rs1t1 = tp.section "s.rs1.t1" on [0] {
// CHECK-NEXT:   linalg.add ins(%s_p2s1, %s_p0s1
// CHECK:      tp.transfer %s_p0s2 from 0 to 1
// CHECK-NEXT: %s_rs2t1 = tp.section "s.rs2.t1" on [1] {
// CHECK-NEXT:   linalg.add ins(%s_p0s2, %s_p1s2
// Step 2: the sum so far (spine, two chips' data) to the next chip, which ends the fold:
// slice 0 is p1 + p2 + p0, slice 1 p2 + p0 + p1, slice 2 p0 + p1 + p2.
// CHECK:      tp.transfer %s_rs0t1 from 2 to 0 : tensor<1x2xf32>
// CHECK-NEXT: %s_rs0 = tp.section "s.rs0" on [0] {
// CHECK-NEXT:   linalg.add ins(%s_rs0t1, %s_p0s0 : tensor<1x2xf32>, tensor<1x2xf32, #tp.chip<0>>)
// CHECK:      tp.transfer %s_rs1t1 from 0 to 1 : tensor<1x2xf32>
// CHECK-NEXT: %s_rs1 = tp.section "s.rs1" on [1] {
// CHECK-NEXT:   linalg.add ins(%s_rs1t1, %s_p1s1
// CHECK:      tp.transfer %s_rs2t1 from 1 to 2 : tensor<1x2xf32>
// CHECK-NEXT: %s_rs2 = tp.section "s.rs2" on [2] {
// CHECK-NEXT:   linalg.add ins(%s_rs2t1, %s_p2s2
// The all-gather: each reduced slice from its chip to the two others.
// CHECK:      tp.transfer %s_rs0 from 0 to 1
// CHECK-NEXT: tp.transfer %s_rs0 from 0 to 2
// CHECK-NEXT: tp.transfer %s_rs1 from 1 to 0
// CHECK-NEXT: tp.transfer %s_rs1 from 1 to 2
// CHECK-NEXT: tp.transfer %s_rs2 from 2 to 0
// CHECK-NEXT: tp.transfer %s_rs2 from 2 to 1
// CHECK-NEXT: %out = tp.section "s" on [0, 1, 2] {
// CHECK-NEXT:   %s = tensor.concat dim(1) %s_rs0, %s_rs1, %s_rs2
// CHECK-NEXT:   arith.addf %x, %s
// CHECK-NOT:  tp.allreduce
// CHECK-NOT:  tp.transfer
// CHECK:      func.return %out
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @three(%x: tensor<1x6xf32>) -> tensor<1x6xf32> {
    %e0 = tensor.empty() : tensor<1x6xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x6xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<1x6xf32, #tp.chip<2>>
    %h0 = linalg.add ins(%x, %x : tensor<1x6xf32>, tensor<1x6xf32>) outs(%e0 : tensor<1x6xf32, #tp.chip<0>>) -> tensor<1x6xf32, #tp.chip<0>>
    %h1 = linalg.add ins(%x, %x : tensor<1x6xf32>, tensor<1x6xf32>) outs(%e1 : tensor<1x6xf32, #tp.chip<1>>) -> tensor<1x6xf32, #tp.chip<1>>
    %h2 = linalg.add ins(%x, %x : tensor<1x6xf32>, tensor<1x6xf32>) outs(%e2 : tensor<1x6xf32, #tp.chip<2>>) -> tensor<1x6xf32, #tp.chip<2>>
    %s = tp.allreduce %h0, %h1, %h2 : tensor<1x6xf32, #tp.chip<0>>, tensor<1x6xf32, #tp.chip<1>>, tensor<1x6xf32, #tp.chip<2>> -> tensor<1x6xf32>
    %out = arith.addf %x, %s : tensor<1x6xf32>
    func.return %out : tensor<1x6xf32>
  }
}

// -----
// Two chips: one step, slice 0 is p1 + p0 (rotated), slice 1 p0 + p1; the longest axis is
// cut (axis 0 of a 4x2 tensor).
// CHECK-LABEL: func.func @two
// CHECK:      tp.transfer %s_p1s0 from 1 to 0
// CHECK-NEXT: %s_rs0 = tp.section "s.rs0" on [0] {
// CHECK-NEXT:   linalg.add ins(%s_p1s0, %s_p0s0 : tensor<2x2xf32, #tp.chip<1>>, tensor<2x2xf32, #tp.chip<0>>)
// CHECK:      tp.transfer %s_p0s1 from 0 to 1
// CHECK-NEXT: %s_rs1 = tp.section "s.rs1" on [1] {
// CHECK-NEXT:   linalg.add ins(%s_p0s1, %s_p1s1 : tensor<2x2xf32, #tp.chip<0>>, tensor<2x2xf32, #tp.chip<1>>)
// CHECK:      tp.transfer %s_rs0 from 0 to 1
// CHECK-NEXT: tp.transfer %s_rs1 from 1 to 0
// CHECK-NEXT: %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:   tensor.concat dim(0) %s_rs0, %s_rs1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @two(%p0: tensor<4x2xf32, #tp.chip<0>>, %p1: tensor<4x2xf32, #tp.chip<1>>) -> tensor<4x2xf32> {
    %s = tp.allreduce %p0, %p1 : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<4x2xf32>
    func.return %s : tensor<4x2xf32>
  }
}

// -----
// One chip: the partial is the sum.
// CHECK-LABEL: func.func @one
// CHECK:      tp.allreduce %p0 algorithm "fold"
// CHECK-NOT:  tp.transfer
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @one(%p0: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0 : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Three chips, no axis of 3 elements: one ring collective still, its exchange inside it.
// CHECK-LABEL: func.func @uncut
// CHECK:      tp.allreduce %p0, %p1, %p2 algorithm "ring"
// CHECK-NOT:  tp.transfer
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @uncut(%p0: tensor<2x2xf32, #tp.chip<0>>, %p1: tensor<2x2xf32, #tp.chip<1>>, %p2: tensor<2x2xf32, #tp.chip<2>>) -> tensor<2x2xf32> {
    %s = tp.allreduce %p0, %p1, %p2 : tensor<2x2xf32, #tp.chip<0>>, tensor<2x2xf32, #tp.chip<1>>, tensor<2x2xf32, #tp.chip<2>> -> tensor<2x2xf32>
    func.return %s : tensor<2x2xf32>
  }
}
