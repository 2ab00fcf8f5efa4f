// Generated: tp-opt ../phase.mlir --split-input-file --tp-relocate --tp-transfers
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.section "w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h0 = tp.section "h0" on [0] {
      %1 = linalg.add ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.section "w1" on [1] {
      %2 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %2 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %h1 = tp.section "h1" on [1] {
      %3 = linalg.add ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    tp.transfer %h1 from 1 to 0 : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %4 = tp.allreduce %h0, %h1 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %4 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    tp.transfer %s from 0 to 1 : tensor<1x4xf32>
    %out = tp.section "out" on [0, 1] {
      %5 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %5 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cache(%past: tensor<2x4xf32>, %row: tensor<1x4xf32, #tp.chip<0>>, %y: tensor<1x4xf32, #tp.chip<1>>) {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %k = tp.section "k" on [0] {
      %0 = tp.shard %past at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2, 4]> : tensor<2x4xf32> -> tensor<2x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<2x4xf32, #tp.chip<0>>
    } : tensor<2x4xf32, #tp.chip<0>>
    %old = tp.section "old" on [0] {
      %1 = tensor.extract_slice %k[1, 0] [1, 4] [1, 1] : tensor<2x4xf32, #tp.chip<0>> to tensor<1x4xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %new = tp.section "new" on [0] {
      %2 = tensor.insert_slice %row into %k[1, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<0>> into tensor<2x4xf32, #tp.chip<0>>
      tp.yield %2 : tensor<2x4xf32, #tp.chip<0>>
    } : tensor<2x4xf32, #tp.chip<0>>
    %seen = tp.section "seen" on [0] {
      %3 = tensor.extract_slice %new[1, 0] [1, 4] [1, 1] : tensor<2x4xf32, #tp.chip<0>> to tensor<1x4xf32, #tp.chip<0>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %other = tp.section "other" on [1] {
      %4 = linalg.add ins(%y, %y : tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %4 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @busy(%x: tensor<4xf32, #tp.chip<0>>, %y: tensor<4xf32, #tp.chip<1>>, %z: tensor<4xf32>) {
    %a = tp.section "a" on [0] {
      %0 = arith.addf %x, %x : tensor<4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %b = tp.section "b" on [0] {
      %1 = arith.mulf %x, %x : tensor<4xf32, #tp.chip<0>>
      tp.yield %1 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %c = tp.section "c" on [1] {
      %2 = arith.addf %y, %y : tensor<4xf32, #tp.chip<1>>
      tp.yield %2 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %d = tp.section "d" on [0, 1] {
      %3 = arith.addf %z, %z : tensor<4xf32>
      tp.yield %3 : tensor<4xf32>
    } : tensor<4xf32>
    func.return
  }
}

