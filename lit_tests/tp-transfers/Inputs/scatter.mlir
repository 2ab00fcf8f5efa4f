// Generated: tp-opt ../scatter.mlir --tp-relocate
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @sp(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %zero = arith.constant 0.000000e+00 : f32
    %x0 = tp.section "x0" on [0] {
      %0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 3)], full = [4, 6]> : tensor<4x6xf32> -> tensor<4x3xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4x3xf32, #tp.chip<0>>
    } : tensor<4x3xf32, #tp.chip<0>>
    %w0 = tp.section "w0" on [0] {
      %1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<0>>
      tp.yield %1 : tensor<3x5xf32, #tp.chip<0>>
    } : tensor<3x5xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4x5xf32, #tp.chip<0>>
    %z0 = tp.section "z0" on [0] {
      %2 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x5xf32, #tp.chip<0>>) -> tensor<4x5xf32, #tp.chip<0>>
      tp.yield %2 : tensor<4x5xf32, #tp.chip<0>>
    } : tensor<4x5xf32, #tp.chip<0>>
    %p0 = tp.section "p0" on [0] {
      %3 = linalg.matmul ins(%x0, %w0 : tensor<4x3xf32, #tp.chip<0>>, tensor<3x5xf32, #tp.chip<0>>) outs(%z0 : tensor<4x5xf32, #tp.chip<0>>) -> tensor<4x5xf32, #tp.chip<0>>
      tp.yield %3 : tensor<4x5xf32, #tp.chip<0>>
    } : tensor<4x5xf32, #tp.chip<0>>
    %r0_p0s0 = tp.section "r0.p0s0" on [0] {
      %4 = tensor.extract_slice %p0[0, 0] [2, 5] [1, 1] : tensor<4x5xf32, #tp.chip<0>> to tensor<2x5xf32, #tp.chip<0>>
      tp.yield %4 : tensor<2x5xf32, #tp.chip<0>>
    } : tensor<2x5xf32, #tp.chip<0>>
    %r0_p0s1 = tp.section "r0.p0s1" on [0] {
      %5 = tensor.extract_slice %p0[2, 0] [2, 5] [1, 1] : tensor<4x5xf32, #tp.chip<0>> to tensor<2x5xf32, #tp.chip<0>>
      tp.yield %5 : tensor<2x5xf32, #tp.chip<0>>
    } : tensor<2x5xf32, #tp.chip<0>>
    %x1 = tp.section "x1" on [1] {
      %6 = tp.shard %x at #tp.slice<axis = 1, ranges = [(3, 3)], full = [4, 6]> : tensor<4x6xf32> -> tensor<4x3xf32, #tp.chip<1>>
      tp.yield %6 : tensor<4x3xf32, #tp.chip<1>>
    } : tensor<4x3xf32, #tp.chip<1>>
    %w1 = tp.section "w1" on [1] {
      %7 = tp.shard %w at #tp.slice<axis = 0, ranges = [(3, 3)], full = [6, 5]> : tensor<6x5xf32> -> tensor<3x5xf32, #tp.chip<1>>
      tp.yield %7 : tensor<3x5xf32, #tp.chip<1>>
    } : tensor<3x5xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4x5xf32, #tp.chip<1>>
    %z1 = tp.section "z1" on [1] {
      %8 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5xf32, #tp.chip<1>>) -> tensor<4x5xf32, #tp.chip<1>>
      tp.yield %8 : tensor<4x5xf32, #tp.chip<1>>
    } : tensor<4x5xf32, #tp.chip<1>>
    %p1 = tp.section "p1" on [1] {
      %9 = linalg.matmul ins(%x1, %w1 : tensor<4x3xf32, #tp.chip<1>>, tensor<3x5xf32, #tp.chip<1>>) outs(%z1 : tensor<4x5xf32, #tp.chip<1>>) -> tensor<4x5xf32, #tp.chip<1>>
      tp.yield %9 : tensor<4x5xf32, #tp.chip<1>>
    } : tensor<4x5xf32, #tp.chip<1>>
    %r0_p1s0 = tp.section "r0.p1s0" on [1] {
      %10 = tensor.extract_slice %p1[0, 0] [2, 5] [1, 1] : tensor<4x5xf32, #tp.chip<1>> to tensor<2x5xf32, #tp.chip<1>>
      tp.yield %10 : tensor<2x5xf32, #tp.chip<1>>
    } : tensor<2x5xf32, #tp.chip<1>>
    %r0_p1s1 = tp.section "r0.p1s1" on [1] {
      %11 = tensor.extract_slice %p1[2, 0] [2, 5] [1, 1] : tensor<4x5xf32, #tp.chip<1>> to tensor<2x5xf32, #tp.chip<1>>
      tp.yield %11 : tensor<2x5xf32, #tp.chip<1>>
    } : tensor<2x5xf32, #tp.chip<1>>
    %r0_z0 = tensor.empty() : tensor<2x5xf32>
    %r0_z1 = tensor.empty() : tensor<2x5xf32>
    %r0 = tp.section "r0.rs0" on [0] {
      %12 = linalg.add ins(%r0_p0s0, %r0_p1s0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>) outs(%r0_z0 : tensor<2x5xf32>) -> tensor<2x5xf32>
      %13 = tensor.cast %12 : tensor<2x5xf32> to tensor<2x5xf32, #tp.chip<0>>
      tp.yield %13 : tensor<2x5xf32, #tp.chip<0>>
    } : tensor<2x5xf32, #tp.chip<0>>
    %r1 = tp.section "r0.rs1" on [1] {
      %14 = linalg.add ins(%r0_p0s1, %r0_p1s1 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>>) outs(%r0_z1 : tensor<2x5xf32>) -> tensor<2x5xf32>
      %15 = tensor.cast %14 : tensor<2x5xf32> to tensor<2x5xf32, #tp.chip<1>>
      tp.yield %15 : tensor<2x5xf32, #tp.chip<1>>
    } : tensor<2x5xf32, #tp.chip<1>>
    %res0 = tp.section "res0" on [0, 1] {
      %16 = tensor.extract_slice %res[0, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
      tp.yield %16 : tensor<2x5xf32>
    } : tensor<2x5xf32>
    %f0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = tp.section "h0" on [0] {
      %17 = linalg.add ins(%r0, %res0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32>) outs(%f0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
      tp.yield %17 : tensor<2x5xf32, #tp.chip<0>>
    } : tensor<2x5xf32, #tp.chip<0>>
    %res1 = tp.section "res1" on [0, 1] {
      %18 = tensor.extract_slice %res[2, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
      tp.yield %18 : tensor<2x5xf32>
    } : tensor<2x5xf32>
    %f1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = tp.section "h1" on [1] {
      %19 = linalg.add ins(%r1, %res1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32>) outs(%f1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
      tp.yield %19 : tensor<2x5xf32, #tp.chip<1>>
    } : tensor<2x5xf32, #tp.chip<1>>
    %g = tp.section "g" on [0, 1] {
      %20 = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
      tp.yield %20 : tensor<4x5xf32>
    } : tensor<4x5xf32>
    func.return %g : tensor<4x5xf32>
  }
}

