// tp-inline refuses what it cannot inline to the end: recursion (inlining would never
// finish) and a callee whose body is not one block ending in func.return.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-inline | filecheck %s

// CHECK-LABEL: error: 'func.call' calls @ping recursively: inlining would never end [opaque-call]
builtin.module {
  func.func private @ping(%a: f32) -> f32 {
    %b = func.call @pong(%a) : (f32) -> f32
    func.return %b : f32
  }
  func.func private @pong(%a: f32) -> f32 {
    %b = func.call @ping(%a) : (f32) -> f32
    func.return %b : f32
  }
  func.func @decode(%x: f32) -> f32 {
    %y = func.call @ping(%x) : (f32) -> f32
    func.return %y : f32
  }
}

// -----
// CHECK-LABEL: error: 'func.call' calls @branchy, whose body is not one block ending in func.return: tp-inline inlines straight-line functions only [opaque-call]
builtin.module {
  func.func private @branchy(%a: f32) -> f32 {
    cf.br ^bb1
  ^bb1:
    func.return %a : f32
  }
  func.func @decode(%x: f32) -> f32 {
    %y = func.call @branchy(%x) : (f32) -> f32
    func.return %y : f32
  }
}

// -----
// CHECK-LABEL: error: 'func.call' states tp.layer = "first": a layer is an integer >= 0
builtin.module {
  func.func private @layer(%a: f32) -> f32 {
    func.return %a : f32
  }
  func.func @decode(%x: f32) -> f32 {
    %y = func.call @layer(%x) {tp.layer = "first"} : (f32) -> f32
    func.return %y : f32
  }
}

// -----
// CHECK-LABEL: error: 'func.call' states tp.layer = -1 : i64: a layer is an integer >= 0
builtin.module {
  func.func private @layer(%a: f32) -> f32 {
    func.return %a : f32
  }
  func.func @decode(%x: f32) -> f32 {
    %y = func.call @layer(%x) {tp.layer = -1 : i64} : (f32) -> f32
    func.return %y : f32
  }
}
