// Generated: tp-opt ../ring.mlir --split-input-file --tp-relocate="allreduce=ring epilogue=true"
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @three(%x: tensor<1x6xf32>) -> tensor<1x6xf32> {
    %e0 = tensor.empty() : tensor<1x6xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x6xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<1x6xf32, #tp.chip<2>>
    %h0 = tp.section "h0" on [0] {
      %0 = linalg.add ins(%x, %x : tensor<1x6xf32>, tensor<1x6xf32>) outs(%e0 : tensor<1x6xf32, #tp.chip<0>>) -> tensor<1x6xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x6xf32, #tp.chip<0>>
    } : tensor<1x6xf32, #tp.chip<0>>
    %h1 = tp.section "h1" on [1] {
      %1 = linalg.add ins(%x, %x : tensor<1x6xf32>, tensor<1x6xf32>) outs(%e1 : tensor<1x6xf32, #tp.chip<1>>) -> tensor<1x6xf32, #tp.chip<1>>
      tp.yield %1 : tensor<1x6xf32, #tp.chip<1>>
    } : tensor<1x6xf32, #tp.chip<1>>
    %h2 = tp.section "h2" on [2] {
      %2 = linalg.add ins(%x, %x : tensor<1x6xf32>, tensor<1x6xf32>) outs(%e2 : tensor<1x6xf32, #tp.chip<2>>) -> tensor<1x6xf32, #tp.chip<2>>
      tp.yield %2 : tensor<1x6xf32, #tp.chip<2>>
    } : tensor<1x6xf32, #tp.chip<2>>
    %out = tp.section "s" on [0, 1, 2] {
      %s = tp.allreduce %h0, %h1, %h2 algorithm "ring" : tensor<1x6xf32, #tp.chip<0>>, tensor<1x6xf32, #tp.chip<1>>, tensor<1x6xf32, #tp.chip<2>> -> tensor<1x6xf32>
      %out_1 = arith.addf %x, %s : tensor<1x6xf32>
      tp.yield %out_1 : tensor<1x6xf32>
    } : tensor<1x6xf32>
    func.return %out : tensor<1x6xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @two(%p0: tensor<4x2xf32, #tp.chip<0>>, %p1: tensor<4x2xf32, #tp.chip<1>>) -> tensor<4x2xf32> {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "ring" : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<1>> -> tensor<4x2xf32>
      tp.yield %0 : tensor<4x2xf32>
    } : tensor<4x2xf32>
    func.return %s : tensor<4x2xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @one(%p0: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32> {
    %s = tp.section "s" on [0] {
      %0 = tp.allreduce %p0 algorithm "ring" : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @uncut(%p0: tensor<2x2xf32, #tp.chip<0>>, %p1: tensor<2x2xf32, #tp.chip<1>>, %p2: tensor<2x2xf32, #tp.chip<2>>) -> tensor<2x2xf32> {
    %s = tp.section "s" on [0, 1, 2] {
      %0 = tp.allreduce %p0, %p1, %p2 algorithm "ring" : tensor<2x2xf32, #tp.chip<0>>, tensor<2x2xf32, #tp.chip<1>>, tensor<2x2xf32, #tp.chip<2>> -> tensor<2x2xf32>
      tp.yield %0 : tensor<2x2xf32>
    } : tensor<2x2xf32>
    func.return %s : tensor<2x2xf32>
  }
}

