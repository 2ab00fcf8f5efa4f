// N is a number the input states, not work it asks for: checks do nothing per chip of the
// grid, work placed on the chips a program names costs nothing per chip of the grid, and
// work written for every chip is bounded: a replicated statement's section (tp-relocate,
// tp-fuse) is refused at the statement, a program per chip (tp-link-points) at the module,
// above 1024 chips, naming tp.chips. tests/test_robust_opt.py runs these under a memory and
// a time limit.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s --check-prefix=VERIFY
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-raise-allreduce | filecheck %s --check-prefix=RAISE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize | filecheck %s --check-prefix=LEGALIZE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-fuse | filecheck %s --check-prefix=FUSE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate=allreduce=ring | filecheck %s --check-prefix=RELOCATE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-transfers --tp-phase | filecheck %s --check-prefix=PHASE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-link-points | filecheck %s --check-prefix=LINK

// A fold of two partials in a grid of 2**31 chips: not an all-reduce, named without listing
// the chips it misses (the checks built range(N) before: 24 GB).
// VERIFY-LABEL: error: fold of adds into %s over partials on chips [0, 1] misses chip 2..2147483647: an all-reduce needs one partial per chip 0..2147483647, in chip order or a cyclic rotation of it [fold-not-allreduce]
// RAISE-LABEL: func.func @fold
// RAISE-NEXT:    tensor.empty
// RAISE-NEXT:    linalg.add
// LEGALIZE-LABEL: func.func @fold
// FUSE-LABEL: func.func @fold
// RELOCATE-LABEL: error: fold of adds into %s over partials on chips [0, 1] misses chip 2..2147483647
// PHASE-LABEL: error: 'linalg.add' is not in a tp.section: run tp-relocate before placing transfers [not-sectioned]
// LINK-LABEL: error: tp.chips = 2147483648: tp-link-points writes a program for every chip and lowers at most 1024 chips
// LINK-NEXT: builtin.module attributes {tp.chips = 2147483648 : i64} {
builtin.module attributes {tp.chips = 2147483648 : i64} {
  func.func @fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// One replicated statement in a grid of 65536 chips (tp-link-points ran past 30 s before).
// VERIFY-LABEL: tp.chips = 65536 : i64, tp.certificate
// VERIFY-NEXT: func.func @one_statement
// RAISE-LABEL: func.func @one_statement
// LEGALIZE-LABEL: func.func @one_statement
// FUSE-LABEL: error: 'arith.addf' runs on every chip: tp-fuse lists every chip of a replicated statement's section, for at most 1024 chips (the module states tp.chips = 65536)
// FUSE-NEXT: %s = arith.addf %a, %a
// RELOCATE-LABEL: error: 'arith.addf' runs on every chip: tp-relocate lists every chip of a replicated statement's section, for at most 1024 chips (the module states tp.chips = 65536)
// RELOCATE-NEXT: %s = arith.addf %a, %a
// PHASE-LABEL: error: 'arith.addf' is not in a tp.section
// LINK-LABEL: error: tp.chips = 65536: tp-link-points writes a program for every chip and lowers at most 1024 chips
builtin.module attributes {tp.chips = 65536 : i64} {
  func.func @one_statement(%a: tensor<4xf32>) -> tensor<4xf32> {
    %s = arith.addf %a, %a : tensor<4xf32>
    %t = arith.mulf %s, %s : tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// Work on the chips a program names, in a grid of 2**31: placed, transferred and phased
// without a list of every chip (tp-relocate raised a MemoryError on this before).
// VERIFY-LABEL: error: result #0 %c on chip 5 is chip 5's data
// RAISE-LABEL: func.func @on_two_chips
// LEGALIZE-LABEL: func.func @on_two_chips
// FUSE-LABEL: func.func @on_two_chips
// FUSE-NEXT:     %c = tp.section "c" on [5] {
// RELOCATE-LABEL: func.func @on_two_chips
// RELOCATE:       %b = tp.section "b" on [5] {
// RELOCATE:       %c = tp.section "c" on [5] {
// PHASE-LABEL: error: 'arith.addf' is not in a tp.section
// LINK-LABEL: error: tp.chips = 2147483648: tp-link-points writes a program for every chip
builtin.module attributes {tp.chips = 2147483648 : i64} {
  func.func @on_two_chips(%a: tensor<4xf32, #tp.chip<5>>) -> tensor<4xf32, #tp.chip<5>> {
    %b = arith.addf %a, %a : tensor<4xf32, #tp.chip<5>>
    %c = arith.mulf %b, %b : tensor<4xf32, #tp.chip<5>>
    func.return %c : tensor<4xf32, #tp.chip<5>>
  }
}

// -----
// Sections on the chips a program uses, in a grid of 2**62: transfers and phases do work
// for those chips only.
// VERIFY-LABEL: tp.chips = 4611686018427387904 : i64, tp.certificate
// VERIFY-NEXT: func.func @sectioned
// PHASE-LABEL: func.func @sectioned
// PHASE:         tp.transfer %s from 7 to 3
// PHASE:         tp.barrier phase 1
// LINK-LABEL: error: tp.chips = 4611686018427387904: tp-link-points writes a program for every chip and lowers at most 1024 chips
builtin.module attributes {tp.chips = 4611686018427387904 : i64} {
  func.func @sectioned(%a: tensor<4xf32>) -> tensor<4xf32> {
    %s = tp.section "s" on [7] {
      %0 = arith.addf %a, %a : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %u = tp.section "u" on [3] {
      %0 = arith.mulf %s, %s : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %u : tensor<4xf32>
  }
}
