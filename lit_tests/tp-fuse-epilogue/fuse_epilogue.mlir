// tp-fuse-epilogue on a sectioned program (tp-relocate's output, checked in): an all-reduce
// section whose sum lands on every chip (oneshot) takes in the spine sections after it that
// read the sum, moving them ahead of a section they do not depend on (%other); what only
// the fused work reads (the sum) is no longer yielded. A fold sums on chip 0 alone and keeps
// no epilogue; one chip's work on the sum is no epilogue.
// RUN: tp-opt %s --split-input-file --tp-fuse-epilogue=shim=sn40l | filecheck %s
// RUN: not tp-opt %s --tp-fuse-epilogue=shim=nosuch 2>&1 | filecheck %s --check-prefix=BADSHIM

// CHECK-LABEL: func.func @residual
// CHECK:         %r, %y = tp.section "s" on [0, 1] {
// CHECK-NEXT:      %s = tp.allreduce %p0, %p1 algorithm "oneshot"
// CHECK-NEXT:      %r_1 = arith.addf %h, %s
// CHECK-NEXT:      %y_1 = arith.mulf %r_1, %r_1
// CHECK-NEXT:      tp.yield %r_1, %y_1
// CHECK:         %other = tp.section "other" on [0, 1]
// CHECK:         %z = tp.section "z" on [0, 1]
// CHECK-NEXT:      arith.addf %y, %other
// BADSHIM: error: bad pass pipeline 'tp-fuse-epilogue{shim=nosuch}': Incompatible types: given ('nosuch',), expected typing.Literal['reference', 'sn40l', 'sn40l-int8']
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @residual(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>, %g: tensor<1x64xf32>) -> (tensor<1x64xf32>, tensor<1x64xf32>) {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      tp.yield %0 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %other = tp.section "other" on [0, 1] {
      %1 = arith.mulf %g, %g : tensor<1x64xf32>
      tp.yield %1 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %r = tp.section "r" on [0, 1] {
      %2 = arith.addf %h, %s : tensor<1x64xf32>
      tp.yield %2 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %y = tp.section "y" on [0, 1] {
      %3 = arith.mulf %r, %r : tensor<1x64xf32>
      tp.yield %3 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %z = tp.section "z" on [0, 1] {
      %4 = arith.addf %y, %other : tensor<1x64xf32>
      tp.yield %4 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    func.return %r, %z : tensor<1x64xf32>, tensor<1x64xf32>
  }
}

// -----

// CHECK-LABEL: func.func @fold
// CHECK:         %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:      tp.allreduce %p0, %p1 algorithm "fold"
// CHECK-NEXT:      tp.yield
// CHECK:         %r = tp.section "r" on [0, 1]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @fold(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>) -> tensor<1x64xf32> {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "fold" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      tp.yield %0 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %r = tp.section "r" on [0, 1] {
      %1 = arith.addf %h, %s : tensor<1x64xf32>
      tp.yield %1 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    func.return %r : tensor<1x64xf32>
  }
}

// -----

// One chip's work on the sum is no epilogue: it stays on chip 0 alone.
// CHECK-LABEL: func.func @chip_work
// CHECK:         %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:      tp.allreduce
// CHECK-NEXT:      tp.yield
// CHECK:         %t = tp.section "t" on [0] {
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_work(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>) -> tensor<1x32xf32, #tp.chip<0>> {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      tp.yield %0 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %t = tp.section "t" on [0] {
      %1 = tp.shard %s at #tp.slice<axis = 1, ranges = [(0, 32)], full = [1, 64]> : tensor<1x64xf32> -> tensor<1x32xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x32xf32, #tp.chip<0>>
    } : tensor<1x32xf32, #tp.chip<0>>
    func.return %t : tensor<1x32xf32, #tp.chip<0>>
  }
}
