// tp-relay over per-chip programs calling per-chip functions (tp-link-points on an outlined
// program): the schedule is the flat programs', its repeated block of rounds written once as
// a tp.relay_repeat; a function's links, a call's tags and a program's numbering through its
// calls are checked first, each refusal at the offending op.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relay | filecheck %s

// Three calls of one per-chip function pair: the relay is one layer's rounds, written once
// as a repeat (time i: rounds + 2i, chip 0's halts + 2i, chip 1's + i, buffers of call tag i).
// CHECK-LABEL: func.func @decode
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 0 chip 1 halt 1
// CHECK-NEXT:   tp.relay_repeat 3 times every 2 rounds strides array<i64: 2, 1> tags ["l0_", "l1_", "l2_"] {
// CHECK-NEXT:     tp.copy round 1 "l0_p" from 1 to 0
// CHECK-NEXT:     tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:     tp.run_to round 2 chip 0 halt 3
// CHECK-NEXT:     tp.copy round 2 "l0_s" from 0 to 1
// CHECK-NEXT:     tp.run_to round 2 chip 1 halt 2
// CHECK-NEXT:   }
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// A per-chip function's links count from 1 in order: link 2 first is refused at it.
// CHECK-LABEL: error: 'tp.link' 2 is link 1 of per-chip function @layer.chip1: a function's links are numbered 1, 2, … in order [not-linkable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 2 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// Calls without tags would send every call's buffer under one name: refused as a buffer
// sent twice.
// CHECK-LABEL: error: 'tp.link' 2 of @layer.chip0 (an untagged call: chip 0's halt 4) sends "l_s" (tensor<4xf32>), but chip 0 already sends it at link 2 (tensor<4xf32>): a buffer name is sent once [duplicate-send]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// A program's own link after a call counts on from the call's halts: numbered within them,
// it is refused.
// CHECK-LABEL: error: 'tp.link' 2 on chip 1 comes after halt 3 (a call's links count on from the halt before the call): number it 4 or later [not-linkable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.link 2 sends() as [] receives [] : () -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// A per-chip function is called by its chip's program only: a call from the host is refused.
// CHECK-LABEL: error: 'func.call' of @layer.chip0, chip 0's per-chip function, outside a chip's program: only chip 0's program calls it, as one of its statements [not-linkable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    %z = func.call @layer.chip0(%x) {tp.tag = "l9_"} : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// ...and so is a call from another chip's program (its sections are chip 1's)...
// CHECK-LABEL: error: chip 0's program calls @layer.chip1, chip 1's per-chip function: a chip runs its own part of a function [not-linkable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// ...and one inside a section, where its links would halt nothing.
// CHECK-LABEL: error: 'func.call' of @layer.chip0, chip 0's per-chip function, outside a chip's program: only chip 0's program calls it, as one of its statements [not-linkable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = func.call @layer.chip0(%x) {tp.tag = "l7_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %r : tensor<4xf32>
  }
}
