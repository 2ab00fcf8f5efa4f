// Generated: tp-opt ../algorithms.mlir --split-input-file --tp-relocate=allreduce=oneshot --tp-transfers
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
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
    tp.transfer %h0 from 0 to 1 : tensor<1x4xf32, #tp.chip<0>>
    tp.transfer %h1 from 1 to 0 : tensor<1x4xf32, #tp.chip<1>>
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

// -----
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @ring3(%p0: tensor<1x6xf32, #tp.chip<0>>, %p1: tensor<1x6xf32, #tp.chip<1>>, %p2: tensor<1x6xf32, #tp.chip<2>>) -> tensor<1x6xf32> {
    %s = tp.section "s" on [0, 1, 2] {
      %0 = tp.allreduce %p0, %p1, %p2 algorithm "oneshot" : tensor<1x6xf32, #tp.chip<0>>, tensor<1x6xf32, #tp.chip<1>>, tensor<1x6xf32, #tp.chip<2>> -> tensor<1x6xf32>
      tp.yield %0 : tensor<1x6xf32>
    } : tensor<1x6xf32>
    func.return %s : tensor<1x6xf32>
  }
}

