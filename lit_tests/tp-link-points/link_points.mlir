// tp-link-points: one program per chip, each standing alone, halting where it sends and
// receives: a send after the section that stores the tensor, a receive before the first
// section that loads it; halts at one boundary are one link point, in program order.
// RUN: tp-opt %S/Inputs/link_points.mlir --split-input-file --tp-link-points | filecheck %s
// RUN: not tp-opt %S/Inputs/link_points.ring.mlir --split-input-file --tp-link-points 2>&1 | filecheck %s --check-prefix=RING

// The Megatron MLP on 4 chips with the seed's all-reduce. Chip 0 halts once to receive the
// three partials (one link point), once after the fold to send the sum; chips 1..3 halt
// once: send their partial, receive the sum (one boundary, one link point).
// CHECK-LABEL: func.func @mlp4
// CHECK:      %out = tp.chip_program on 0 (%w, %x) {
// CHECK-NEXT: ^bb0(%w_1: tensor<4x4xf32>, %x_1: tensor<1x4xf32>):
// CHECK-NEXT:   %w0 = tp.section "w0" on [0] {
// CHECK:        %h0 = tp.section "h0" on [0] {
// CHECK:        %h1, %h2, %h3 = tp.link 1 sends() as [] receives ["h1", "h2", "h3"] : () -> (tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<2>>, tensor<1x4xf32, #tp.chip<3>>)
// CHECK-NEXT:   %s = tp.section "s" on [0] {
// CHECK-NEXT:     tp.allreduce %h0, %h1, %h2, %h3 algorithm "fold"
// CHECK:        tp.link 2 sends(%s) as ["s"] receives [] : (tensor<1x4xf32>) -> ()
// CHECK-NEXT:   %out_1 = tp.section "out" on [0] {
// CHECK:        tp.finish %out_1 : tensor<1x4xf32>
// CHECK-NEXT: } -> (tensor<1x4xf32>)
// CHECK-NEXT: tp.chip_program on 1 (%w, %x) {
// CHECK:        %h1 = tp.section "h1" on [1] {
// CHECK:        %s = tp.link 1 sends(%h1) as ["h1"] receives ["s"] : (tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32>
// CHECK-NEXT:   %out_1 = tp.section "out" on [1] {
// CHECK:        tp.finish
// CHECK:      tp.chip_program on 3 (%w, %x) {
// CHECK:        %s = tp.link 1 sends(%h3) as ["h3"] receives ["s"]
// The host returns chip 0's copy of the replicated result.
// CHECK:      func.return %out : tensor<1x4xf32>
// RING: error: a ring all-reduce is spelled as transfers only once tp-transfers has expanded it, which per-chip programs cannot hold: relocate with allreduce=fold, ring, oneshot, twoshot or auto, then run tp-transfers [not-linkable]
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @mlp4(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>) -> tensor<1x4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %w2 = tp.shard %w at #tp.slice<axis = 0, ranges = [(2, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<2>>
    %w3 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<3>>
    %h0 = arith.mulf %w0, %w0 : tensor<1x4xf32, #tp.chip<0>>
    %h1 = arith.mulf %w1, %w1 : tensor<1x4xf32, #tp.chip<1>>
    %h2 = arith.mulf %w2, %w2 : tensor<1x4xf32, #tp.chip<2>>
    %h3 = arith.mulf %w3, %w3 : tensor<1x4xf32, #tp.chip<3>>
    %s = tp.allreduce %h0, %h1, %h2, %h3 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<2>>, tensor<1x4xf32, #tp.chip<3>> -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
// A chip whose first section needs a tensor from another chip: nothing to halt for before
// it starts, so the receive is link 0 — the host places it before chip 1 runs. The host
// stores the chips' KV caches (tp.unshard) from their programs' outputs.
// CHECK-LABEL: func.func @first_needs_other
// CHECK:      %new0 = tp.chip_program on 0 (%row, %past) {
// CHECK:        %a = tp.section "a" on [0] {
// CHECK:        tp.link 1 sends(%a) as ["a"] receives [] : (tensor<1x4xf32, #tp.chip<0>>) -> ()
// CHECK:        %new0_1 = tp.section "new0" on [0] {
// CHECK-NEXT:     tensor.insert_slice %a into %k0
// CHECK:        tp.finish %new0_1
// CHECK:      %new1 = tp.chip_program on 1 (%past) {
// CHECK-NEXT: ^bb0(%past_1: tensor<2x4xf32>):
// CHECK:        %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<1x4xf32, #tp.chip<0>>
// CHECK-NEXT:   %b = tp.section "b" on [1] {
// CHECK:      %present = tp.unshard %new0, %new1 slices
// CHECK:      func.return %present
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @first_needs_other(%past: tensor<2x4xf32>, %row: tensor<1x4xf32, #tp.chip<0>>) -> tensor<2x4xf32> {
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %a = arith.mulf %row, %row : tensor<1x4xf32, #tp.chip<0>>
    %b = linalg.add ins(%a, %a : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<0>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %k0 = tp.shard %past at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %k1 = tp.shard %past at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %new0 = tensor.insert_slice %a into %k0[0, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<0>> into tensor<1x4xf32, #tp.chip<0>>
    %new1 = tensor.insert_slice %b into %k1[0, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<1>> into tensor<1x4xf32, #tp.chip<1>>
    %present = tp.unshard %new0, %new1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    func.return %present : tensor<2x4xf32>
  }
}
