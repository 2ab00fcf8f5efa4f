// Generated: tp-opt ../algorithms.mlir --tp-relocate=allreduce=oneshot
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %h0 = tp.section "h0" on [0] {
      %0 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h1 = tp.section "h1" on [1] {
      %1 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %2 = tp.allreduce %h0, %h1 algorithm "oneshot" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %2 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %out = tp.section "out" on [0, 1] {
      %3 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %3 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

