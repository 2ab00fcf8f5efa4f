// tp-legalize on the sections the lowering makes of a collective. The TP-wrapped shim refuses
// a fusion holding a collective's fold (it would lower the all-reduce as a sum on the spine),
// but admits the two sections that ARE the collective, lowered: an all-reduce's own section
// with its fused epilogue (tp-relocate's), and a fold reduced onto one chip (a twoshot's
// reduce-scatter step, tp-transfers'). Any other fusion of a fold or an all-reduce stays
// refused, as does an epilogue on the seed's fold or one holding chip work.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize=shim=sn40l | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize=shim=reference | filecheck %s

// A oneshot all-reduce's section carrying its epilogue (the residual add and more spine
// work on the sum), as tp-relocate{epilogue=true} writes it: admitted.
// CHECK-LABEL: func.func @epilogue
// CHECK:         tp.section "s" on [0, 1] {
// CHECK-NEXT:      tp.allreduce %p0, %p1 algorithm "oneshot"
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      arith.mulf
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @epilogue(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>) -> tensor<1x64xf32> {
    %r, %y = tp.section "s" on [0, 1] {
      %s = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %r_1 = arith.addf %h, %s : tensor<1x64xf32>
      %y_1 = arith.mulf %r_1, %r_1 : tensor<1x64xf32>
      tp.yield %r_1, %y_1 : tensor<1x64xf32>, tensor<1x64xf32>
    } : tensor<1x64xf32>, tensor<1x64xf32>
    func.return %y : tensor<1x64xf32>
  }
}

// -----

