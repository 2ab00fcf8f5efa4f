// tp-verify accepts what meets the shard obligation and stamps a certificate bound to a
// digest of what it checked.
// RUN: tp-opt %s --split-input-file --tp-verify | filecheck %s

// The Megatron MLP: chip-local partials reach the spine only through the all-reduce.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation", digest = "{{[0-9a-f]+}}"}}
// CHECK: tp.allreduce %p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %p0 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %p1 = linalg.add ins(%x, %x : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
// The seed's spelling, a left fold of adds over one partial per chip in chip order, is an
// all-reduce too; and a KV cache written per chip is stored back by the host (tp.unshard).
// CHECK-LABEL: builtin.module attributes {tp.chips = 3 : i64, tp.certificate
// CHECK: %s = linalg.add ins(%s1, %p2
// CHECK: tp.unshard %k0, %k1, %k2
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>,
                  %k0: tensor<1x4xf32, #tp.chip<0>>, %k1: tensor<1x4xf32, #tp.chip<1>>, %k2: tensor<1x4xf32, #tp.chip<2>>) -> (tensor<4xf32>, tensor<3x4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %k = tp.unshard %k0, %k1, %k2 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [3, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [3, 4]>, #tp.slice<axis = 0, ranges = [(2, 1)], full = [3, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>>, tensor<1x4xf32, #tp.chip<2>> -> tensor<3x4xf32>
    func.return %s, %k : tensor<4xf32>, tensor<3x4xf32>
  }
}
