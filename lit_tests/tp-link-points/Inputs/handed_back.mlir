// Generated: tp-opt ../handed_back.mlir --tp-relocate --tp-transfers --tp-phase
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %c = arith.constant dense<2.000000e+00> : tensor<4xf32>
    %w0 = tp.section "w0" on [0] attributes {tp.phase = 0 : i64} {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %w1 = tp.section "w1" on [1] attributes {tp.phase = 0 : i64} {
      %1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    tp.barrier phase 0
    tp.transfer %w1 from 1 to 0 {tp.phase = 1 : i64} : tensor<4xf32, #tp.chip<1>>
    tp.barrier phase 1
    %s = tp.section "s" on [0, 1] attributes {tp.phase = 2 : i64} {
      %2 = tp.allreduce %w0, %w1 algorithm "fold" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.yield %2 : tensor<4xf32>
    } : tensor<4xf32>
    tp.barrier phase 2
    tp.transfer %s from 0 to 1 {tp.phase = 3 : i64} : tensor<4xf32>
    tp.barrier phase 3
    %y = tp.section "y" on [0, 1] attributes {tp.phase = 4 : i64} {
      %3 = arith.addf %x, %s : tensor<4xf32>
      tp.yield %3 : tensor<4xf32>
    } : tensor<4xf32>
    tp.barrier phase 4
    func.return %y, %x, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32> {tp.name = "x", tp.role = "input"}, %w: tensor<8xf32> {tp.name = "w", tp.role = "weight"}) -> (tensor<4xf32> {tp.name = "y"}, tensor<4xf32> {tp.name = "z"}, tensor<4xf32> {tp.name = "c"}) {
    %x2 = tp.section "x2" on [0, 1] attributes {tp.phase = 0 : i64} {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.barrier phase 0
    %y, %z, %c = func.call @layer(%x2, %w) {tp.phase = 1 : i64} : (tensor<4xf32>, tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    tp.barrier phase 1
    func.return %y, %z, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

