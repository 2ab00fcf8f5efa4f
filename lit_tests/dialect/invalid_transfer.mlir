// Every verifier message of tp.transfer and tp.barrier.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>) {
// CHECK-LABEL: error: 'tp.transfer' destination is on chip 5, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.transfer %a from 0 to 5
    tp.transfer %a from 0 to 5 : tensor<4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.transfer' source is on chip 7, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.transfer %a from 7 to 0
    tp.transfer %a from 7 to 0 : tensor<4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.transfer' of %a goes from chip 1 to itself
// CHECK-NEXT: tp.transfer %a from 1 to 1
    tp.transfer %a from 1 to 1 : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.transfer' input %a is on chip 1; only its own chip sends it, not chip 0
// CHECK-NEXT: tp.transfer %a from 0 to 1
    tp.transfer %a from 0 to 1 : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.allreduce' algorithm "tree" is not one of fold, ring, oneshot, twoshot
// CHECK-NEXT: %s = tp.allreduce %a, %b algorithm "tree"
    %s = tp.allreduce %a, %b algorithm "tree" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.barrier' phase -1 is negative
// CHECK-NEXT: tp.barrier phase -1
  tp.barrier phase -1
}
