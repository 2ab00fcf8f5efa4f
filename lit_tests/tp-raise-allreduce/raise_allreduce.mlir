// tp-raise-allreduce: the seed's left fold of adds over one partial per chip becomes ONE
// tp.allreduce; the fold's statements disappear. Anything else stays as written.
// RUN: tp-opt %s --split-input-file --tp-raise-allreduce | filecheck %s

// CHECK-LABEL: func.func @two_chips
// CHECK-NEXT: %e = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
// CHECK-NEXT: func.return %s
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @two_chips(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Four chips: three adds, one all-reduce.
// CHECK-LABEL: func.func @four_chips
// CHECK-NOT: linalg.add
// CHECK: %s = tp.allreduce %p0, %p1, %p2, %p3
// CHECK-NOT: linalg.add
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @four_chips(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>, %p3: tensor<4xf32, #tp.chip<3>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s2 = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s2, %p3 : tensor<4xf32>, tensor<4xf32, #tp.chip<3>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A fold missing a chip is not an all-reduce: not raised (tp-verify says why).
// CHECK-LABEL: func.func @missing_chip
// CHECK: %s = linalg.add ins(%p0, %p1
// CHECK-NOT: tp.allreduce
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @missing_chip(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// An intermediate sum used elsewhere ends the fold before it: the 2-chip prefix is not an
// all-reduce over 3 chips, and nothing is raised.
// CHECK-LABEL: func.func @sum_escapes
// CHECK-NOT: tp.allreduce
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @sum_escapes(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s, %s1 : tensor<4xf32>, tensor<4xf32>
  }
}
