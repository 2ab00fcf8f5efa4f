// tp-relay refuses chip programs that do not fit together (check_programs), each at the
// offending op, naming the chips, the buffer and the types; beside each refused case, the
// sound program of the same shape, which tp-relay accepts.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relay | filecheck %s

// Two programs for chip 0: the relay would keep one and silently drop the other. Refused at
// the second.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @two_programs(%x: tensor<4xf32>) -> tensor<4xf32> {
    tp.chip_program on 0 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %c = arith.mulf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
// CHECK-LABEL: error: 'tp.chip_program' on chip 0 is a second program for chip 0; a chip runs one program (the relay would drop one of them) [duplicate-program]
// CHECK-NEXT: %r = tp.chip_program on 0 (%x) {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish %a : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %b = arith.mulf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// The same with the first program on chip 2: chip 0 sends "a" to chips 1 and 2.
// CHECK-LABEL: func.func @two_programs_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 2
// CHECK-NEXT:   tp.run_to round 1 chip 2 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @two_programs_ok(%x: tensor<4xf32>) -> tensor<4xf32> {
    tp.chip_program on 2 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %c = arith.mulf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish %a : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %b = arith.mulf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// "a" sent as tensor<4xf32> and received as tensor<8xf32>: the receiver would compute on a
// tensor of the wrong shape. Refused at the receiving link.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @link_type(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish %a : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 () {
// CHECK-LABEL: error: 'tp.link' 0 on chip 1 receives "a" as tensor<8xf32>, but chip 0 sends it as tensor<4xf32> (at link 1) [link-type]
// CHECK-NEXT: %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<8xf32>
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<8xf32>
      %b = arith.mulf %a, %a : tensor<8xf32>
      tp.finish
    } : () -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @link_type_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @link_type_ok(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish %a : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %b = arith.mulf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return %r : tensor<4xf32>
  }
}

