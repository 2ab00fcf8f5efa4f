// tp-phase orders statements by what they do to each tensor's storage: an in-place write waits
// for every earlier reader of the storage, even when the storage is a function argument; a
// transfer copies a tensor without writing its storage, so it waits only for that tensor's
// writer, and only the readers on its destination chip wait for it.
// RUN: tp-opt %S/Inputs/dependencies.mlir --split-input-file --tp-phase | filecheck %s

// A cache passed in as a function argument is read (all-reduce partial 0, on chip 0) and then
// written in place on chip 0. Chip 0 idles while chip 1 computes the other partial, but the
// write may not run there: it stays after the read of the old cache.
// CHECK-LABEL: func.func @arg_cache
// CHECK:      %a = tp.section "a" on [1] attributes {tp.phase = 0 : i64}
// CHECK:      tp.barrier phase 0
// CHECK-NEXT: %b = tp.section "b" on [1] attributes {tp.phase = 1 : i64}
// CHECK:      tp.barrier phase 1
// CHECK-NEXT: tp.transfer %b from 1 to 0 {tp.phase = 2 : i64}
// CHECK-NEXT: tp.barrier phase 2
// CHECK-NEXT: %old = tp.section "old" on [0, 1] attributes {tp.phase = 3 : i64}
// CHECK:      tp.barrier phase 3
// CHECK-NEXT: %new = tp.section "new" on [0] attributes {tp.phase = 4 : i64}
// CHECK:      tp.barrier phase 4
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @arg_cache(%k: tensor<2x4xf32, #tp.chip<0>>, %row: tensor<1x4xf32, #tp.chip<0>>, %w: tensor<2x4xf32, #tp.chip<1>>) -> () {
    %a = arith.mulf %w, %w : tensor<2x4xf32, #tp.chip<1>>
    %b = arith.mulf %a, %a : tensor<2x4xf32, #tp.chip<1>>
    %old = tp.allreduce %k, %b : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    %new = tensor.insert_slice %row into %k[1, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<0>> into tensor<2x4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
// The seed's all-reduce leaves the sum on chip 0; chips 1 and 2 each read it. The transfer to
// chip 2 does not wait for chip 1's reader (it writes nothing chip 1 reads): they share a phase.
// CHECK-LABEL: func.func @fanout
// CHECK:      %s = tp.section "s" on [0, 1, 2] attributes {tp.phase = 3 : i64}
// CHECK:      tp.barrier phase 3
// CHECK-NEXT: tp.transfer %s from 0 to 1 {tp.phase = 4 : i64}
// CHECK-NEXT: tp.barrier phase 4
// CHECK-NEXT: %a = tp.section "a" on [1] attributes {tp.phase = 5 : i64}
// CHECK:      tp.transfer %s from 0 to 2 {tp.phase = 5 : i64}
// CHECK-NEXT: tp.barrier phase 5
// CHECK-NEXT: %b = tp.section "b" on [2] attributes {tp.phase = 6 : i64}
// CHECK:      tp.barrier phase 6
// CHECK-NEXT: func.return
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fanout(%w: tensor<2x12xf32>) -> () {
    %e1 = tensor.empty() : tensor<2x4xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<2x4xf32, #tp.chip<2>>
    %p0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 12]> : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<0>>
    %p1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(4, 4)], full = [2, 12]> : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<1>>
    %p2 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 4)], full = [2, 12]> : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<2>>
    %s = tp.allreduce %p0, %p1, %p2 : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>>, tensor<2x4xf32, #tp.chip<2>> -> tensor<2x4xf32>
    %a = linalg.add ins(%s, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e1 : tensor<2x4xf32, #tp.chip<1>>) -> tensor<2x4xf32, #tp.chip<1>>
    %b = linalg.add ins(%s, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e2 : tensor<2x4xf32, #tp.chip<2>>) -> tensor<2x4xf32, #tp.chip<2>>
    func.return
  }
}
