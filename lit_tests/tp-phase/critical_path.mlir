// tp-phase's order where the dependencies leave a choice: chip 0 forwards %x to chip 1 (read
// there by %u) and runs two 1024x1024 products (%h0, then %g0); chip 1 runs two of its own.
// Source order (the seed's) gives chip 0's first phases to %x and its transfer while chip 1
// runs %h1 ahead, so %h0 and %g0 each take a phase of their own: three phases as long as a
// product (7.5 us each on sn40l). The critical path (the default) runs the products in step,
// two long phases, and the forwarding after them: one phase more, each short.
// RUN: tp-opt %s --tp-phase | filecheck %s
// RUN: tp-opt %s --tp-phase=order=source | filecheck %s --check-prefix=SOURCE
// RUN: tp-opt %s '--tp-phase=machine="%S/Inputs/slow_link.json"' | filecheck %s --check-prefix=SLOWLINK

// CHECK-LABEL: func.func @forwarding
// CHECK:      %h0 = tp.section "h0" on [0] attributes {tp.phase = 0 : i64}
// CHECK:      %h1 = tp.section "h1" on [1] attributes {tp.phase = 0 : i64}
// CHECK:      %g0 = tp.section "g0" on [0] attributes {tp.phase = 1 : i64}
// CHECK:      %g1 = tp.section "g1" on [1] attributes {tp.phase = 1 : i64}
// CHECK:      %x = tp.section "x" on [0] attributes {tp.phase = 2 : i64}
// CHECK:      tp.transfer %x from 0 to 1 {tp.phase = 3 : i64}
// CHECK:      %u = tp.section "u" on [1] attributes {tp.phase = 4 : i64}
// CHECK:      tp.barrier phase 4

// SOURCE-LABEL: func.func @forwarding
// SOURCE:      %x = tp.section "x" on [0] attributes {tp.phase = 0 : i64}
// SOURCE:      %h1 = tp.section "h1" on [1] attributes {tp.phase = 0 : i64}
// SOURCE:      tp.transfer %x from 0 to 1 {tp.phase = 1 : i64}
// SOURCE:      %u = tp.section "u" on [1] attributes {tp.phase = 2 : i64}
// SOURCE:      %h0 = tp.section "h0" on [0] attributes {tp.phase = 2 : i64}
// SOURCE:      %g0 = tp.section "g0" on [0] attributes {tp.phase = 3 : i64}
// SOURCE:      %g1 = tp.section "g1" on [1] attributes {tp.phase = 3 : i64}
// SOURCE:      tp.barrier phase 3
// The critical path is timed on the machine: with 1 s links the crossing is the long way to
// go, so %x, its transfer and %u come first, the products after.
// SLOWLINK-LABEL: func.func @forwarding
// SLOWLINK:      %x = tp.section "x" on [0] attributes {tp.phase = 0 : i64}
// SLOWLINK:      tp.transfer %x from 0 to 1 {tp.phase = 1 : i64}
// SLOWLINK:      %u = tp.section "u" on [1] attributes {tp.phase = 2 : i64}
// SLOWLINK:      %g0 = tp.section "g0" on [0] attributes {tp.phase = 3 : i64}

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @forwarding(%x0: tensor<1x4xf32>, %a0: tensor<1024x1024xf32, #tp.chip<0>>, %a1: tensor<1024x1024xf32, #tp.chip<1>>) {
    %x = tp.section "x" on [0] {
      %0 = arith.mulf %x0, %x0 : tensor<1x4xf32>
      tp.yield %0 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    tp.transfer %x from 0 to 1 : tensor<1x4xf32>
    %u = tp.section "u" on [1] {
      %1 = arith.mulf %x, %x : tensor<1x4xf32>
      tp.yield %1 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %h0 = tp.section "h0" on [0] {
      %2 = arith.mulf %a0, %a0 : tensor<1024x1024xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1024x1024xf32, #tp.chip<0>>
    } : tensor<1024x1024xf32, #tp.chip<0>>
    %h1 = tp.section "h1" on [1] {
      %3 = arith.mulf %a1, %a1 : tensor<1024x1024xf32, #tp.chip<1>>
      tp.yield %3 : tensor<1024x1024xf32, #tp.chip<1>>
    } : tensor<1024x1024xf32, #tp.chip<1>>
    %g0 = tp.section "g0" on [0] {
      %4 = arith.mulf %h0, %h0 : tensor<1024x1024xf32, #tp.chip<0>>
      tp.yield %4 : tensor<1024x1024xf32, #tp.chip<0>>
    } : tensor<1024x1024xf32, #tp.chip<0>>
    %g1 = tp.section "g1" on [1] {
      %5 = arith.mulf %h1, %h1 : tensor<1024x1024xf32, #tp.chip<1>>
      tp.yield %5 : tensor<1024x1024xf32, #tp.chip<1>>
    } : tensor<1024x1024xf32, #tp.chip<1>>
    func.return
  }
}
