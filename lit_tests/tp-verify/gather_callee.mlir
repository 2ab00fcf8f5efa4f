// An all-gather in a public callee whose blocks are the callee's chip-typed arguments: the
// source is certified in its caller's call chain. tp-link-points gives every chip its copy
// of the callee and leaves the public one uncalled; a function taking a chip's data is
// never a host's entry (no host holds chip data), so nothing runs the original, and the
// linked programs are certified again from scratch.
// RUN: tp-opt %s --tp-relocate --tp-transfers --tp-link-points | tp-opt --tp-verify | filecheck %s

// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation"
// CHECK:       func.func @gather(%a: tensor<2x5xf32, #tp.chip<0>>, %b: tensor<2x5xf32, #tp.chip<1>>)
// CHECK:       func.func private @gather.chip0(
// CHECK:       func.func private @gather.chip1(
// CHECK:       func.func @decode(
// CHECK:       tp.chip_program on 0
// CHECK:       func.call @gather.chip0(
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @gather(%a: tensor<2x5xf32, #tp.chip<0>>, %b: tensor<2x5xf32, #tp.chip<1>>) -> tensor<4x5xf32> {
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
  func.func @decode(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 3)], full = [4, 6]> : tensor<4x6xf32> -> tensor<4x3xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4x5xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x5xf32, #tp.chip<0>>) -> tensor<4x5xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<4x3xf32, #tp.chip<0>>, tensor<3x5xf32, #tp.chip<0>>) outs(%z0 : tensor<4x5xf32, #tp.chip<0>>) -> tensor<4x5xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(3, 3)], full = [4, 6]> : tensor<4x6xf32> -> tensor<4x3xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4x5xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5xf32, #tp.chip<1>>) -> tensor<4x5xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<4x3xf32, #tp.chip<1>>, tensor<3x5xf32, #tp.chip<1>>) outs(%z1 : tensor<4x5xf32, #tp.chip<1>>) -> tensor<4x5xf32, #tp.chip<1>>
    %r0, %r1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<4x5xf32, #tp.chip<0>>, tensor<4x5xf32, #tp.chip<1>> -> tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>
    %res0 = tensor.extract_slice %res[0, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
    %f0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%r0, %res0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32>) outs(%f0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %res1 = tensor.extract_slice %res[2, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
    %f1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%r1, %res1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32>) outs(%f1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %g = func.call @gather(%h0, %h1) : (tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>) -> tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}
