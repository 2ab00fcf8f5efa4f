// tp-opt mlp.mlir --tp-verify --tp-relocate=allreduce=ring --tp-verify, written by tp before
// the all-reduce algorithm became an enum attribute (commit 7944b1f): its certificate must stay valid.
builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation", digest = "276f27624863fabfb88f6538f700552e039a2954c34a7bd5c4e473f07d8655c3"}} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x4xf32> {
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
      %2 = linalg.add ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %h1 = tp.section "h1" on [1] {
      %3 = linalg.add ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<1>>
    } : tensor<1x4xf32, #tp.chip<1>>
    %s = tp.section "s" on [0, 1] {
      %4 = tp.allreduce %h0, %h1 algorithm "ring" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %4 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %out = tp.section "out" on [0, 1] {
      %5 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %5 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

