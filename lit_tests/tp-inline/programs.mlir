// tp-inline at the per-chip stage: programs that call per-chip functions become the flat
// per-chip programs they stand for — each call's body in its place, its links numbered on
// through the program's halts and its buffers named by the call's tag (l_p in the call
// tagged l1_ is l1_p), the functions gone, the relay's repeat unrolled.
// RUN: tp-opt %S/Inputs/programs.mlir --tp-inline | filecheck %s

// CHECK-NOT:  func.func private
// CHECK-LABEL: func.func @decode(
// CHECK:      tp.chip_program on 0
// CHECK:      %p = tp.link 1 sends() as [] receives ["l0_p"]
// CHECK:      %s = tp.section "l0_s" on [0]
// CHECK:      tp.link 2 sends(%s) as ["l0_s"] receives []
// CHECK:      tp.link 3 sends() as [] receives ["l1_p"]
// CHECK:      tp.link 4 sends(%s_1) as ["l1_s"] receives []
// CHECK:      tp.link 6 sends(%s_2) as ["l2_s"] receives []
// CHECK-NEXT: tp.finish %s_2
// CHECK:      tp.chip_program on 1
// CHECK:      tp.link 3 sends(%p_2) as ["l2_p"] receives ["l2_s"]
// CHECK-NOT:  func.call
// CHECK:      tp.relay {
// CHECK-NOT:  tp.relay_repeat
// CHECK:      tp.copy round 5 "l2_p" from 1 to 0
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
