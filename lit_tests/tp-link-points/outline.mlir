// tp-link-points on an outlined program (@decode calling @layer once a layer): @layer is split
// once into one per-chip function per chip (tp.chip = c), chip c's sections with its own link
// points numbered from 1, and each chip's program calls its function once a layer, tagged so
// that every call's buffers are its own; the host stores the callee's host stores per call.
// RUN: tp-opt %S/Inputs/outline.mlir --tp-link-points | filecheck %s

// CHECK-NOT:  func.func private @layer(
// CHECK-LABEL: func.func private @layer.chip0(
// CHECK-SAME:   %x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index
// CHECK-SAME:   attributes {tp.chip = 0 : i64}
// CHECK:      %w0 = tp.section "w0" on [0] {
// CHECK-NEXT:   tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>
// CHECK:      %h1 = tp.link 1 sends() as [] receives ["h1"]
// CHECK:      tp.allreduce %h0, %h1 algorithm "fold"
// CHECK:      tp.link 2 sends(%s) as ["s"] receives []
// CHECK:      tensor.insert_slice %y into %cache
// CHECK:      func.return %y, %c
// CHECK-LABEL: func.func private @layer.chip1(
// CHECK-SAME:   attributes {tp.chip = 1 : i64}
// CHECK:      %s = tp.link 1 sends(%h1) as ["h1"] receives ["s"]
// CHECK-LABEL: func.func @decode(
// CHECK:      tp.chip_program on 0
// CHECK:      %x2 = tp.section "x2" on [0]
// CHECK:      func.call @layer.chip0(%x2, %w.0_1, %cache.0_1, %pos_1) {tp.tag = "call0_"}
// CHECK-NEXT: func.call @layer.chip0(%y, %w.1_1, %cache.1_1, %pos_1) {tp.tag = "call1_"}
// CHECK:      tp.finish
// CHECK:      tp.chip_program on 1
// CHECK:      func.call @layer.chip1({{.*}}) {tp.tag = "call0_"}
// CHECK-NEXT: func.call @layer.chip1({{.*}}) {tp.tag = "call1_"}
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
