// Work placed on chips touches only their data: a section on one chip, that chip's (and the
// spine's); a section on several chips is replicated spine work; a chip's program runs its
// own sections and sends and hands out only its chip's data. Relays and links must
// fit: no deadlock, no copy before its send. Each refused case has a sound twin, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// A section on [0, 1] computing on chip 1's tensor: chip 0 would work on data only chip 1 holds.
// CHECK-LABEL: error: %m is on chip 1, but its section runs on chips [0, 1]: replicated spine work [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @replicated_chip_work(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %y = tp.section "y" on [0, 1] {
      %m = arith.mulf %p1, %p1 : tensor<4xf32, #tp.chip<1>>
      tp.yield %m : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %r = tp.allreduce %p0, %y : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.yield %r : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @chip_work
// CHECK: tp.section "y" on [1]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_work(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %y = tp.section "y" on [1] {
      %m = arith.mulf %p1, %p1 : tensor<4xf32, #tp.chip<1>>
      tp.yield %m : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %r = tp.allreduce %p0, %y : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.yield %r : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// Chip 1's program handed chip 0's argument, handing it out again.
// CHECK-LABEL: error: %q holds chip 0's data, but is handed out by chip 1: a chip's program sends and hands out only its own chip's data and the spine [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @foreign_input(%p0: tensor<4xf32, #tp.chip<0>>) -> tensor<8xf32> {
    %a = tp.chip_program on 0 (%p0) {
    ^bb0(%q0: tensor<4xf32, #tp.chip<0>>):
      tp.finish %q0 : tensor<4xf32, #tp.chip<0>>
    } : (tensor<4xf32, #tp.chip<0>>) -> (tensor<4xf32, #tp.chip<0>>)
    %b = tp.chip_program on 1 (%p0) {
    ^bb0(%q: tensor<4xf32, #tp.chip<0>>):
      tp.finish %q : tensor<4xf32, #tp.chip<0>>
    } : (tensor<4xf32, #tp.chip<0>>) -> (tensor<4xf32, #tp.chip<0>>)
    %k = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]>] : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<0>> -> tensor<8xf32>
    func.return %k : tensor<8xf32>
  }
}

// -----
// Chip 1's program running a section "on [0]" over chip 0's tensor it received.
// CHECK-LABEL: error: a section on chips [0] in chip 1's program: a chip's program runs its own work only [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @other_chips_section(%x: tensor<4xf32>) -> () {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %h0 = tp.section "h0" on [0] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
        %m = linalg.add ins(%x0, %x0 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
        tp.yield %m : tensor<4xf32, #tp.chip<0>>
      } : tensor<4xf32, #tp.chip<0>>
      tp.link 1 sends(%h0) as ["h0"] receives [] : (tensor<4xf32, #tp.chip<0>>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %h0 = tp.link 0 sends() as [] receives ["h0"] : () -> tensor<4xf32, #tp.chip<0>>
      %g = tp.section "g" on [0] {
        %y = arith.mulf %h0, %h0 : tensor<4xf32, #tp.chip<0>>
        tp.yield %y : tensor<4xf32, #tp.chip<0>>
      } : tensor<4xf32, #tp.chip<0>>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// Each chip waits, at its link 1, for what the other sends only at its link 2.
// CHECK-LABEL: error: relay deadlock: no chip can move before all have finished; chip 0 stands at halt 1 waiting for b (from chip 1); chip 1 stands at halt 1 waiting for a (from chip 0) [deadlock]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @deadlock(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %b = tp.link 1 sends() as [] receives ["b"] : () -> tensor<4xf32>
      %a = arith.addf %x0, %b : tensor<4xf32>
      tp.link 2 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %a = tp.link 1 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %b = arith.mulf %x1, %a : tensor<4xf32>
      tp.link 2 sends(%b) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
// A relay copying "a" before chip 0 has run to the halt that sends it.
// CHECK-LABEL: error: 'tp.copy' round 0 of "a" from chip 0 before chip 0 has sent it (at its link 1; it stands at halt 0): the relay does not fit the programs [deadlock]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @early_copy(%x: tensor<4xf32>) -> tensor<4xf32> {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    %o = tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish %a : tensor<4xf32>
    } : () -> (tensor<4xf32>)
    tp.relay {
      tp.copy round 0 "a" from 0 to 1
      tp.run_to round 0 chip 1 halt 1
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 0 halt 2
    }
    func.return %o : tensor<4xf32>
  }
}

// -----
// The same relay in the order the host can follow.
// CHECK-LABEL: func.func @relay_in_order
// CHECK: tp.copy round 1 "a" from 0 to 1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @relay_in_order(%x: tensor<4xf32>) -> tensor<4xf32> {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    %o = tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish %a : tensor<4xf32>
    } : () -> (tensor<4xf32>)
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.copy round 1 "a" from 0 to 1
      tp.run_to round 1 chip 1 halt 1
      tp.run_to round 1 chip 0 halt 2
    }
    func.return %o : tensor<4xf32>
  }
}
