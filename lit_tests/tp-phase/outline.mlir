// tp-phase on an outlined program (@decode calling @layer once a layer): the callee's
// statements are phased ONCE, its barriers numbered from 0; a call to a function holding
// chip work stays a bare statement of its caller, alone in one of the caller's phases (its
// callee's phases run in it, in order), tagged with that phase. As a statement it reads
// its operands, writes its results and every caller storage its callee updates in place: a
// reader of a cache the next call updates is phased before that call. tp-inline of the
// phased program numbers the phases again in program order, each call's phase becoming its
// callee's phases.
// RUN: tp-opt %S/Inputs/outline.mlir --split-input-file --tp-phase | filecheck %s
// RUN: tp-opt %S/Inputs/outline.mlir --split-input-file --tp-phase --tp-inline | filecheck %s --check-prefix=FLAT

// Layer 0 updates cache.1, %old reads cache.0 (and layer 0's cache), layer 1 updates
// cache.0 in place: %old must run between the two calls.
// CHECK-LABEL: func.func private @layer(
// CHECK:      %w0 = tp.section "w0" on [0] attributes {tp.phase = 0 : i64}
// CHECK:      %w1 = tp.section "w1" on [1] attributes {tp.phase = 0 : i64}
// CHECK:      tp.barrier phase 0
// CHECK-NEXT: %h0 = tp.section "h0" on [0] attributes {tp.phase = 1 : i64}
// CHECK:      tp.transfer %h1 from 1 to 0 {tp.phase = 2 : i64}
// CHECK:      %s = tp.section "s" on [0, 1] attributes {tp.phase = 3 : i64}
// CHECK:      %c = tp.section "c" on [0, 1] attributes {tp.phase = 6 : i64}
// CHECK:      tp.barrier phase 6
// CHECK-NEXT: func.return %y, %c
// CHECK-LABEL: func.func @decode(
// CHECK:      %x2 = tp.section "x2" on [0, 1] attributes {tp.phase = 0 : i64}
// CHECK:      tp.barrier phase 0
// CHECK-NEXT: %y0, %c1 = func.call @layer(%x2, %w.0, %cache.1, %pos) {tp.phase = 1 : i64}
// CHECK-NEXT: tp.barrier phase 1
// CHECK-NEXT: %old = tp.section "old" on [0, 1] attributes {tp.phase = 2 : i64}
// CHECK:      tp.barrier phase 2
// CHECK-NEXT: %y1, %c0 = func.call @layer(%y0, %w.1, %cache.0, %pos) {tp.phase = 3 : i64}
// CHECK-NEXT: tp.barrier phase 3
// CHECK-NEXT: %out = tp.section "out" on [0, 1] attributes {tp.phase = 4 : i64}
// CHECK:      tp.barrier phase 4
// CHECK-NEXT: func.return

// FLAT-NOT:   @layer
// FLAT-LABEL: func.func @decode(
// FLAT-NOT:   func.call
// FLAT:       %x2 = tp.section "x2" on [0, 1] attributes {tp.phase = 0 : i64}
// FLAT:       tp.barrier phase 0
// FLAT-NEXT:  %w0 = tp.section "w0" on [0] attributes {tp.phase = 1 : i64}
// FLAT:       %c1 = tp.section "c" on [0, 1] attributes {tp.phase = 7 : i64}
// FLAT:       tp.barrier phase 7
// FLAT-NEXT:  %old = tp.section "old" on [0, 1] attributes {tp.phase = 8 : i64}
// FLAT:       tp.barrier phase 8
// FLAT-NEXT:  %w0_1 = tp.section "w0" on [0] attributes {tp.phase = 9 : i64}
// FLAT:       %c0 = tp.section "c" on [0, 1] attributes {tp.phase = 15 : i64}
// FLAT:       tp.barrier phase 15
// FLAT-NEXT:  %out = tp.section "out" on [0, 1] attributes {tp.phase = 16 : i64}
// FLAT:       tp.barrier phase 16
// FLAT-NEXT:  func.return
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
    %y0, %c1 = func.call @layer(%x2, %w.0, %cache.1, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %old = arith.addf %cache.0, %c1 : tensor<2x4xf32>
    %y1, %c0 = func.call @layer(%y0, %w.1, %cache.0, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %out = arith.addf %y1, %y1 : tensor<1x4xf32>
    func.return %out, %old, %c0, %c1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}

// -----
// The caller's transfer of @sum's result to chip 1 is a statement of its own phase,
// between the two calls.
// CHECK-LABEL: func.func @decode(
// CHECK-NEXT: %s = func.call @sum(%p0, %p1) {tp.phase = 0 : i64}
// CHECK-NEXT: tp.barrier phase 0
// CHECK-NEXT: tp.transfer %s from 0 to 1 {tp.phase = 1 : i64}
// CHECK-NEXT: tp.barrier phase 1
// CHECK-NEXT: %y = func.call @layer(%s, %w) {tp.phase = 2 : i64}
// CHECK-NEXT: tp.barrier phase 2
// FLAT-LABEL: func.func @decode(
// FLAT:       %s = tp.section "s" on [0, 1] attributes {tp.phase = 0 : i64}
// FLAT-NEXT:    tp.allreduce %p0, %p1
// FLAT:       tp.barrier phase 0
// FLAT-NEXT:  tp.transfer %s from 0 to 1 {tp.phase = 1 : i64}
// FLAT-NEXT:  tp.barrier phase 1
// FLAT-NEXT:  %w0 = tp.section "w0" on [0] attributes {tp.phase = 2 : i64}
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @sum(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %q0 = linalg.mul ins(%x, %w0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %q1 = linalg.mul ins(%x, %w1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %q0, %q1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %y = arith.addf %x, %s : tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %s = func.call @sum(%p0, %p1) : (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32>
    %y = func.call @layer(%s, %w) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
    %out = arith.addf %y, %s : tensor<4xf32>
    func.return %out : tensor<4xf32>
  }
}