// A twoshot's reduce-scatter step over 3 chips: slice 0 of every partial brought to chip 0
// (tp.transfer: a collective, native on the chip), folded there in chip order, one section
// on one chip holding exactly the fold: admitted.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:         tp.transfer %q1 from 1 to 0
// CHECK:         tp.section "s.rs0" on [0] {
// CHECK-NEXT:      linalg.add
// CHECK-NEXT:      linalg.add
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @reduce_scatter(%q0: tensor<1x8xf32, #tp.chip<0>>, %q1: tensor<1x8xf32, #tp.chip<1>>, %q2: tensor<1x8xf32, #tp.chip<2>>) -> tensor<1x8xf32> {
    %z = tensor.empty() : tensor<1x8xf32>
    tp.transfer %q1 from 1 to 0 : tensor<1x8xf32, #tp.chip<1>>
    tp.transfer %q2 from 2 to 0 : tensor<1x8xf32, #tp.chip<2>>
    %s = tp.section "s.rs0" on [0] {
      %a = linalg.add ins(%q0, %q1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      %b = linalg.add ins(%a, %q2 : tensor<1x8xf32>, tensor<1x8xf32, #tp.chip<2>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      tp.yield %b : tensor<1x8xf32>
    } : tensor<1x8xf32>
    func.return %s : tensor<1x8xf32>
  }
}

// -----

// The same fold in a section on every chip: each chip would sum every chip's partial, the
// all-reduce lowered as a sum on the spine.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @spine_fold(%q0: tensor<1x8xf32, #tp.chip<0>>, %q1: tensor<1x8xf32, #tp.chip<1>>, %q2: tensor<1x8xf32, #tp.chip<2>>) -> tensor<1x8xf32> {
    %z = tensor.empty() : tensor<1x8xf32>
// CHECK-LABEL: error: section "s" cannot run on a chip: it would hold a collective's fold: the all-reduce over every chip would be lowered as a sum on the spine [tp(
    %s = tp.section "s" on [0, 1, 2] {
      %a = linalg.add ins(%q0, %q1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      %b = linalg.add ins(%a, %q2 : tensor<1x8xf32>, tensor<1x8xf32, #tp.chip<2>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      tp.yield %b : tensor<1x8xf32>
    } : tensor<1x8xf32>
    func.return %s : tensor<1x8xf32>
  }
}

// -----

// A fold on one chip fused with other work is not the fold alone.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fold_and_more(%q0: tensor<1x8xf32, #tp.chip<0>>, %q1: tensor<1x8xf32, #tp.chip<1>>, %q2: tensor<1x8xf32, #tp.chip<2>>) -> tensor<1x8xf32> {
    %z = tensor.empty() : tensor<1x8xf32>
// CHECK-LABEL: error: section "s" cannot run on a chip: it would hold a collective's fold
    %s = tp.section "s" on [0] {
      %a = linalg.add ins(%q0, %q1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      %b = linalg.add ins(%a, %q2 : tensor<1x8xf32>, tensor<1x8xf32, #tp.chip<2>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      %c = arith.mulf %b, %b : tensor<1x8xf32>
      tp.yield %c : tensor<1x8xf32>
    } : tensor<1x8xf32>
    func.return %s : tensor<1x8xf32>
  }
}

// -----

// Part of a fold on one chip, the rest elsewhere: not the fold reduced onto one chip.
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @part_of_a_fold(%q0: tensor<1x8xf32, #tp.chip<0>>, %q1: tensor<1x8xf32, #tp.chip<1>>, %q2: tensor<1x8xf32, #tp.chip<2>>, %q3: tensor<1x8xf32, #tp.chip<3>>) -> tensor<1x8xf32> {
    %z = tensor.empty() : tensor<1x8xf32>
// CHECK-LABEL: error: section "s" cannot run on a chip: it would hold a collective's fold
    %s = tp.section "s" on [0] {
      %a = linalg.add ins(%q0, %q1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      %b = linalg.add ins(%a, %q2 : tensor<1x8xf32>, tensor<1x8xf32, #tp.chip<2>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      tp.yield %b : tensor<1x8xf32>
    } : tensor<1x8xf32>
    %t = tp.section "t" on [0] {
      %c = linalg.add ins(%s, %q3 : tensor<1x8xf32>, tensor<1x8xf32, #tp.chip<3>>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
      tp.yield %c : tensor<1x8xf32>
    } : tensor<1x8xf32>
    func.return %t : tensor<1x8xf32>
  }
}

// -----

// An all-reduce after other work in one section is no all-reduce's own section.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reduce_inside(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>) -> tensor<1x64xf32> {
// CHECK-LABEL: error: section "s" cannot run on a chip: it would hold a collective's fold
    %r = tp.section "s" on [0, 1] {
      %g = arith.mulf %h, %h : tensor<1x64xf32>
      %s = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %r_1 = arith.addf %g, %s : tensor<1x64xf32>
      tp.yield %r_1 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    func.return %r : tensor<1x64xf32>
  }
}

// -----

// The seed's fold sums on chip 0: it carries no epilogue.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @fold_epilogue(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>) -> tensor<1x64xf32> {
// CHECK-LABEL: error: section "s" cannot run on a chip: an epilogue needs the sum on every chip; a 'fold' all-reduce sums on chip 0 [tp(
    %r = tp.section "s" on [0, 1] {
      %s = tp.allreduce %p0, %p1 : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %r_1 = arith.addf %h, %s : tensor<1x64xf32>
      tp.yield %r_1 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    func.return %r : tensor<1x64xf32>
  }
}

// -----

// An epilogue is spine work: one chip's work on the sum is not.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_epilogue(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>) -> tensor<1x32xf32, #tp.chip<0>> {
// CHECK-LABEL: error: section "s" cannot run on a chip: an epilogue is spine work: it runs on every chip, on the sum [tp(
    %t = tp.section "s" on [0, 1] {
      %s = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %t_1 = tp.shard %s at #tp.slice<axis = 1, ranges = [(0, 32)], full = [1, 64]> : tensor<1x64xf32> -> tensor<1x32xf32, #tp.chip<0>>
      tp.yield %t_1 : tensor<1x32xf32, #tp.chip<0>>
    } : tensor<1x32xf32, #tp.chip<0>>
    func.return %t : tensor<1x32xf32, #tp.chip<0>>
  }
}

// -----

// An epilogue holds no second collective.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @two_reduces(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>) -> tensor<1x64xf32> {
// CHECK-LABEL: error: section "s" cannot run on a chip: an epilogue holds no collective and no host store [tp(
    %u = tp.section "s" on [0, 1] {
      %s = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %u_1 = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %v = arith.addf %s, %u_1 : tensor<1x64xf32>
      tp.yield %v : tensor<1x64xf32>
    } : tensor<1x64xf32>
    func.return %u : tensor<1x64xf32>
  }
}
