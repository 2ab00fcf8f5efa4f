// The passes that lower the entry function (@decode, or the module's only function) refuse
// a module with none, or with several and no @decode, at the module: a user's error, located
// and named (a BindError shown as an internal error before).
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-fuse | filecheck %s --check-prefix=FUSE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-transfers | filecheck %s --check-prefix=TRANSFERS
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-phase | filecheck %s --check-prefix=PHASE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-link-points | filecheck %s --check-prefix=LINK
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relay | filecheck %s --check-prefix=RELAY
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-split="chips=2 plan=qwen3" | filecheck %s --check-prefix=SPLIT

// FUSE-LABEL: error: tp-fuse works on the module's entry function, @decode or its only function, but it has no function
// FUSE-NEXT: builtin.module attributes {tp.chips = 2 : i64} {
// TRANSFERS-LABEL: error: tp-transfers works on the module's entry function, @decode or its only function, but it has no function
// PHASE-LABEL: error: tp-phase works on the module's entry function, @decode or its only function, but it has no function
// LINK-LABEL: error: tp-link-points works on the module's entry function, @decode or its only function, but it has no function
// RELAY-LABEL: error: tp-relay works on the module's entry function, @decode or its only function, but it has no function
// SPLIT-LABEL: error: tp-split works on the module's entry function, @decode or its only function, but it has no function
builtin.module attributes {tp.chips = 2 : i64} {
}

// -----
// FUSE-LABEL: error: tp-fuse works on the module's entry function, @decode or its only function, but its functions are @f, @g
// TRANSFERS-LABEL: error: tp-transfers works on the module's entry function, @decode or its only function, but its functions are @f, @g
// PHASE-LABEL: error: tp-phase works on the module's entry function, @decode or its only function, but its functions are @f, @g
// LINK-LABEL: error: tp-link-points works on the module's entry function, @decode or its only function, but its functions are @f, @g
// RELAY-LABEL: error: tp-relay works on the module's entry function, @decode or its only function, but its functions are @f, @g
// SPLIT-LABEL: error: tp-split works on the module's entry function, @decode or its only function, but its functions are @f, @g
// SPLIT-NEXT: builtin.module {
builtin.module {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    func.return %a : tensor<4xf32>
  }
  func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {
    func.return %a : tensor<4xf32>
  }
}

// -----
// A function without a body (a declaration) has nothing to lower.
// FUSE-LABEL: error: tp-fuse: @f has no body to lower
// FUSE-NEXT: func.func private @f
// TRANSFERS-LABEL: error: tp-transfers: @f has no body to lower
// PHASE-LABEL: error: tp-phase: @f has no body to lower
// LINK-LABEL: error: tp-link-points: @f has no body to lower
// RELAY-LABEL: error: tp-relay: @f has no body to lower
// SPLIT-LABEL: error: tp-split: @f has no body to lower
builtin.module {
  func.func private @f(tensor<4xf32>) -> tensor<4xf32>
}
