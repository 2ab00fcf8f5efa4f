// tp-phase: each statement, in source order, goes into the earliest phase after everything
// it depends on where its chips are free; statements are reordered phase by phase and a
// barrier closes each phase.
// RUN: tp-opt %S/Inputs/phase.mlir --split-input-file --tp-phase | filecheck %s

// The chips run at once: chip 0's and chip 1's slices share phases; the seed's all-reduce
// then serialises on chip 0 (partial in, fold, sum back out).
// CHECK-LABEL: func.func @mlp
// CHECK:      %w0 = tp.section "w0" on [0] attributes {tp.phase = 0 : i64}
// CHECK-NEXT:   tp.shard
// CHECK-NEXT:   tp.yield
// CHECK-NEXT: } : tensor<1x4xf32, #tp.chip<0>>
// CHECK-NEXT: %w1 = tp.section "w1" on [1] attributes {tp.phase = 0 : i64}
// CHECK:      tp.barrier phase 0
// CHECK-NEXT: %h0 = tp.section "h0" on [0] attributes {tp.phase = 1 : i64}
// CHECK:      %h1 = tp.section "h1" on [1] attributes {tp.phase = 1 : i64}
// CHECK:      tp.barrier phase 1
// CHECK-NEXT: tp.transfer %h1 from 1 to 0 {tp.phase = 2 : i64}
// CHECK-NEXT: tp.barrier phase 2
// CHECK-NEXT: %s = tp.section "s" on [0, 1] attributes {tp.phase = 3 : i64}
// CHECK:      tp.barrier phase 3
// CHECK-NEXT: tp.transfer %s from 0 to 1 {tp.phase = 4 : i64}
// CHECK-NEXT: tp.barrier phase 4
// CHECK-NEXT: %out = tp.section "out" on [0, 1] attributes {tp.phase = 5 : i64}
// CHECK:      tp.barrier phase 5
// CHECK-NEXT: func.return %out
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
// Carried state: the cache is updated in place (one storage), so the update comes after the
// earlier read of the old cache and before the read of the new one, and independent work on
// another chip fills the same phases. (On one chip the order also follows from the chip being
// busy; tests/test_analyses.py checks the write-after-read rule on its own.)
// CHECK-LABEL: func.func @cache
// CHECK:      %k = tp.section "k" on [0] attributes {tp.phase = 0 : i64}
// CHECK:      %other = tp.section "other" on [1] attributes {tp.phase = 0 : i64}
// CHECK:      tp.barrier phase 0
// CHECK-NEXT: %old = tp.section "old" on [0] attributes {tp.phase = 1 : i64}
// CHECK:      tp.barrier phase 1
// CHECK-NEXT: %new = tp.section "new" on [0] attributes {tp.phase = 2 : i64}
// CHECK:      tp.barrier phase 2
// CHECK-NEXT: %seen = tp.section "seen" on [0] attributes {tp.phase = 3 : i64}
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cache(%past: tensor<2x4xf32>, %row: tensor<1x4xf32, #tp.chip<0>>, %y: tensor<1x4xf32, #tp.chip<1>>) -> () {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %k = tp.shard %past at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2, 4]> : tensor<2x4xf32> -> tensor<2x4xf32, #tp.chip<0>>
    %old = tensor.extract_slice %k[1, 0] [1, 4] [1, 1] : tensor<2x4xf32, #tp.chip<0>> to tensor<1x4xf32, #tp.chip<0>>
    %new = tensor.insert_slice %row into %k[1, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<0>> into tensor<2x4xf32, #tp.chip<0>>
    %seen = tensor.extract_slice %new[1, 0] [1, 4] [1, 1] : tensor<2x4xf32, #tp.chip<0>> to tensor<1x4xf32, #tp.chip<0>>
    %other = linalg.add ins(%y, %y : tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
// Sections that must not share a phase: two independent statements on the same chip; and
// a spine statement, which occupies every chip.
// CHECK-LABEL: func.func @busy
// CHECK:      %a = tp.section "a" on [0] attributes {tp.phase = 0 : i64}
// CHECK:      %c = tp.section "c" on [1] attributes {tp.phase = 0 : i64}
// CHECK:      tp.barrier phase 0
// CHECK-NEXT: %b = tp.section "b" on [0] attributes {tp.phase = 1 : i64}
// CHECK:      tp.barrier phase 1
// CHECK-NEXT: %d = tp.section "d" on [0, 1] attributes {tp.phase = 2 : i64}
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @busy(%x: tensor<4xf32, #tp.chip<0>>, %y: tensor<4xf32, #tp.chip<1>>, %z: tensor<4xf32>) -> () {
    %a = arith.addf %x, %x : tensor<4xf32, #tp.chip<0>>
    %b = arith.mulf %x, %x : tensor<4xf32, #tp.chip<0>>
    %c = arith.addf %y, %y : tensor<4xf32, #tp.chip<1>>
    %d = arith.addf %z, %z : tensor<4xf32>
    func.return
  }
}
