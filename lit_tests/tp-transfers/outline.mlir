// tp-transfers on an outlined program (@decode calling @layer once a layer): the callee's
// transfers are placed ONCE, in the callee, which takes its arguments for host values
// (every chip reading one holds it); a call to a function holding chip work stays bare,
// and before it the caller transfers each operand to the chips the callee reads it on;
// a call's results are where its callee leaves them.
// RUN: tp-opt %S/Inputs/outline.mlir --split-input-file --tp-transfers | filecheck %s
// RUN: tp-opt %S/Inputs/outline.mlir --split-input-file --tp-transfers --tp-transfers | filecheck %s

// A two-layer MLP with the seed's fold: in @layer, the partial to chip 0 and the sum back,
// once; @decode's input to the calls is spine work every chip did: nothing crosses there.
// CHECK-LABEL: func.func private @layer(
// CHECK:      %h1 = tp.section "h1" on [1] {
// CHECK:      tp.transfer %h1 from 1 to 0 : tensor<1x4xf32, #tp.chip<1>>
// CHECK-NEXT: %s = tp.section "s" on [0, 1] {
// CHECK:      tp.transfer %s from 0 to 1 : tensor<1x4xf32>
// CHECK-NEXT: %y = tp.section "y" on [0, 1] {
// CHECK-LABEL: func.func @decode(
// CHECK-NOT:  tp.transfer
// CHECK:      %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos)
// CHECK-NEXT: %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos)
// CHECK-NEXT: %out = tp.section "out" on [0, 1] {
// CHECK-NOT:  tp.transfer
// CHECK:      func.return
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
// @sum leaves its fold's sum on chip 0; @layer reads its argument on chips 0 and 1. The
// caller sends the sum to chip 1 before calling @layer (once: the later read is served).
// CHECK-LABEL: func.func private @sum(
// CHECK-NOT:  tp.transfer
// CHECK:      func.return %s
// CHECK-LABEL: func.func private @layer(
// CHECK:      tp.transfer %q1 from 1 to 0
// CHECK:      tp.transfer %s from 0 to 1
// CHECK-LABEL: func.func @decode(
// CHECK-NEXT: %s = func.call @sum(%p0, %p1)
// CHECK-NEXT: tp.transfer %s from 0 to 1 : tensor<4xf32>
// CHECK-NEXT: %y = func.call @layer(%s, %w)
// CHECK-NEXT: %out = tp.section "out" on [0, 1] {
// CHECK-NOT:  tp.transfer
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
