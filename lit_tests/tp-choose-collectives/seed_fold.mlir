// The seed's fold of adds is an all-reduce: tp-choose-collectives raises it first (as
// tp-relocate does) and writes the algorithm asked on it, so that
// `tp-choose-collectives{allreduce=ring},tp-relocate` places a ring on a program written as folds.
// RUN: tp-opt %s --tp-choose-collectives=allreduce=ring | filecheck %s

// CHECK-LABEL: func.func @four_chips
// CHECK-NOT: linalg.add
// CHECK: %s = tp.allreduce %p0, %p1, %p2, %p3 algorithm "ring"
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @four_chips(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>, %p3: tensor<4xf32, #tp.chip<3>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s2 = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s2, %p3 : tensor<4xf32>, tensor<4xf32, #tp.chip<3>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
