// epilogue=true: an all-reduce whose sum lands on every chip (oneshot, ring, twoshot) takes
// into its section the spine work after it that reads the sum (a residual add, an RMSNorm),
// moving it ahead of statements it does not depend on; what only the fused work reads (here
// the sum) is not yielded: it stays on chip, not stored and re-read.
// Work that reads a value computed in between stays out, as does one chip's work on the
// sum; the seed's fold sums on chip 0 alone and keeps no epilogue. tp-transfers carries a
// twoshot's epilogue into its all-gather.
// RUN: tp-opt %s --split-input-file --tp-relocate="allreduce=oneshot epilogue=true shim=sn40l" | filecheck %s
// RUN: tp-opt %s --split-input-file --tp-relocate="allreduce=fold epilogue=true" | filecheck %s --check-prefix=FOLD
// RUN: tp-opt %S/Inputs/epilogue.twoshot.mlir --split-input-file --tp-transfers | filecheck %s --check-prefix=TWOSHOT
// RUN: not tp-opt %s --split-input-file --tp-relocate="allreduce=oneshot epilogue=true shim=nosuch" 2>&1 | filecheck %s --check-prefix=BADSHIM

// CHECK-LABEL: func.func @residual
// CHECK:         %r, %y = tp.section "s" on [0, 1] {
// CHECK-NEXT:      %s = tp.allreduce %p0, %p1 algorithm "oneshot"
// CHECK-NEXT:      %r_1 = arith.addf %h, %s
// CHECK-NEXT:      %y_1 = arith.mulf %r_1, %r_1
// CHECK-NEXT:      tp.yield %r_1, %y_1
// CHECK:         %other = tp.section "other" on [0, 1]
// CHECK:         %z = tp.section "z" on [0, 1]
// CHECK-NEXT:      arith.addf %y, %other
// FOLD-LABEL: func.func @residual
// FOLD:         %s = tp.section "s" on [0, 1] {
// FOLD-NEXT:      tp.allreduce %p0, %p1 algorithm "fold"
// FOLD-NEXT:      tp.yield
// FOLD:         %r = tp.section "r" on [0, 1]
// TWOSHOT-LABEL: func.func @residual
// TWOSHOT:         tp.transfer %s_rs1 from 1 to 0
// TWOSHOT-NEXT:    %r, %y = tp.section "s" on [0, 1] {
// TWOSHOT-NEXT:      %s = tensor.concat dim(1) %s_rs0, %s_rs1
// TWOSHOT-NEXT:      %r_1 = arith.addf %h, %s
// TWOSHOT-NEXT:      %y_1 = arith.mulf %r_1, %r_1
// TWOSHOT-NEXT:      tp.yield %r_1, %y_1
// BADSHIM: error: bad pass pipeline 'tp-relocate{allreduce=oneshot epilogue=true shim=nosuch}': Incompatible types: given ('nosuch',), expected typing.Literal['reference', 'sn40l', 'sn40l-int8']
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @residual(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>, %g: tensor<1x64xf32>) -> (tensor<1x64xf32>, tensor<1x64xf32>) {
    %s = tp.allreduce %p0, %p1 : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
    %other = arith.mulf %g, %g : tensor<1x64xf32>
    %r = arith.addf %h, %s : tensor<1x64xf32>
    %y = arith.mulf %r, %r : tensor<1x64xf32>
    %z = arith.addf %y, %other : tensor<1x64xf32>
    func.return %r, %z : tensor<1x64xf32>, tensor<1x64xf32>
  }
}

// -----

// One chip's work on the sum is no epilogue: it runs on chip 0 alone.
// CHECK-LABEL: func.func @chip_work
// CHECK:         %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:      tp.allreduce
// CHECK-NEXT:      tp.yield
// CHECK:         %t = tp.section "t" on [0] {
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_work(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>) -> tensor<1x32xf32, #tp.chip<0>> {
    %s = tp.allreduce %p0, %p1 : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
    %t = tp.shard %s at #tp.slice<axis = 1, ranges = [(0, 32)], full = [1, 64]> : tensor<1x64xf32> -> tensor<1x32xf32, #tp.chip<0>>
    func.return %t : tensor<1x32xf32, #tp.chip<0>>
  }
}
