// A relay whose copy is missing: chip 0 would leave its start halt without "b". Refused
// where the relay is read, located at the step that cannot run (named by the interpreter
// as an internal error once), as `deadlock`; tp-relay rebuilds the relay instead.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s
// RUN: tp-opt %s --split-input-file --tp-relay --tp-verify | filecheck %s --check-prefix=REBUILT

// CHECK-LABEL: error: 'tp.run_to' round 1 runs chip 0 to halt 1 before "b", which it receives at halt 0, was copied to it: the relay does not fit the programs [deadlock]
// CHECK-NEXT: tp.run_to round 1 chip 0 halt 1
// REBUILT-LABEL: tp.relay {
// REBUILT-NEXT:    tp.run_to round 0 chip 1 halt 1
// REBUILT-NEXT:    tp.copy round 1 "b" from 1 to 0
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c = tp.chip_program on 0 () {
      %b = tp.link 0 sends() as [] receives ["b"] : () -> tensor<4xf32>
      %c_1 = tp.section "c" on [0] {
        %0 = arith.mulf %b, %b : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      tp.finish %c_1 : tensor<4xf32>
    } : () -> (tensor<4xf32>)
    tp.chip_program on 1 (%a) {
    ^bb0(%a_1: tensor<4xf32>):
      %b = tp.section "b" on [1] {
        %0 = arith.addf %a_1, %a_1 : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      tp.link 1 sends(%b) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.relay {
      tp.run_to round 0 chip 1 halt 1
      tp.run_to round 1 chip 0 halt 1
      tp.run_to round 1 chip 1 halt 2
    }
    func.return %c : tensor<4xf32>
  }
}
