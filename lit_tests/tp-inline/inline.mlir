// tp-inline: every func.call to a function of the module becomes a copy of the callee's
// body, reading the call's operands; the call's results are what the copy returns (named as
// the call named them), and a private callee no call names any more is erased. An outlined
// program (tp-gen --outline) becomes its flat program.
// RUN: tp-opt %s --split-input-file --tp-inline | filecheck %s

// A two-layer outlined program: @layer cuts its weight over the chips, sums the chips'
// partials and adds the residual; @decode calls it once a layer with that layer's weight.
// CHECK-LABEL: func.func @decode(%x: tensor<4xf32>, %w.0: tensor<8xf32>, %w.1: tensor<8xf32>) -> tensor<4xf32> {
// CHECK-NOT: func.call
// CHECK: %w0 = tp.shard %w.0 at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]>
// CHECK: %w1 = tp.shard %w.0 at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]>
// CHECK: %s = tp.allreduce %p0, %p1
// CHECK-NEXT: %y0 = arith.addf %x, %s : tensor<4xf32>
// CHECK-NOT: func.call
// CHECK: %w0_1 = tp.shard %w.1 at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]>
// CHECK: %w1_1 = tp.shard %w.1 at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]>
// CHECK: %s_1 = tp.allreduce %p0_1, %p1_1
// CHECK-NEXT: %y1 = arith.addf %y0, %s_1 : tensor<4xf32>
// CHECK-NEXT: func.return %y1 : tensor<4xf32>
// CHECK-NEXT: }
// The callee (written after @decode) is gone.
// CHECK-NOT: @layer
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%x: tensor<4xf32>, %w.0: tensor<8xf32>, %w.1: tensor<8xf32>) -> tensor<4xf32> {
    %y0 = func.call @layer(%x, %w.0) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
    %y1 = func.call @layer(%y0, %w.1) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
    func.return %y1 : tensor<4xf32>
  }
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %p0 = linalg.mul ins(%x, %w0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %p1 = linalg.mul ins(%x, %w1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %y = arith.addf %x, %s : tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----
// A public callee is inlined at its calls but kept: a caller outside the module may name it.
// CHECK-LABEL: func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %d = arith.addf %a, %a : tensor<4xf32>
// CHECK-NEXT: func.return %d
// CHECK-LABEL: func.func @keeps_public(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %y = arith.addf %x, %x : tensor<4xf32>
// CHECK-NEXT: func.return %y
builtin.module {
  func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
    %d = arith.addf %a, %a : tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
  func.func @keeps_public(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----
// Calls inside a callee are inlined too; a value the callee hands straight back is the
// caller's own operand; a declaration (no body) is called as before.
// CHECK-LABEL: func.func private @external(tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: @inner
// CHECK-NOT: @outer
// CHECK-LABEL: func.func @nested(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT: %d = arith.addf %x, %x : tensor<4xf32>
// CHECK-NEXT: %e = func.call @external(%d) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %d_1 = arith.addf %e, %e : tensor<4xf32>
// CHECK-NEXT: %e2 = func.call @external(%d_1) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: func.return %e2, %x : tensor<4xf32>, tensor<4xf32>
builtin.module {
  func.func private @external(tensor<4xf32>) -> tensor<4xf32>
  func.func private @inner(%a: tensor<4xf32>) -> tensor<4xf32> {
    %d = arith.addf %a, %a : tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
  func.func private @outer(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %d = func.call @inner(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %e = func.call @external(%d) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %e, %a : tensor<4xf32>, tensor<4xf32>
  }
  func.func @nested(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e, %same = func.call @outer(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %e2, %same2 = func.call @outer(%e) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    func.return %e2, %same : tensor<4xf32>, tensor<4xf32>
  }
}

// -----
// A call stating the layer it runs (tp.layer, as tp-gen --outline writes it): its copy's
// names written for every layer (l_…) take that layer's tag, whatever the call's results
// are named (what a copy returns keeps the call's result names).
// CHECK-LABEL: func.func @decode(%x: tensor<4xf32>, %w.0: tensor<4xf32>, %w.1: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %l3_t = arith.mulf %x, %w.0 : tensor<4xf32>
// CHECK-NEXT: %a = arith.addf %l3_t, %x : tensor<4xf32>
// CHECK-NEXT: %l7_t = arith.mulf %a, %w.1 : tensor<4xf32>
// CHECK-NEXT: %b = arith.addf %l7_t, %a : tensor<4xf32>
// CHECK-NEXT: func.return %b : tensor<4xf32>
builtin.module {
  func.func @decode(%x: tensor<4xf32>, %w.0: tensor<4xf32>, %w.1: tensor<4xf32>) -> tensor<4xf32> {
    %a = func.call @layer(%x, %w.0) {tp.layer = 3 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = func.call @layer(%a, %w.1) {tp.layer = 7 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %b : tensor<4xf32>
  }
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %l_t = arith.mulf %x, %w : tensor<4xf32>
    %l_y = arith.addf %l_t, %x : tensor<4xf32>
    func.return %l_y : tensor<4xf32>
  }
}