// -----
// Chips 0 and 1 both send "a": chip 2 would get whichever the relay picked. Refused at the
// second send.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @two_senders(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %a = arith.mulf %x1, %x1 : tensor<4xf32>
// CHECK-LABEL: error: 'tp.link' 1 on chip 1 sends "a" (tensor<4xf32>), but chip 0 already sends it at link 1 (tensor<4xf32>): a buffer name is sent once [duplicate-send]
// CHECK-NEXT: tp.link 1 sends(%a) as ["a"] receives []
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 2 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %c = arith.subf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// CHECK-LABEL: func.func @two_senders_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 0 chip 1 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 2
// CHECK-NEXT:   tp.copy round 1 "b" from 1 to 2
// CHECK-NEXT:   tp.run_to round 1 chip 2 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @two_senders_ok(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %a = arith.mulf %x1, %x1 : tensor<4xf32>
      tp.link 1 sends(%a) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 2 () {
      %a, %b = tp.link 0 sends() as [] receives ["a", "b"] : () -> (tensor<4xf32>, tensor<4xf32>)
      %c = arith.subf %a, %b : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// Chip 0 sends "a" twice (at links 1 and 2): which one would chip 1 get? Refused at the
// second.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sent_twice(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      %b = arith.mulf %a, %a : tensor<4xf32>
// CHECK-LABEL: error: 'tp.link' 2 on chip 0 sends "a" (tensor<4xf32>), but chip 0 already sends it at link 1 (tensor<4xf32>): a buffer name is sent once [duplicate-send]
// CHECK-NEXT: tp.link 2 sends(%b) as ["a"] receives []
      tp.link 2 sends(%b) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %c = arith.subf %a, %a : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// CHECK-LABEL: func.func @sent_twice_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.run_to round 2 chip 0 halt 3
// CHECK-NEXT:   tp.copy round 2 "a" from 0 to 1
// CHECK-NEXT:   tp.copy round 2 "b" from 0 to 1
// CHECK-NEXT:   tp.run_to round 2 chip 1 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sent_twice_ok(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      %b = arith.mulf %a, %a : tensor<4xf32>
      tp.link 2 sends(%b) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a, %b = tp.link 0 sends() as [] receives ["a", "b"] : () -> (tensor<4xf32>, tensor<4xf32>)
      %c = arith.subf %a, %b : tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// One link sending one name twice: refused the same way.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sent_twice_at_one_link(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      %b = arith.mulf %a, %a : tensor<4xf32>
// CHECK-LABEL: error: 'tp.link' 1 on chip 0 sends "a" (tensor<4xf32>), but chip 0 already sends it at link 1 (tensor<4xf32>): a buffer name is sent once [duplicate-send]
// CHECK-NEXT: tp.link 1 sends(%a, %b) as ["a", "a"] receives []
      tp.link 1 sends(%a, %b) as ["a", "a"] receives [] : (tensor<4xf32>, tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// CHECK-LABEL: func.func @sent_twice_at_one_link_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sent_twice_at_one_link_ok(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      %b = arith.mulf %a, %a : tensor<4xf32>
      tp.link 1 sends(%a, %b) as ["a", "b"] receives [] : (tensor<4xf32>, tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// Chip 0 receives "a", which it sends itself: the relay would copy from chip 0 to chip 0.
// Refused at the receiving link.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @self_copy(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
// CHECK-LABEL: error: 'tp.link' 2 on chip 0 receives "a" (tensor<4xf32>), which chip 0 sends itself at link 1: a chip cannot receive its own buffer [self-copy]
// CHECK-NEXT: %b = tp.link 2 sends() as [] receives ["a"]
      %b = tp.link 2 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %c = arith.mulf %b, %b : tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %b = arith.subf %a, %a : tensor<4xf32>
      tp.link 1 sends(%b) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// Chip 1 receives "a" and sends "b" back to chip 0.
// CHECK-LABEL: func.func @self_copy_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT:   tp.copy round 2 "b" from 1 to 0
// CHECK-NEXT:   tp.run_to round 2 chip 0 halt 3
// CHECK-NEXT:   tp.run_to round 2 chip 1 halt 2
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @self_copy_ok(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      %b = tp.link 2 sends() as [] receives ["b"] : () -> tensor<4xf32>
      %c = arith.mulf %b, %b : tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      %b = arith.subf %a, %a : tensor<4xf32>
      tp.link 1 sends(%b) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// Chip 1 receives "ghost", which no chip sends: the relay would wait for it forever.
// Refused at the receiving link (not at the relay's first standstill).
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @unsent(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
// CHECK-LABEL: error: 'tp.link' 0 on chip 1 receives "ghost" (tensor<4xf32>), but no chip sends it: the relay would wait for it forever [deadlock]
// CHECK-NEXT: %a = tp.link 0 sends() as [] receives ["ghost"]
      %a = tp.link 0 sends() as [] receives ["ghost"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// CHECK-LABEL: func.func @unsent_ok
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @unsent_ok(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
// A relay copying a buffer from a chip to itself, or naming a chip beyond N, is refused by
// the op verifiers as tp-opt reads the input, before tp-relay runs.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @relay_self_copy(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 1 chip 0 halt 2
// CHECK-LABEL: error: 'tp.copy' of "a" goes from chip 1 to itself
// CHECK-NEXT: tp.copy round 1 "a" from 1 to 1
      tp.copy round 1 "a" from 1 to 1
      tp.run_to round 1 chip 1 halt 1
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @relay_chip_beyond_n(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.relay {
// CHECK-LABEL: error: 'tp.run_to' round 0 halt 1 is on chip 7, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.run_to round 0 chip 7 halt 1
      tp.run_to round 0 chip 7 halt 1
    }
    func.return
  }
}

// -----
// A relay that no longer fits its programs (copying "a" from chip 1, which does not send it;
// running chip 0 to a halt it does not have) is rebuilt, not refused: tp-relay writes the
// relay from the programs, which is how a stale one is refreshed.
// CHECK-LABEL: func.func @stale_relay
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT: }
// CHECK-NOT:  tp.relay
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @stale_relay(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = arith.addf %x0, %x0 : tensor<4xf32>
      tp.link 1 sends(%a) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 () {
      %a = tp.link 0 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 7
      tp.copy round 1 "a" from 1 to 0
    }
    func.return
  }
}
