// A use its definition does not dominate is refused at parse-verification (xDSL 0.75 accepts
// it): every analysis of tp assumes SSA.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-LABEL: error: 'arith.subf' uses %b where its definition does not dominate the use (before it is defined, or outside its scope)
    %r = arith.subf %x, %b : tensor<4xf32>
    %b = arith.addf %x, %x : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @self_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = tp.section "a" on [0, 1] {
// CHECK-LABEL: error: 'tp.yield' uses %a where its definition does not dominate the use (before it is defined, or outside its scope)
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    func.return %a : tensor<4xf32>
  }
}

