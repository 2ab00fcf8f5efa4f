builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @upd(%c: tensor<4x2xf32, #tp.chip<1>>, %r: tensor<1x2xf32, #tp.chip<1>>) -> tensor<4x2xf32, #tp.chip<1>> {
    %u = tensor.insert_slice %r into %c[0, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<1>> into tensor<4x2xf32, #tp.chip<1>>
    func.return %u : tensor<4x2xf32, #tp.chip<1>>
  }
  func.func @decode(%x: tensor<4x2xf32> {tp.name = "x"}, %w: tensor<8x2xf32> {tp.name = "w"}, %cache: tensor<4x2xf32, #tp.chip<1>> {tp.name = "cache"}, %row: tensor<1x2xf32, #tp.chip<1>> {tp.name = "row"}) -> (tensor<4x2xf32> {tp.name = "s"}, tensor<8x2xf32> {tp.name = "y"}, tensor<8x2xf32> {tp.name = "new"}) {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<1>>
    %e0 = tensor.empty() : tensor<4x2xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4x2xf32, #tp.chip<1>>
    %b0 = linalg.add ins(%w0, %x : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32>) outs(%e0 : tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %b1 = arith.mulf %b0, %b0 : tensor<4x2xf32, #tp.chip<0>>
    %b2 = arith.mulf %b1, %b0 : tensor<4x2xf32, #tp.chip<0>>
    %a0 = arith.addf %b2, %b1 : tensor<4x2xf32, #tp.chip<0>>
    %a1 = linalg.add ins(%w1, %x : tensor<4x2xf32, #tp.chip<1>>, tensor<4x2xf32>) outs(%e1 : tensor<4x2xf32, #tp.chip<1>>) -> tensor<4x2xf32, #tp.chip<1>>
    %s = tp.allreduce %a0, %a1 : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<4x2xf32>
    %y = linalg.add ins(%cache, %s : tensor<4x2xf32, #tp.chip<1>>, tensor<4x2xf32>) outs(%e1 : tensor<4x2xf32, #tp.chip<1>>) -> tensor<4x2xf32, #tp.chip<1>>
    %new = func.call @upd(%cache, %row) : (tensor<4x2xf32, #tp.chip<1>>, tensor<1x2xf32, #tp.chip<1>>) -> tensor<4x2xf32, #tp.chip<1>>
    %y0 = linalg.add ins(%w0, %x : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32>) outs(%e0 : tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %oy = tp.unshard %y0, %y slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]>] : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<8x2xf32>
    %on = tp.unshard %y0, %new slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 2]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]>] : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<8x2xf32>
    func.return %s, %oy, %on : tensor<4x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>
  }
}
