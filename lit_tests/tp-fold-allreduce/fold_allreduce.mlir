// tp-fold-allreduce: each statement-level tp.allreduce over several chips is spelled as the
// seed's left fold of adds in chip order (what `tp-gen --fold` writes); tp-raise-allreduce
// gives the all-reduce back. Anything else stays as written.
// RUN: tp-opt %s --split-input-file --tp-fold-allreduce | filecheck %s
// RUN: tp-opt %s --split-input-file --tp-fold-allreduce --tp-raise-allreduce | filecheck %s --check-prefix=BACK

// CHECK-LABEL: func.func @four_chips
// CHECK-NEXT: %s_init = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %s_fold1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%s_init : tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %s_fold2 = linalg.add ins(%s_fold1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%s_init : tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %s = linalg.add ins(%s_fold2, %p3 : tensor<4xf32>, tensor<4xf32, #tp.chip<3>>) outs(%s_init : tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %r = arith.addf %s, %s : tensor<4xf32>
// CHECK-NOT: tp.allreduce
// BACK-LABEL: func.func @four_chips
// BACK-NEXT: %s_init = tensor.empty() : tensor<4xf32>
// BACK-NEXT: %s = tp.allreduce %p0, %p1, %p2, %p3
// BACK-NEXT: %r = arith.addf %s, %s
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @four_chips(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>, %p3: tensor<4xf32, #tp.chip<3>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0, %p1, %p2, %p3 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<2>>, tensor<4xf32, #tp.chip<3>> -> tensor<4xf32>
    %r = arith.addf %s, %s : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// One chip: an all-reduce of one partial is not a fold (a fold adds two or more).
// CHECK-LABEL: func.func @one_chip
// CHECK-NEXT: %s = tp.allreduce %p0 : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @one_chip(%p0: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0 : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// An all-reduce with another algorithm than the seed's stays as written: a fold would drop
// the choice.
// CHECK-LABEL: func.func @oneshot
// CHECK-NEXT: %s = tp.allreduce %p0, %p1 algorithm "oneshot"
// CHECK-NOT: linalg.add
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @oneshot(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// An outlined program: the callee's all-reduce is spelled once, for every call.
// CHECK-LABEL: func.func private @layer
// CHECK: %l_s = linalg.add ins(%p0, %p1
// CHECK-NOT: tp.allreduce
// CHECK-LABEL: func.func @decode
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %l_s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %l_s : tensor<4xf32>
  }
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %l0_s = func.call @layer(%p0, %p1) : (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32>
    func.return %l0_s : tensor<4xf32>
  }
}
