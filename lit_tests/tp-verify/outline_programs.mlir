// tp-verify on per-chip programs that call per-chip functions (tp-link-points on an outlined
// program): checked as the flat programs the calls stand for, every call's copy of a function
// included, so one leak in @layer.chip1 is a leak in every layer; it is named where it is
// written, in the function.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// The two-layer MLP's per-chip programs: certified.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation"
// CHECK:      func.func private @layer.chip0(
// CHECK:      func.func private @layer.chip1(
// CHECK:      tp.relay_repeat 2 times
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) attributes {tp.chip = 0 : i64} {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %w0 = tp.section "w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h0 = tp.section "h0" on [0] {
      %1 = linalg.mul ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h1 = tp.link 1 sends() as [] receives ["h1"] : () -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0] {
      %2 = tp.allreduce %h0, %h1 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %2 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    tp.link 2 sends(%s) as ["s"] receives [] : (tensor<1x4xf32>) -> ()
    %y = tp.section "y" on [0] {
      %3 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %3 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %c = tp.section "c" on [0] {
      %4 = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
      tp.yield %4 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func private @layer.chip1(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) attributes {tp.chip = 1 : i64} {
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w1 = tp.section "w1" on [1] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %h1 = tp.section "h1" on [1] {
      %1 = linalg.mul ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.link 1 sends(%h1) as ["h1"] receives ["s"] : (tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32>
    %y = tp.section "y" on [1] {
      %2 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %2 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %c = tp.section "c" on [1] {
      %3 = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
      tp.yield %3 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %w.0: tensor<2x4xf32> {tp.name = "w.0"}, %w.1: tensor<2x4xf32> {tp.name = "w.1"}, %cache.0: tensor<2x4xf32> {tp.name = "cache.0"}, %cache.1: tensor<2x4xf32> {tp.name = "cache.1"}, %pos: index {tp.name = "pos"}) -> (tensor<1x4xf32> {tp.name = "out"}, tensor<2x4xf32> {tp.name = "old"}, tensor<2x4xf32> {tp.name = "cache.0"}, tensor<2x4xf32> {tp.name = "cache.1"}) {
    %out, %old, %c, %c_1 = tp.chip_program on 0 (%x, %cache.0, %w.0, %pos, %w.1, %cache.1) {
    ^bb0(%x_1: tensor<1x4xf32>, %cache.0_1: tensor<2x4xf32>, %w.0_1: tensor<2x4xf32>, %pos_1: index, %w.1_1: tensor<2x4xf32>, %cache.1_1: tensor<2x4xf32>):
      %x2 = tp.section "x2" on [0] {
        %0 = arith.mulf %x_1, %x_1 : tensor<1x4xf32>
        tp.yield %0 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      %old_1 = tp.section "old" on [0] {
        %1 = arith.addf %cache.0_1, %cache.0_1 : tensor<2x4xf32>
        tp.yield %1 : tensor<2x4xf32>
      } : tensor<2x4xf32>
      %y, %c_2 = func.call @layer.chip0(%x2, %w.0_1, %cache.0_1, %pos_1) {tp.tag = "call0_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %y_1, %c_3 = func.call @layer.chip0(%y, %w.1_1, %cache.1_1, %pos_1) {tp.tag = "call1_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %out_1 = tp.section "out" on [0] {
        %2 = arith.addf %y_1, %y_1 : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish %out_1, %old_1, %c_2, %c_3 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
    } : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    tp.chip_program on 1 (%x, %cache.0, %w.0, %pos, %w.1, %cache.1) {
    ^bb0(%x_1: tensor<1x4xf32>, %cache.0_1: tensor<2x4xf32>, %w.0_1: tensor<2x4xf32>, %pos_1: index, %w.1_1: tensor<2x4xf32>, %cache.1_1: tensor<2x4xf32>):
      %x2 = tp.section "x2" on [1] {
        %0 = arith.mulf %x_1, %x_1 : tensor<1x4xf32>
        tp.yield %0 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      %old_1 = tp.section "old" on [1] {
        %1 = arith.addf %cache.0_1, %cache.0_1 : tensor<2x4xf32>
        tp.yield %1 : tensor<2x4xf32>
      } : tensor<2x4xf32>
      %y, %c_2 = func.call @layer.chip1(%x2, %w.0_1, %cache.0_1, %pos_1) {tp.tag = "call0_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %y_1, %c_3 = func.call @layer.chip1(%y, %w.1_1, %cache.1_1, %pos_1) {tp.tag = "call1_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %out_1 = tp.section "out" on [1] {
        %2 = arith.addf %y_1, %y_1 : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish
    } : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index, tensor<2x4xf32>, tensor<2x4xf32>) -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
      tp.relay_repeat 2 times every 2 rounds strides array<i64: 2, 1> tags ["call0_", "call1_"] {
        tp.copy round 1 "call0_h1" from 1 to 0
        tp.run_to round 1 chip 0 halt 2
        tp.run_to round 2 chip 0 halt 3
        tp.copy round 2 "call0_s" from 0 to 1
        tp.run_to round 2 chip 1 halt 2
      }
    }
    func.return %out, %old, %c, %c_1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}

// -----
// Chip 1's function casts its partial to the spine and adds it to the layer's output.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) attributes {tp.chip = 0 : i64} {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %w0 = tp.section "w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h0 = tp.section "h0" on [0] {
      %1 = linalg.mul ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h1 = tp.link 1 sends() as [] receives ["h1"] : () -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0] {
      %2 = tp.allreduce %h0, %h1 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %2 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    tp.link 2 sends(%s) as ["s"] receives [] : (tensor<1x4xf32>) -> ()
    %y = tp.section "y" on [0] {
      %3 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %3 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %c = tp.section "c" on [0] {
      %4 = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
      tp.yield %4 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func private @layer.chip1(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) attributes {tp.chip = 1 : i64} {
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w1 = tp.section "w1" on [1] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %h1 = tp.section "h1" on [1] {
      %1 = linalg.mul ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.link 1 sends(%h1) as ["h1"] receives ["s"] : (tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32>
    %y = tp.section "y" on [1] {
// CHECK-LABEL: error: 'builtin.unrealized_conversion_cast' computes spine value %leak from %h1 on chip 1: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
      %leak = builtin.unrealized_conversion_cast %h1 : tensor<1x4xf32, #tp.chip<1>> to tensor<1x4xf32>
      %2 = arith.addf %x, %leak : tensor<1x4xf32>
      tp.yield %2 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %c = tp.section "c" on [1] {
      %3 = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
      tp.yield %3 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %w.0: tensor<2x4xf32> {tp.name = "w.0"}, %w.1: tensor<2x4xf32> {tp.name = "w.1"}, %cache.0: tensor<2x4xf32> {tp.name = "cache.0"}, %cache.1: tensor<2x4xf32> {tp.name = "cache.1"}, %pos: index {tp.name = "pos"}) -> (tensor<1x4xf32> {tp.name = "out"}, tensor<2x4xf32> {tp.name = "old"}, tensor<2x4xf32> {tp.name = "cache.0"}, tensor<2x4xf32> {tp.name = "cache.1"}) {
    %out, %old, %c, %c_1 = tp.chip_program on 0 (%x, %cache.0, %w.0, %pos, %w.1, %cache.1) {
    ^bb0(%x_1: tensor<1x4xf32>, %cache.0_1: tensor<2x4xf32>, %w.0_1: tensor<2x4xf32>, %pos_1: index, %w.1_1: tensor<2x4xf32>, %cache.1_1: tensor<2x4xf32>):
      %x2 = tp.section "x2" on [0] {
        %0 = arith.mulf %x_1, %x_1 : tensor<1x4xf32>
        tp.yield %0 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      %old_1 = tp.section "old" on [0] {
        %1 = arith.addf %cache.0_1, %cache.0_1 : tensor<2x4xf32>
        tp.yield %1 : tensor<2x4xf32>
      } : tensor<2x4xf32>
      %y, %c_2 = func.call @layer.chip0(%x2, %w.0_1, %cache.0_1, %pos_1) {tp.tag = "call0_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %y_1, %c_3 = func.call @layer.chip0(%y, %w.1_1, %cache.1_1, %pos_1) {tp.tag = "call1_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %out_1 = tp.section "out" on [0] {
        %2 = arith.addf %y_1, %y_1 : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish %out_1, %old_1, %c_2, %c_3 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
    } : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    tp.chip_program on 1 (%x, %cache.0, %w.0, %pos, %w.1, %cache.1) {
    ^bb0(%x_1: tensor<1x4xf32>, %cache.0_1: tensor<2x4xf32>, %w.0_1: tensor<2x4xf32>, %pos_1: index, %w.1_1: tensor<2x4xf32>, %cache.1_1: tensor<2x4xf32>):
      %x2 = tp.section "x2" on [1] {
        %0 = arith.mulf %x_1, %x_1 : tensor<1x4xf32>
        tp.yield %0 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      %old_1 = tp.section "old" on [1] {
        %1 = arith.addf %cache.0_1, %cache.0_1 : tensor<2x4xf32>
        tp.yield %1 : tensor<2x4xf32>
      } : tensor<2x4xf32>
      %y, %c_2 = func.call @layer.chip1(%x2, %w.0_1, %cache.0_1, %pos_1) {tp.tag = "call0_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %y_1, %c_3 = func.call @layer.chip1(%y, %w.1_1, %cache.1_1, %pos_1) {tp.tag = "call1_"} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
      %out_1 = tp.section "out" on [1] {
        %2 = arith.addf %y_1, %y_1 : tensor<1x4xf32>
        tp.yield %2 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.finish
    } : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index, tensor<2x4xf32>, tensor<2x4xf32>) -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
      tp.relay_repeat 2 times every 2 rounds strides array<i64: 2, 1> tags ["call0_", "call1_"] {
        tp.copy round 1 "call0_h1" from 1 to 0
        tp.run_to round 1 chip 0 halt 2
        tp.run_to round 2 chip 0 halt 3
        tp.copy round 2 "call0_s" from 0 to 1
        tp.run_to round 2 chip 1 halt 2
      }
    }
    func.return %out, %old, %c, %c_1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}
