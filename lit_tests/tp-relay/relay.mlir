// tp-relay: the host's relay over the chips' halts. Round by round, every chip that can is
// run to its next halt once what its halt receives has been sent and copied; a deadlock is
// refused, naming every chip's halt and what it waits for.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relay | filecheck %s

// The Megatron MLP on 4 chips (as tp-link-points writes it): all four chips run at once to
// their first halt; chip 0 takes the partials and folds; the sum goes back to every chip.
// CHECK-LABEL: func.func @mlp4
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 0 chip 1 halt 1
// CHECK-NEXT:   tp.run_to round 0 chip 2 halt 1
// CHECK-NEXT:   tp.run_to round 0 chip 3 halt 1
// CHECK-NEXT:   tp.copy round 1 "h1" from 1 to 0
// CHECK-NEXT:   tp.copy round 1 "h2" from 2 to 0
// CHECK-NEXT:   tp.copy round 1 "h3" from 3 to 0
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.run_to round 2 chip 0 halt 3
// CHECK-NEXT:   tp.copy round 2 "s" from 0 to 1
// CHECK-NEXT:   tp.run_to round 2 chip 1 halt 2
// CHECK-NEXT:   tp.copy round 2 "s" from 0 to 2
// CHECK-NEXT:   tp.run_to round 2 chip 2 halt 2
// CHECK-NEXT:   tp.copy round 2 "s" from 0 to 3
// CHECK-NEXT:   tp.run_to round 2 chip 3 halt 2
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @mlp4(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>) -> tensor<1x4xf32> {
    %out = tp.chip_program on 0 (%w, %x) {
    ^bb0(%w_1: tensor<4x4xf32>, %x_1: tensor<1x4xf32>):
      %w0 = tp.section "w0" on [0] {
        %0 = tp.shard %w_1 at #tp.slice<axis = 0, ranges = [(0, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
        tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
      } : tensor<1x4xf32, #tp.chip<0>>
      %h0 = tp.section "h0" on [0] {
        %1 = arith.mulf %w0, %w0 : tensor<1x4xf32, #tp.chip<0>>
        tp.yield %1 : tensor<1x4xf32, #tp.chip<0>>
      } : tensor<1x4xf32, #tp.chip<0>>
      %h1, %h2, %h3 = tp.link 1 sends() as [] receives ["h1", "h2", "h3"] : () -> (tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<2>>, tensor<1x4xf32, #tp.chip<3>>)
      %s = tp.section "s" on [0] {
        %2 = tp.allreduce %h0, %h1, %h2, %h3 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<2>>, tensor<1x4xf32, #tp.chip<3>> -> tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.link 2 sends(%s) as ["s"] receives [] : (tensor<1x4xf32>) -> ()
      %out_1 = tp.section "out" on [0] {
        %3 = arith.addf %x_1, %s : tensor<1x4xf32>
        tp.yield %3 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish %out_1 : tensor<1x4xf32>
    } : (tensor<4x4xf32>, tensor<1x4xf32>) -> (tensor<1x4xf32>)
    tp.chip_program on 1 (%w, %x) {
    ^bb0(%w_1: tensor<4x4xf32>, %x_1: tensor<1x4xf32>):
      %w1 = tp.section "w1" on [1] {
        %0 = tp.shard %w_1 at #tp.slice<axis = 0, ranges = [(1, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
        tp.yield %0 : tensor<1x4xf32, #tp.chip<1>>
      } : tensor<1x4xf32, #tp.chip<1>>
      %h1 = tp.section "h1" on [1] {
        %1 = arith.mulf %w1, %w1 : tensor<1x4xf32, #tp.chip<1>>
        tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
      } : tensor<1x4xf32, #tp.chip<1>>
      %s = tp.link 1 sends(%h1) as ["h1"] receives ["s"] : (tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32>
      %out_1 = tp.section "out" on [1] {
        %2 = arith.addf %x_1, %s : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish
    } : (tensor<4x4xf32>, tensor<1x4xf32>) -> ()
    tp.chip_program on 2 (%w, %x) {
    ^bb0(%w_1: tensor<4x4xf32>, %x_1: tensor<1x4xf32>):
      %w2 = tp.section "w2" on [2] {
        %0 = tp.shard %w_1 at #tp.slice<axis = 0, ranges = [(2, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<2>>
        tp.yield %0 : tensor<1x4xf32, #tp.chip<2>>
      } : tensor<1x4xf32, #tp.chip<2>>
      %h2 = tp.section "h2" on [2] {
        %1 = arith.mulf %w2, %w2 : tensor<1x4xf32, #tp.chip<2>>
        tp.yield %1 : tensor<1x4xf32, #tp.chip<2>>
      } : tensor<1x4xf32, #tp.chip<2>>
      %s = tp.link 1 sends(%h2) as ["h2"] receives ["s"] : (tensor<1x4xf32, #tp.chip<2>>) -> tensor<1x4xf32>
      %out_1 = tp.section "out" on [2] {
        %2 = arith.addf %x_1, %s : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish
    } : (tensor<4x4xf32>, tensor<1x4xf32>) -> ()
    tp.chip_program on 3 (%w, %x) {
    ^bb0(%w_1: tensor<4x4xf32>, %x_1: tensor<1x4xf32>):
      %w3 = tp.section "w3" on [3] {
        %0 = tp.shard %w_1 at #tp.slice<axis = 0, ranges = [(3, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<3>>
        tp.yield %0 : tensor<1x4xf32, #tp.chip<3>>
      } : tensor<1x4xf32, #tp.chip<3>>
      %h3 = tp.section "h3" on [3] {
        %1 = arith.mulf %w3, %w3 : tensor<1x4xf32, #tp.chip<3>>
        tp.yield %1 : tensor<1x4xf32, #tp.chip<3>>
      } : tensor<1x4xf32, #tp.chip<3>>
      %s = tp.link 1 sends(%h3) as ["h3"] receives ["s"] : (tensor<1x4xf32, #tp.chip<3>>) -> tensor<1x4xf32>
      %out_1 = tp.section "out" on [3] {
        %2 = arith.addf %x_1, %s : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish
    } : (tensor<4x4xf32>, tensor<1x4xf32>) -> ()
    func.return %out : tensor<1x4xf32>
  }
}


// -----
// A host-placed receive: chip 1's first section needs chip 0's tensor, so chip 1 cannot
// start (it stands at its start, link 0) until chip 0 has sent it and the host copied it.
// CHECK-LABEL: func.func @host_placed
// CHECK:      tp.relay {
// CHECK-NEXT:   tp.run_to round 0 chip 0 halt 1
// CHECK-NEXT:   tp.run_to round 1 chip 0 halt 2
// CHECK-NEXT:   tp.copy round 1 "a" from 0 to 1
// CHECK-NEXT:   tp.run_to round 1 chip 1 halt 1
// CHECK-NEXT: }
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @host_placed(%x: tensor<4xf32>) -> tensor<4xf32> {
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
// A cycle: chip 0 must receive y before it can send x, chip 1 must receive x before it
// can send y. Refused, with where each chip stands and what it waits for.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cycle(%v: tensor<4xf32>) -> () {
// CHECK-LABEL: error: relay deadlock: no chip can move before all have finished; chip 0 stands at halt 1 waiting for y (from chip 1); chip 1 stands at halt 1 waiting for x (from chip 0) [deadlock]
    tp.chip_program on 0 (%v) {
    ^bb0(%v0: tensor<4xf32>):
      %y = tp.link 1 sends() as [] receives ["y"] : () -> tensor<4xf32>
      %x = arith.addf %y, %v0 : tensor<4xf32>
      tp.link 2 sends(%x) as ["x"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    tp.chip_program on 1 (%v) {
    ^bb0(%v1: tensor<4xf32>):
      %x = tp.link 1 sends() as [] receives ["x"] : () -> tensor<4xf32>
      %y = arith.mulf %x, %v1 : tensor<4xf32>
      tp.link 2 sends(%y) as ["y"] receives [] : (tensor<4xf32>) -> ()
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return
  }
}
