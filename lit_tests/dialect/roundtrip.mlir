// Every tp attribute and op in its custom form, printed back unchanged, and through
// the generic form and back again.
// RUN: tp-opt %s | tp-opt | filecheck %s
// RUN: tp-opt %s --print-op-generic | tp-opt | filecheck %s
// RUN: tp-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: builtin.module @tp_roundtrip attributes {tp.chips = 2 : i64}
// GENERIC: "builtin.module"() <{sym_name = "tp_roundtrip"}> ({
builtin.module @tp_roundtrip attributes {tp.chips = 2 : i64} {
  // CHECK-LABEL: func.func @ops
  func.func @ops(%w: tensor<8x4xf32>, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<8x4xf32>) {
    // CHECK: %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    // GENERIC: "tp.shard"(%w) <{slice = #tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]>}> : (tensor<8x4xf32>) -> tensor<4x4xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(2, 2), (6, 2)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    // CHECK: %full = tp.unshard %w0, %w1 slices [#tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(2, 2), (6, 2)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    // GENERIC: "tp.unshard"(%w0, %w1) <{slices = [
    %full = tp.unshard %w0, %w1 slices [#tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(2, 2), (6, 2)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 4]> : tensor<2x4xf32> -> tensor<2x4xf32, #tp.chip<0>>
    // CHECK: %p1 = tp.section "partial.c1" on [1] {
    // CHECK-NEXT:   %a = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 4]> : tensor<2x4xf32> -> tensor<2x4xf32, #tp.chip<1>>
    // CHECK-NEXT:   tp.yield %a : tensor<2x4xf32, #tp.chip<1>>
    // CHECK-NEXT: } : tensor<2x4xf32, #tp.chip<1>>
    // GENERIC: "tp.section"() <{chips = array<i64: 1>, label = "partial.c1"}> ({
    %p1 = tp.section "partial.c1" on [1] {
      %a = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 4]> : tensor<2x4xf32> -> tensor<2x4xf32, #tp.chip<1>>
      tp.yield %a : tensor<2x4xf32, #tp.chip<1>>
    } : tensor<2x4xf32, #tp.chip<1>>
    // CHECK: tp.transfer %p1 from 1 to 0 : tensor<2x4xf32, #tp.chip<1>>
    // GENERIC: "tp.transfer"(%p1) <{source = 1 : i64, dest = 0 : i64}> : (tensor<2x4xf32, #tp.chip<1>>) -> ()
    tp.transfer %p1 from 1 to 0 : tensor<2x4xf32, #tp.chip<1>>
    // CHECK: %sum = tp.section "allreduce" on [0, 1] attributes {note = "fold on chip 0"} {
    // CHECK-NEXT:   %s = tp.allreduce %x0, %p1 algorithm "fold" : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    // CHECK-NEXT:   tp.yield %s : tensor<2x4xf32>
    // CHECK-NEXT: } : tensor<2x4xf32>
    // GENERIC: "tp.allreduce"(%x0, %p1) <{algorithm = #tp<allreduce_algorithm "fold">}>
    %sum = tp.section "allreduce" on [0, 1] attributes {note = "fold on chip 0"} {
      %s = tp.allreduce %x0, %p1 algorithm "fold" : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
      tp.yield %s : tensor<2x4xf32>
    } : tensor<2x4xf32>
    // CHECK: tp.transfer %sum from 0 to 1 : tensor<2x4xf32>
    tp.transfer %sum from 0 to 1 : tensor<2x4xf32>
    // CHECK: %ring = tp.allreduce %x0, %p1 algorithm "ring"
    %ring = tp.allreduce %x0, %p1 algorithm "ring" : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    // CHECK: tp.barrier phase 0
    // GENERIC: "tp.barrier"() <{phase = 0 : i64}> : () -> ()
    tp.barrier phase 0
    // CHECK: tp.barrier{{$}}
    tp.barrier
    // CHECK: tp.section on [0] {
    // CHECK-NEXT:   tp.yield
    // CHECK-NEXT: }
    tp.section on [0] {
      tp.yield
    }
    func.return %sum, %full : tensor<2x4xf32>, tensor<8x4xf32>
  }
}
