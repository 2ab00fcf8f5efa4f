// Every verifier message of the per-chip program ops: tp.chip_program, tp.finish, tp.link,
// tp.relay, tp.relay_repeat, tp.run_to and tp.copy.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
// CHECK-LABEL: error: 'tp.chip_program' program is on chip 2, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.chip_program on 2 () {
    tp.chip_program on 2 () {
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.chip_program' on chip 0: block arguments must match its inputs
// CHECK-NEXT: tp.chip_program on 0 (%x) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<8xf32>):
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.chip_program' on chip 1 must end with 'tp.finish'
// CHECK-NEXT: tp.chip_program on 1 (%x) {
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y = arith.addf %x1, %x1 : tensor<4xf32>
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.chip_program' on chip 0: 'tp.finish' values must match its results
// CHECK-NEXT: %r = tp.chip_program on 0 (%x) {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.finish %x0 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<8xf32>)
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.chip_program' on chip 0: link points [2, 1] must be numbered in increasing program order
// CHECK-NEXT: tp.chip_program on 0 (%x) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.link 2 sends(%x0) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.link 1 sends(%x0) as ["b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
// CHECK-LABEL: error: 'tp.link' 1 sends 1 values under 2 names
// CHECK-NEXT: tp.link 1 sends(%x0) as ["a", "b"]
      tp.link 1 sends(%x0) as ["a", "b"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.chip_program on 1 () {
// CHECK-LABEL: error: 'tp.link' 1 receives 2 names into 1 results
// CHECK-NEXT: %a = tp.link 1 sends() as [] receives ["a", "b"]
      %a = tp.link 1 sends() as [] receives ["a", "b"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
// CHECK-LABEL: error: 'tp.link' 0 is the start: it receives, it cannot send
// CHECK-NEXT: tp.link 0 sends(%x0) as ["a"]
      tp.link 0 sends(%x0) as ["a"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.chip_program on 1 () {
// CHECK-LABEL: error: 'tp.link' -1 is negative: halts count from 0
// CHECK-NEXT: %a = tp.link -1 sends() as [] receives ["a"]
      %a = tp.link -1 sends() as [] receives ["a"] : () -> tensor<4xf32>
      tp.finish
    } : () -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.run_to' round 0 halt 1 is on chip 7, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.run_to round 0 chip 7 halt 1
      tp.run_to round 0 chip 7 halt 1
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.run_to' round -1 is negative
// CHECK-NEXT: tp.run_to round -1 chip 0 halt 1
      tp.run_to round -1 chip 0 halt 1
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.run_to' round 0 runs chip 1 to halt 0: a chip is run to a halt after its start (1 or more)
// CHECK-NEXT: tp.run_to round 0 chip 1 halt 0
      tp.run_to round 0 chip 1 halt 0
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.copy' source of "x" is on chip 5, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.copy round 1 "x" from 5 to 0
      tp.copy round 1 "x" from 5 to 0
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.copy' destination of "x" is on chip 2, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.copy round 1 "x" from 0 to 2
      tp.copy round 1 "x" from 0 to 2
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.copy' source of "x" is on chip 5, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.copy round 1 "x" from 5 to 5
      tp.copy round 1 "x" from 5 to 5
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.copy' of "x" goes from chip 1 to itself
// CHECK-NEXT: tp.copy round 1 "x" from 1 to 1
      tp.copy round 1 "x" from 1 to 1
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.copy' round -2 is negative
// CHECK-NEXT: tp.copy round -2 "x" from 0 to 1
      tp.copy round -2 "x" from 0 to 1
    }
    func.return
  }
}

// -----
// A program starts from the host's inputs: an input computed elsewhere is refused.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @computed_input(%x: tensor<4xf32>) -> () {
    %y = arith.addf %x, %x : tensor<4xf32>
// CHECK-LABEL: error: 'tp.chip_program' on chip 0: input #0 is not an argument of its function (a program starts from the host's inputs; anything computed reaches it through a tp.link)
    tp.chip_program on 0 (%y) {
    ^bb0(%y0: tensor<4xf32>):
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}

// -----
// Chip programs are statements of a function.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @nested(%c: i1, %x: tensor<4xf32>) -> () {
    scf.if %c {
// CHECK-LABEL: error: 'tp.chip_program' expects parent op 'func.func'
      tp.chip_program on 0 () {
        tp.finish
      } : () -> ()
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.relay' holds only 'tp.run_to', 'tp.copy' and 'tp.relay_repeat' steps, not 'arith.addf'
// CHECK-NEXT: tp.relay {
    tp.relay {
      %y = arith.addf %x, %x : tensor<4xf32>
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.relay' expects parent op 'func.func'
// CHECK-NEXT: tp.relay {
  tp.relay {
    tp.run_to round 0 chip 0 halt 1
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.finish' expects parent op 'tp.chip_program'
// CHECK-NEXT: tp.finish
  tp.finish
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' 3 times lists 2 call tags: it runs at most once per tag
// CHECK-NEXT: tp.relay_repeat 3 times
      tp.relay_repeat 3 times every 1 rounds strides array<i64: 1, 1> tags ["l0_", "l1_"] {
        tp.run_to round 0 chip 0 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' 2 times every 0 rounds: both must be at least 1
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 0 rounds strides array<i64: 1, 1> tags ["l0_", "l1_"] {
        tp.run_to round 0 chip 0 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' lists a call tag twice
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 1 rounds strides array<i64: 1, 1> tags ["l0_", "l0_"] {
        tp.run_to round 0 chip 0 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' gives 1 strides for 2 chips: one halt stride per chip
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 1 rounds strides array<i64: 1> tags ["l0_", "l1_"] {
        tp.run_to round 0 chip 1 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' copies "l1_x" of call tag 'l1_' 2 times, past its last tag
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 1 rounds strides array<i64: 1, 1> tags ["l0_", "l1_"] {
        tp.copy round 0 "l1_x" from 0 to 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
      tp.relay_repeat 2 times every 1 rounds strides array<i64: 1, 1> tags ["l0_", "l1_"] {
// CHECK-LABEL: error: 'tp.relay_repeat' holds only 'tp.run_to' and 'tp.copy' steps, not 'tp.relay_repeat'
        tp.relay_repeat 1 times every 1 rounds strides array<i64: 1, 1> tags ["l0_"] {
          tp.run_to round 0 chip 0 halt 1
        }
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.link' 1 in @g, which is not a per-chip function: a link halts a chip's program or a function marked tp.chip that chip's program calls
  func.func private @g() {
    tp.link 1 sends() as [] receives [] : () -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.link' 0 in @g: a per-chip function's links count from 1 (only a program has a start)
  func.func private @g() attributes {tp.chip = 0 : i64} {
    tp.link 0 sends() as [] receives [] : () -> ()
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.relay_repeat' expects parent op 'tp.relay'
  func.func @f() {
    tp.relay_repeat 1 times every 1 rounds strides array<i64: 1, 1> tags ["l0_"] {
      tp.run_to round 0 chip 0 halt 1
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' strides are f32, not i64 halt counts
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 1 rounds strides array<f32: 4.5, 2.0> tags ["l0_", "l1_"] {
        tp.run_to round 0 chip 0 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' strides are halts moved on: none negative
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 1 rounds strides array<i64: -4, 2> tags ["l0_", "l1_"] {
        tp.run_to round 0 chip 0 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' every 1 rounds holds rounds 0 to 1: each time must come after the one before
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 1 rounds strides array<i64: 1, 1> tags ["l0_", "l1_"] {
        tp.run_to round 0 chip 0 halt 1
        tp.run_to round 1 chip 1 halt 1
      }
    }
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f() {
    tp.relay {
// CHECK-LABEL: error: 'tp.relay_repeat' 2 times every 4611686018427387904 rounds runs past the largest round or halt an i64 holds
// CHECK-NEXT: tp.relay_repeat 2 times
      tp.relay_repeat 2 times every 4611686018427387904 rounds strides array<i64: 1, 1> tags ["l0_", "l1_"] {
        tp.run_to round 4611686018427387904 chip 0 halt 1
      }
    }
    func.return
  }
}
