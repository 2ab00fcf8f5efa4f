builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<4x2xf32>, %w0: tensor<4x2xf32, #tp.chip<0>>, %w1: tensor<4x2xf32, #tp.chip<1>>, %a: tensor<4x2xf32, #tp.chip<0>>, %b: tensor<4x2xf32, #tp.chip<0>>, %row: tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32>, tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>) {
    %e0 = tensor.empty() : tensor<4x2xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4x2xf32, #tp.chip<1>>
    %b0 = linalg.add ins(%w1, %x : tensor<4x2xf32, #tp.chip<1>>, tensor<4x2xf32>) outs(%e1 : tensor<4x2xf32, #tp.chip<1>>) -> tensor<4x2xf32, #tp.chip<1>>
    %b1 = arith.mulf %b0, %b0 : tensor<4x2xf32, #tp.chip<1>>
    %b2 = arith.mulf %b1, %b0 : tensor<4x2xf32, #tp.chip<1>>
    %a1 = arith.addf %b2, %b1 : tensor<4x2xf32, #tp.chip<1>>
    %a0 = linalg.add ins(%w0, %x : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32>) outs(%e0 : tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %s = tp.allreduce %a0, %a1 : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<4x2xf32>
    %y = linalg.add ins(%b, %s : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32>) outs(%e0 : tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %u = tensor.insert_slice %row into %a[0, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<0>> into tensor<4x2xf32, #tp.chip<0>>
    func.return %s, %y, %u : tensor<4x2xf32>, tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>
  }
  func.func @decode(%x: tensor<4x2xf32> {tp.name = "x"}, %w: tensor<8x2xf32> {tp.name = "w"}, %cache: tensor<4x2xf32, #tp.chip<0>> {tp.name = "cache"}, %row: tensor<1x2xf32, #tp.chip<0>> {tp.name = "row"}, %other: tensor<4x2xf32, #tp.chip<1>> {tp.name = "other"}) -> (tensor<4x2xf32> {tp.name = "s"}, tensor<8x2xf32> {tp.name = "y"}, tensor<8x2xf32> {tp.name = "new"}) {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<1>>
    %s, %y, %u = func.call @layer(%x, %w0, %w1, %cache, %cache, %row) : (tensor<4x2xf32>, tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>>, tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32>, tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>)
    %oy = tp.unshard %y, %other slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]>] : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<8x2xf32>
    %on = tp.unshard %u, %other slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]>] : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<8x2xf32>
    func.return %s, %oy, %on : tensor<4x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>
  }
}
