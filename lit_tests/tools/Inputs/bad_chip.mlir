builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>> {
    %e = tensor.empty() : tensor<4xf32, #tp.chip<3>>
    func.return %a : tensor<4xf32, #tp.chip<1>>
  }
}
