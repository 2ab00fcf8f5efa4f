// tp-transfers places transfers between sections: a statement outside a section (tp-relocate
// not run, or run on part of the program) is refused with its reason, [not-sectioned].
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-transfers | filecheck %s

// A chip's statement left between sections.
// CHECK-LABEL: error: 'linalg.add' is not in a tp.section: run tp-relocate before placing transfers [not-sectioned]
// CHECK-NEXT:  %p1 = linalg.add
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @bare(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %p0 = tp.section "p0" on [0] {
      %a = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      tp.yield %a : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// An all-reduce that is not its own section: whose chips run it is not yet decided.
// CHECK-LABEL: error: 'tp.allreduce' is not in a tp.section: run tp-relocate before placing transfers [not-sectioned]
// CHECK-NEXT:  %s = tp.allreduce
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @allreduce(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %p0 = tp.section "p0" on [0] {
      %a = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      tp.yield %a : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %p1 = tp.section "p1" on [1] {
      %b = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.yield %b : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A spine statement (a scalar read) outside a section.
// CHECK-LABEL: error: 'tensor.extract' is not in a tp.section: run tp-relocate before placing transfers [not-sectioned]
// CHECK-NEXT:  %v = tensor.extract
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @scalar(%x: tensor<4xf32>, %i: index) -> f32 {
    %v = tensor.extract %x[%i] : tensor<4xf32>
    func.return %v : f32
  }
}

// -----
// Every statement in a section: accepted, and the partial crosses to the folding chip.
// CHECK-LABEL: func.func @placed
// CHECK:       tp.transfer %p1 from 1 to 0
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @placed(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %p0 = tp.section "p0" on [0] {
      %a = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      tp.yield %a : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %p1 = tp.section "p1" on [1] {
      %b = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.yield %b : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %r = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.yield %r : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
