// tp-relocate lowers the seed's fold of adds as ONE all-reduce section (it raises the fold
// first), never as a chain of two-way adds; a fold that is not an all-reduce is refused. A
// scalar is placed by its chip provenance: read out of chip 1's tensor, it runs on chip 1.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate | filecheck %s

// CHECK-LABEL: func.func @fold
// CHECK:      %s = tp.section "s" on [0, 1, 2] {
// CHECK-NEXT:   %{{.*}} = tp.allreduce %p0, %p1, %p2 algorithm "fold"
// CHECK-NOT:  linalg.add
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: fold of adds into %s over partials on chips [0, 1] misses chip 2: an all-reduce needs one partial per chip 0..2, in chip order or a cyclic rotation of it [fold-not-allreduce]
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @short_fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A ring fold (chips 2, 0, 1: a rotation of chip order) is an all-reduce, but one
// tp.allreduce would add in chip order: it stays a fold, each add spine work on every chip,
// so every chip adds the partials in the fold's own order.
// CHECK-LABEL: func.func @ring_fold
// CHECK-NOT:  tp.allreduce
// CHECK:      %s1 = tp.section "s1" on [0, 1, 2] {
// CHECK-NEXT:   linalg.add ins(%p2, %p0
// CHECK:      %s = tp.section "s" on [0, 1, 2] {
// CHECK-NEXT:   linalg.add ins(%s1, %p1
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @ring_fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p2, %p0 : tensor<4xf32, #tp.chip<2>>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @scalar
// CHECK:      %s = tp.section "s" on [1] {
// CHECK-NEXT:   %{{.*}} = tensor.extract %p1
// CHECK:      %pos = tp.section "pos" on [0, 1] {
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @scalar(%n: i64, %p1: tensor<4xf32, #tp.chip<1>>) -> (f32, index) {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %pos = arith.index_cast %n : i64 to index
    func.return %s, %pos : f32, index
  }
}
