builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) {
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(6, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    func.return
  }
}
