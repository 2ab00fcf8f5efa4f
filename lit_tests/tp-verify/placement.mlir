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

// -----
// A call in chip 0's section running chip 1's work (and an all-reduce) in its callee.
// CHECK-LABEL: error: 'func.call' runs @helper, which computes %w1 from chip 1's data, but its section runs on chips [0] [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @helper(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %h0 = linalg.add ins(%x, %w0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %h1 = linalg.add ins(%x, %w1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32> {tp.name = "x"}, %w: tensor<8xf32> {tp.name = "w"}) -> tensor<4xf32> {
    %s = tp.section "all_on_chip0" on [0] {
      %r = func.call @helper(%x, %w) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
      tp.yield %r : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A scalar computed on chip 0 only, reaching chip 1's section through a region at function level.
// CHECK-LABEL: error: %pos is computed on chips [0], but is read on chip 1: a scalar does not cross chips, so it is computed wherever it is read [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%n: i64, %k1: tensor<4xf32, #tp.chip<1>>, %r: tensor<1xf32, #tp.chip<1>>) -> () {
    %p = tp.section "pos" on [0] {
      %i = arith.index_cast %n : i64 to index
      tp.yield %i : index
    } : index
    %true = arith.constant true
    %pos = scf.if %true -> (index) {
      scf.yield %p : index
    } else {
      scf.yield %p : index
    }
    %w1 = tp.section "w1" on [1] {
      %w = tensor.insert_slice %r into %k1[%pos] [1] [1] : tensor<1xf32, #tp.chip<1>> into tensor<4xf32, #tp.chip<1>>
      tp.yield %w : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
// A section at function level beside per-chip programs.
// CHECK-LABEL: error: 'tp.section' at function level beside per-chip programs: in a function of per-chip programs, chips work only in their programs [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%n: i64 {tp.name = "n"}, %c1: tensor<4xf32, #tp.chip<1>> {tp.name = "c1"}, %r: tensor<1xf32, #tp.chip<1>> {tp.name = "r"}) -> tensor<4xf32> {
    %k = tp.chip_program on 0 (%n) {
    ^bb0(%n0: i64):
      %i = arith.index_cast %n0 : i64 to index
      tp.finish %i : index
    } : (i64) -> (index)
    tp.chip_program on 1 () {
      tp.finish
    } : () -> ()
    %w = tp.section "w" on [1] {
      %0 = tensor.insert_slice %r into %c1[%k] [1] [1] : tensor<1xf32, #tp.chip<1>> into tensor<4xf32, #tp.chip<1>>
      tp.yield %0 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %u = tp.unshard %e, %w slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]>] : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<8xf32>
    %z = arith.constant dense<0.0> : tensor<4xf32>
    func.return %z : tensor<4xf32>
  }
}

// -----
// Chip 0's program calling a host function that holds chip programs.
// CHECK-LABEL: error: 'func.call' calls @inner, a host function with chip programs: only the host runs one: the shard obligation cannot be checked through it [opaque-call]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @inner(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %o = tp.chip_program on 0 (%x, %w) {
    ^bb0(%x0: tensor<4xf32>, %w_0: tensor<8xf32>):
      %w0 = tp.shard %w_0 at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
      %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
      %h0 = linalg.add ins(%x0, %w0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      %h1 = tp.link 1 sends() as [] receives ["h1"] : () -> tensor<4xf32, #tp.chip<1>>
      %s = tp.allreduce %h0, %h1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.finish %s : tensor<4xf32>
    } : (tensor<4xf32>, tensor<8xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x, %w) {
    ^bb0(%x1: tensor<4xf32>, %w_1: tensor<8xf32>):
      %w1 = tp.shard %w_1 at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
      %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
      %h1 = linalg.add ins(%x1, %w1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.link 1 sends(%h1) as ["h1"] receives [] : (tensor<4xf32, #tp.chip<1>>) -> ()
      tp.finish
    } : (tensor<4xf32>, tensor<8xf32>) -> ()
    func.return %o : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32> {tp.name = "x"}, %w: tensor<8xf32> {tp.name = "w"}) -> tensor<4xf32> {
    %o = tp.chip_program on 0 (%x, %w) {
    ^bb0(%x0: tensor<4xf32>, %w_0: tensor<8xf32>):
      %r = func.call @inner(%x0, %w_0) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
      tp.finish %r : tensor<4xf32>
    } : (tensor<4xf32>, tensor<8xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 () {
      tp.finish
    } : () -> ()
    func.return %o : tensor<4xf32>
  }
}

// -----
// The seed's fold with its adds in replicated sections: an all-reduce, read where its partials live.
// CHECK-LABEL: func.func @decode
// CHECK: tp.section
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s = tp.section "s" on [0, 1] {
      %0 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
