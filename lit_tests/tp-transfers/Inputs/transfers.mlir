// Generated: tp-opt ../transfers.mlir --split-input-file --tp-relocate
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @allreduce(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<4xf32, #tp.chip<2>>
    %p0 = tp.section "p0" on [0] {
      %0 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %p1 = tp.section "p1" on [1] {
      %1 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %p2 = tp.section "p2" on [2] {
      %2 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32, #tp.chip<2>>
      tp.yield %2 : tensor<4xf32, #tp.chip<2>>
    } : tensor<4xf32, #tp.chip<2>>
    %s = tp.section "s" on [0, 1, 2] {
      %3 = tp.allreduce %p0, %p1, %p2 algorithm "fold" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<2>> -> tensor<4xf32>
      tp.yield %3 : tensor<4xf32>
    } : tensor<4xf32>
    %out = tp.section "out" on [0, 1, 2] {
      %4 = arith.addf %s, %x : tensor<4xf32>
      tp.yield %4 : tensor<4xf32>
    } : tensor<4xf32>
    %again = tp.section "again" on [0, 1, 2] {
      %5 = arith.addf %s, %out : tensor<4xf32>
      tp.yield %5 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %again : tensor<4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @handoff(%w: tensor<4xf32, #tp.chip<0>>) {
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %a = tp.section "a" on [0] {
      %0 = tensor.extract_slice %w[0] [4] [1] : tensor<4xf32, #tp.chip<0>> to tensor<4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %b = tp.section "b" on [1] {
      %1 = linalg.add ins(%a, %a : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<0>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.yield %1 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %c = tp.section "c" on [1] {
      %2 = linalg.add ins(%a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
      tp.yield %2 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

