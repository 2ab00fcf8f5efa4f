// Generated: tp-opt ../link_points.mlir --split-input-file --tp-relocate --tp-transfers
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @mlp4(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>) -> tensor<1x4xf32> {
    %w0 = tp.section "w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.section "w1" on [1] {
      %1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %w2 = tp.section "w2" on [2] {
      %2 = tp.shard %w at #tp.slice<axis = 0, ranges = [(2, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<2>>
      tp.yield %2 : tensor<1x4xf32, #tp.chip<2>>
    } : tensor<1x4xf32, #tp.chip<2>>
    %w3 = tp.section "w3" on [3] {
      %3 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 1)], full = [4, 4]> : tensor<4x4xf32> -> tensor<1x4xf32, #tp.chip<3>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<3>>
    } : tensor<1x4xf32, #tp.chip<3>>
    %h0 = tp.section "h0" on [0] {
      %4 = arith.mulf %w0, %w0 : tensor<1x4xf32, #tp.chip<0>>
      tp.yield %4 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h1 = tp.section "h1" on [1] {
      %5 = arith.mulf %w1, %w1 : tensor<1x4xf32, #tp.chip<1>>
      tp.yield %5 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %h2 = tp.section "h2" on [2] {
      %6 = arith.mulf %w2, %w2 : tensor<1x4xf32, #tp.chip<2>>
      tp.yield %6 : tensor<1x4xf32, #tp.chip<2>>
    } : tensor<1x4xf32, #tp.chip<2>>
    %h3 = tp.section "h3" on [3] {
      %7 = arith.mulf %w3, %w3 : tensor<1x4xf32, #tp.chip<3>>
      tp.yield %7 : tensor<1x4xf32, #tp.chip<3>>
    } : tensor<1x4xf32, #tp.chip<3>>
    tp.transfer %h1 from 1 to 0 : tensor<1x4xf32, #tp.chip<1>>
    tp.transfer %h2 from 2 to 0 : tensor<1x4xf32, #tp.chip<2>>
    tp.transfer %h3 from 3 to 0 : tensor<1x4xf32, #tp.chip<3>>
    %s = tp.section "s" on [0, 1, 2, 3] {
      %8 = tp.allreduce %h0, %h1, %h2, %h3 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<2>>, tensor<1x4xf32, #tp.chip<3>> -> tensor<1x4xf32>
      tp.yield %8 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    tp.transfer %s from 0 to 1 : tensor<1x4xf32>
    tp.transfer %s from 0 to 2 : tensor<1x4xf32>
    tp.transfer %s from 0 to 3 : tensor<1x4xf32>
    %out = tp.section "out" on [0, 1, 2, 3] {
      %9 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %9 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @first_needs_other(%past: tensor<2x4xf32>, %row: tensor<1x4xf32, #tp.chip<0>>) -> tensor<2x4xf32> {
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %a = tp.section "a" on [0] {
      %0 = arith.mulf %row, %row : tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    tp.transfer %a from 0 to 1 : tensor<1x4xf32, #tp.chip<0>>
    %b = tp.section "b" on [1] {
      %1 = linalg.add ins(%a, %a : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<0>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %k0 = tp.section "k0" on [0] {
      %2 = tp.shard %past at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %k1 = tp.section "k1" on [1] {
      %3 = tp.shard %past at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %new0 = tp.section "new0" on [0] {
      %4 = tensor.insert_slice %a into %k0[0, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<0>> into tensor<1x4xf32, #tp.chip<0>>
      tp.yield %4 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %new1 = tp.section "new1" on [1] {
      %5 = tensor.insert_slice %b into %k1[0, 0] [1, 4] [1, 1] : tensor<1x4xf32, #tp.chip<1>> into tensor<1x4xf32, #tp.chip<1>>
      tp.yield %5 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %present = tp.section "present" on [0, 1] {
      %6 = tp.unshard %new0, %new1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
      tp.yield %6 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    func.return %present : tensor<2x4xf32>
  }
}

