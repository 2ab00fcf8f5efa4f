// Generated: tp-opt ../dependencies.mlir --split-input-file --tp-relocate --tp-transfers
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @arg_cache(%k: tensor<2x4xf32, #tp.chip<0>>, %row: tensor<1x4xf32, #tp.chip<0>>, %w: tensor<2x4xf32, #tp.chip<1>>) {
    %a = tp.section "a" on [1] {
      %0 = arith.mulf %w, %w : tensor<2x4xf32, #tp.chip<1>>
      tp.yield %0 : tensor<2x4xf32, #tp.chip<1>>
    } : tensor<2x4xf32, #tp.chip<1>>
    %b = tp.section "b" on [1] {
      %1 = arith.mulf %a, %a : tensor<2x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<2x4xf32, #tp.chip<1>>
    } : tensor<2x4xf32, #tp.chip<1>>
    tp.transfer %b from 1 to 0 : tensor<2x4xf32, #tp.chip<1>>
    %old = tp.section "old" on [0, 1] {
      %2 = tp.allreduce %k, %b algorithm "fold" : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
      tp.yield %2 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    %new = tp.section "new" on [0] {
      %3 = tensor.insert_slice %row into %k[1, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<0>> into tensor<2x4xf32, #tp.chip<0>>
      tp.yield %3 : tensor<2x4xf32, #tp.chip<0>>
    } : tensor<2x4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fanout(%w: tensor<2x12xf32>) {
    %e1 = tensor.empty() : tensor<2x4xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<2x4xf32, #tp.chip<2>>
    %p0 = tp.section "p0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [2, 12]> : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<2x4xf32, #tp.chip<0>>
    } : tensor<2x4xf32, #tp.chip<0>>
    %p1 = tp.section "p1" on [1] {
      %1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(4, 4)], full = [2, 12]> : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<2x4xf32, #tp.chip<1>>
    } : tensor<2x4xf32, #tp.chip<1>>
    %p2 = tp.section "p2" on [2] {
      %2 = tp.shard %w at #tp.slice<axis = 1, ranges = [(8, 4)], full = [2, 12]> : tensor<2x12xf32> -> tensor<2x4xf32, #tp.chip<2>>
      tp.yield %2 : tensor<2x4xf32, #tp.chip<2>>
    } : tensor<2x4xf32, #tp.chip<2>>
    tp.transfer %p1 from 1 to 0 : tensor<2x4xf32, #tp.chip<1>>
    tp.transfer %p2 from 2 to 0 : tensor<2x4xf32, #tp.chip<2>>
    %s = tp.section "s" on [0, 1, 2] {
      %3 = tp.allreduce %p0, %p1, %p2 algorithm "fold" : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>>, tensor<2x4xf32, #tp.chip<2>> -> tensor<2x4xf32>
      tp.yield %3 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    tp.transfer %s from 0 to 1 : tensor<2x4xf32>
    %a = tp.section "a" on [1] {
      %4 = linalg.add ins(%s, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e1 : tensor<2x4xf32, #tp.chip<1>>) -> tensor<2x4xf32, #tp.chip<1>>
      tp.yield %4 : tensor<2x4xf32, #tp.chip<1>>
    } : tensor<2x4xf32, #tp.chip<1>>
    tp.transfer %s from 0 to 2 : tensor<2x4xf32>
    %b = tp.section "b" on [2] {
      %5 = linalg.add ins(%s, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e2 : tensor<2x4xf32, #tp.chip<2>>) -> tensor<2x4xf32, #tp.chip<2>>
      tp.yield %5 : tensor<2x4xf32, #tp.chip<2>>
    } : tensor<2x4xf32, #tp.chip<2>>
    func.return
  }
}

