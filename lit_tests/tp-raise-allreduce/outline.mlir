// tp-raise-allreduce on an outlined program: the seed's fold inside @layer is raised ONCE,
// in the callee, for every call; the calls in @decode are left as they are.
// RUN: tp-opt %s --tp-raise-allreduce | filecheck %s

// CHECK-LABEL: func.func private @layer(
// CHECK-NOT:  linalg.add
// CHECK:      %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
// CHECK-NEXT: %y = arith.addf %x, %s
// CHECK-LABEL: func.func @decode(
// CHECK:      %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos)
// CHECK-NEXT: %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.mul ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.mul ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %es = tensor.empty() : tensor<1x4xf32>
    %s = linalg.add ins(%h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>>) outs(%es : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = arith.addf %x, %s : tensor<1x4xf32>
    %c = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %w.0: tensor<2x4xf32> {tp.name = "w.0"}, %w.1: tensor<2x4xf32> {tp.name = "w.1"}, %cache.0: tensor<2x4xf32> {tp.name = "cache.0"}, %cache.1: tensor<2x4xf32> {tp.name = "cache.1"}, %pos: index {tp.name = "pos"}) -> (tensor<1x4xf32> {tp.name = "out"}, tensor<2x4xf32> {tp.name = "old"}, tensor<2x4xf32> {tp.name = "cache.0"}, tensor<2x4xf32> {tp.name = "cache.1"}) {
    %x2 = arith.mulf %x, %x : tensor<1x4xf32>
    %old = arith.addf %cache.0, %cache.0 : tensor<2x4xf32>
    %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %out = arith.addf %y1, %y1 : tensor<1x4xf32>
    func.return %out, %old, %c0, %c1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}
