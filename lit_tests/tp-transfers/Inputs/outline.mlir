// Generated: tp-opt ../outline.mlir --split-input-file --tp-relocate
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.section "w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.section "w1" on [1] {
      %1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %h0 = tp.section "h0" on [0] {
      %2 = linalg.mul ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h1 = tp.section "h1" on [1] {
      %3 = linalg.mul ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %4 = tp.allreduce %h0, %h1 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %4 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %y = tp.section "y" on [0, 1] {
      %5 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %5 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %c = tp.section "c" on [0, 1] {
      %6 = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
      tp.yield %6 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %w.0: tensor<2x4xf32> {tp.name = "w.0"}, %w.1: tensor<2x4xf32> {tp.name = "w.1"}, %cache.0: tensor<2x4xf32> {tp.name = "cache.0"}, %cache.1: tensor<2x4xf32> {tp.name = "cache.1"}, %pos: index {tp.name = "pos"}) -> (tensor<1x4xf32> {tp.name = "out"}, tensor<2x4xf32> {tp.name = "old"}, tensor<2x4xf32> {tp.name = "cache.0"}, tensor<2x4xf32> {tp.name = "cache.1"}) {
    %x2 = tp.section "x2" on [0, 1] {
      %0 = arith.mulf %x, %x : tensor<1x4xf32>
      tp.yield %0 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %old = tp.section "old" on [0, 1] {
      %1 = arith.addf %cache.0, %cache.0 : tensor<2x4xf32>
      tp.yield %1 : tensor<2x4xf32>
    } : tensor<2x4xf32>
    %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %out = tp.section "out" on [0, 1] {
      %2 = arith.addf %y1, %y1 : tensor<1x4xf32>
      tp.yield %2 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %out, %old, %c0, %c1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @sum(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "fold" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %w0 = tp.section "w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %q0 = tp.section "q0" on [0] {
      %1 = linalg.mul ins(%x, %w0 : tensor<4xf32>, tensor<4xf32, #tp.chip<0>>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      tp.yield %1 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %w1 = tp.section "w1" on [1] {
      %2 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
      tp.yield %2 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %q1 = tp.section "q1" on [1] {
      %3 = linalg.mul ins(%x, %w1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.yield %3 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %4 = tp.allreduce %q0, %q1 algorithm "fold" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
      tp.yield %4 : tensor<4xf32>
    } : tensor<4xf32>
    %y = tp.section "y" on [0, 1] {
      %5 = arith.addf %x, %s : tensor<4xf32>
      tp.yield %5 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %w: tensor<8xf32>) -> tensor<4xf32> {
    %s = func.call @sum(%p0, %p1) : (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32>
    %y = func.call @layer(%s, %w) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
    %out = tp.section "out" on [0, 1] {
      %0 = arith.addf %y, %s : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %out : tensor<4xf32>
  }
}

