// tp-relocate on an outlined program (@decode calling @layer once a layer): the callee's
// statements become sections ONCE, for every call; a call to a function holding chip work
// stays a bare statement of its caller (its callee holds the sections), while the caller's
// own statements are sectioned as ever. A call to a function holding no chip work is
// sectioned where it stands, its callee left as it is. Refused at the call: such a call
// nested in other work, recursion, and chip data handed for a spine argument.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate | filecheck %s

// A two-layer MLP: @layer cuts its weight over the chips, sums the partials, adds the
// residual and writes a cache row in place; @decode squares its input first, reads cache.0
// before layer 0 updates it, and doubles the result.
// CHECK-LABEL: func.func private @layer(
// CHECK:      %w0 = tp.section "w0" on [0] {
// CHECK-NEXT:   tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>
// CHECK:      %w1 = tp.section "w1" on [1] {
// CHECK:      %h0 = tp.section "h0" on [0] {
// CHECK:      %h1 = tp.section "h1" on [1] {
// CHECK:      %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:   tp.allreduce %h0, %h1 algorithm "fold"
// CHECK:      %y = tp.section "y" on [0, 1] {
// CHECK:      %c = tp.section "c" on [0, 1] {
// CHECK-NEXT:   tensor.insert_slice %y into %cache
// CHECK:      func.return %y, %c
// CHECK-LABEL: func.func @decode(
// CHECK-NEXT: %x2 = tp.section "x2" on [0, 1] {
// CHECK:      %old = tp.section "old" on [0, 1] {
// CHECK:      } : tensor<2x4xf32>
// CHECK-NEXT: %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos)
// CHECK-NEXT: %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos)
// CHECK-NEXT: %out = tp.section "out" on [0, 1] {
// CHECK:      func.return %out, %old, %c0, %c1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.mul ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.mul ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %y = arith.addf %x, %s : tensor<1x4xf32>
    %c = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %w.0: tensor<2x4xf32> {tp.name = "w.0"}, %w.1: tensor<2x4xf32> {tp.name = "w.1"}, %cache.0: tensor<2x4xf32> {tp.name = "cache.0"}, %cache.1: tensor<2x4xf32> {tp.name = "cache.1"}, %pos: index {tp.name = "pos"}) -> (tensor<1x4xf32> {tp.name = "out"}, tensor<2x4xf32> {tp.name = "old"}, tensor<2x4xf32> {tp.name = "cache.0"}, tensor<2x4xf32> {tp.name = "cache.1"}) {
    %x2 = arith.mulf %x, %x : tensor<1x4xf32>
    %old = arith.addf %cache.0, %cache.0 : tensor<2x4xf32>
    %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %out = arith.addf %y1, %y1 : tensor<1x4xf32>
    func.return %out, %old, %c0, %c1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}

// -----
// A helper holding no chip work (spine only): its call is sectioned like any statement,
// on every chip, and the helper is left as it is (it runs inside that section).
// CHECK-LABEL: func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %d = arith.addf %a, %a : tensor<4xf32>
// CHECK-NEXT: func.return %d
// CHECK-LABEL: func.func @decode(
// CHECK:      %y = tp.section "y" on [0, 1] {
// CHECK-NEXT:   func.call @twice(%x)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
    %d = arith.addf %a, %a : tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----
// A call to a function holding chip work inside a section: sections would nest.
// CHECK-LABEL: error: 'func.call' calls @sum, which holds chip work, inside a 'tp.section': a call to it is a statement of a function (its callee places its own work; sections never nest) [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @sum(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %r = tp.section "r" on [0, 1] {
      %s = func.call @sum(%p0, %p1) : (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32>
      tp.yield %s : tensor<4xf32>
    } : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// Recursion: a function whose statements are placed once cannot contain itself.
// CHECK-LABEL: error: 'func.call' calls @layer recursively: a function whose statements are placed once cannot contain itself [opaque-call]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%p: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>> {
    %q = func.call @layer(%p) : (tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    func.return %q : tensor<4xf32, #tp.chip<1>>
  }
  func.func @decode(%p: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>> {
    %r = func.call @layer(%p) : (tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    func.return %r : tensor<4xf32, #tp.chip<1>>
  }
}

// -----
// Chip 1's scalar handed for a spine argument: @scale's statements are placed once, by its
// arguments' types, so its spine work would run on every chip with chip 1's data.
// CHECK-LABEL: error: 'func.call' hands @scale %k, chip 1's data, for argument #1 (%k), a spine argument: @scale's statements are placed once, by its arguments' types, for every call [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @scale(%p: tensor<4xf32, #tp.chip<0>>, %k: f32) -> tensor<4xf32, #tp.chip<0>> {
    %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %f = linalg.fill ins(%k : f32) outs(%e : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %q = arith.mulf %p, %f : tensor<4xf32, #tp.chip<0>>
    func.return %q : tensor<4xf32, #tp.chip<0>>
  }
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<0>> {
    %i = arith.constant 0 : index
    %k = tensor.extract %p1[%i] : tensor<4xf32, #tp.chip<1>>
    %r = func.call @scale(%p0, %k) : (tensor<4xf32, #tp.chip<0>>, f32) -> tensor<4xf32, #tp.chip<0>>
    func.return %r : tensor<4xf32, #tp.chip<0>>
  }
}
