// Ring folds: a left fold of adds over every chip once, in a cyclic rotation of chip order
// (s+1, ..., N-1, 0, ..., s: how a ring's reduce-scatter adds slice s), is an all-reduce, as a
// fold in chip order is; tp-raise-allreduce leaves it a fold (a tp.allreduce adds in chip
// order: raising it would change how the sum rounds). Any other order, a chip twice or
// missing, spine data, or a partial sum read elsewhere — on the chip it is computed on or on
// the chip a transfer copies it to — is refused, at the fold's last add.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-raise-allreduce | filecheck %s --check-prefix=RAISE

// Chips 1, 2, 0: certified, not raised.
// CHECK-LABEL: builtin.module attributes {tp.chips = 3 : i64, tp.certificate
// CHECK: func.func @rotated
// RAISE-LABEL: func.func @rotated
// RAISE-NOT:   tp.allreduce
// RAISE:       %s = linalg.add ins(%s1, %p0
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @rotated(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p1, %p2 : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Its twin in chip order: certified, and raised into one tp.allreduce.
// CHECK-LABEL: builtin.module attributes {tp.chips = 3 : i64, tp.certificate
// CHECK: func.func @in_order
// RAISE-LABEL: func.func @in_order
// RAISE:       %s = tp.allreduce %p0, %p1, %p2
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @in_order(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Chips 0, 2, 1: every chip once, but no rotation of chip order.
// CHECK-LABEL: error: fold of adds into %s over partials on chips [0, 2, 1] is out of chip order [0, 2, 1]: an all-reduce needs one partial per chip 0..2, in chip order or a cyclic rotation of it [fold-not-allreduce]
// CHECK-NEXT: %s = linalg.add ins(%s1, %p1
// RAISE-LABEL: func.func @permuted
// RAISE-NOT:   tp.allreduce
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @permuted(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p2 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Chips 1, 2, 1: a rotation's start, then a chip again in place of chip 0.
// CHECK-LABEL: error: fold of adds into %s over partials on chips [1, 2, 1] repeats chip 1 and misses chip 0: an all-reduce needs one partial per chip 0..2, in chip order or a cyclic rotation of it [fold-not-allreduce]
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @twice(%p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>, %q1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p1, %p2 : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %q1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Chips 2, 0, 1 with spine data added in between.
// CHECK-LABEL: error: fold of adds into %s adds spine value %x to chip partials: an all-reduce sums one partial per chip and nothing else [fold-mixes-spine]
// CHECK-NEXT: %s = linalg.add ins(%s2, %p1
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @spine(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p2, %x : tensor<4xf32, #tp.chip<2>>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s2 = linalg.add ins(%s1, %p0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s2, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Chips 2, 0 so far, the partial sum also read by a multiply: it lacks chip 1.
// CHECK-LABEL: error: fold of adds: the partial sum %s1 of chips [2, 0] is also read by 'arith.mulf', which sees a sum missing chip 1: only the next add of a fold may read its partial sums [fold-not-allreduce]
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @escape(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p2, %p0 : tensor<4xf32, #tp.chip<2>>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %m = arith.mulf %s1, %s1 : tensor<4xf32>
    func.return %s, %m : tensor<4xf32>, tensor<4xf32>
  }
}

// -----
// As a ring runs it: one add a section, on the chip whose partial it adds, the sum so far
// copied to the next chip. Certified: a copy moves no data into the spine.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// CHECK: func.func @sectioned
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sectioned(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    tp.transfer %p1 from 1 to 0 : tensor<4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0] {
      %a = linalg.add ins(%p1, %p0 : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    tp.transfer %s from 0 to 1 : tensor<4xf32>
    %o = tp.section "o" on [0, 1] {
      %b = arith.addf %s, %s : tensor<4xf32>
      tp.yield %b : tensor<4xf32>
    } : tensor<4xf32>
    func.return %o : tensor<4xf32>
  }
}

// -----
// Three chips as a ring runs them: the sum so far of chips 1 and 2 goes from chip 2 to
// chip 0, which adds its own; but chip 0 also reads the copy it received otherwise.
// CHECK-LABEL: error: fold of adds: the partial sum %s1 of chips [1, 2] is also read by 'arith.mulf', which sees a sum missing chip 0: only the next add of a fold may read its partial sums [fold-not-allreduce]
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @copy_escapes(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    tp.transfer %p1 from 1 to 2 : tensor<4xf32, #tp.chip<1>>
    %s1 = tp.section "s1" on [2] {
      %a = linalg.add ins(%p1, %p2 : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    tp.transfer %s1 from 2 to 0 : tensor<4xf32>
    %s, %m = tp.section "s" on [0] {
      %b = linalg.add ins(%s1, %p0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      %c = arith.mulf %s1, %s1 : tensor<4xf32>
      tp.yield %b, %c : tensor<4xf32>, tensor<4xf32>
    } : tensor<4xf32>, tensor<4xf32>
    func.return %s, %m : tensor<4xf32>, tensor<4xf32>
  }
}
