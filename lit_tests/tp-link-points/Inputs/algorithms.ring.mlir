// Generated: tp-opt ../algorithms.mlir --split-input-file --tp-relocate=allreduce=ring --tp-transfers
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
    %s_z0 = tensor.empty() : tensor<1x2xf32>
    %s_z1 = tensor.empty() : tensor<1x2xf32>
    %s_p0s0 = tp.section "s.p0s0" on [0] {
      %2 = tensor.extract_slice %h0[0, 0] [1, 2] [1, 1] : tensor<1x4xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1x2xf32, #tp.chip<0>>
    } : tensor<1x2xf32, #tp.chip<0>>
    %s_p0s1 = tp.section "s.p0s1" on [0] {
      %3 = tensor.extract_slice %h0[0, 2] [1, 2] [1, 1] : tensor<1x4xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
      tp.yield %3 : tensor<1x2xf32, #tp.chip<0>>
    } : tensor<1x2xf32, #tp.chip<0>>
    %s_p1s0 = tp.section "s.p1s0" on [1] {
      %4 = tensor.extract_slice %h1[0, 0] [1, 2] [1, 1] : tensor<1x4xf32, #tp.chip<1>> to tensor<1x2xf32, #tp.chip<1>>
      tp.yield %4 : tensor<1x2xf32, #tp.chip<1>>
    } : tensor<1x2xf32, #tp.chip<1>>
    %s_p1s1 = tp.section "s.p1s1" on [1] {
      %5 = tensor.extract_slice %h1[0, 2] [1, 2] [1, 1] : tensor<1x4xf32, #tp.chip<1>> to tensor<1x2xf32, #tp.chip<1>>
      tp.yield %5 : tensor<1x2xf32, #tp.chip<1>>
    } : tensor<1x2xf32, #tp.chip<1>>
    tp.transfer %s_p1s0 from 1 to 0 : tensor<1x2xf32, #tp.chip<1>>
    %s_rs0 = tp.section "s.rs0" on [0] {
      %6 = linalg.add ins(%s_p1s0, %s_p0s0 : tensor<1x2xf32, #tp.chip<1>>, tensor<1x2xf32, #tp.chip<0>>) outs(%s_z0 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %6 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_p0s1 from 0 to 1 : tensor<1x2xf32, #tp.chip<0>>
    %s_rs1 = tp.section "s.rs1" on [1] {
      %7 = linalg.add ins(%s_p0s1, %s_p1s1 : tensor<1x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<1>>) outs(%s_z1 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %7 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_rs0 from 0 to 1 : tensor<1x2xf32>
    tp.transfer %s_rs1 from 1 to 0 : tensor<1x2xf32>
    %s = tp.section "s" on [0, 1] {
      %8 = tensor.concat dim(1) %s_rs0, %s_rs1 : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
      tp.yield %8 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    %out = tp.section "out" on [0, 1] {
      %9 = arith.addf %x, %s : tensor<1x4xf32>
      tp.yield %9 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @ring3(%p0: tensor<1x6xf32, #tp.chip<0>>, %p1: tensor<1x6xf32, #tp.chip<1>>, %p2: tensor<1x6xf32, #tp.chip<2>>) -> tensor<1x6xf32> {
    %s_z0 = tensor.empty() : tensor<1x2xf32>
    %s_z1 = tensor.empty() : tensor<1x2xf32>
    %s_z2 = tensor.empty() : tensor<1x2xf32>
    %s_p0s0 = tp.section "s.p0s0" on [0] {
      %0 = tensor.extract_slice %p0[0, 0] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
      tp.yield %0 : tensor<1x2xf32, #tp.chip<0>>
    } : tensor<1x2xf32, #tp.chip<0>>
    %s_p0s1 = tp.section "s.p0s1" on [0] {
      %1 = tensor.extract_slice %p0[0, 2] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x2xf32, #tp.chip<0>>
    } : tensor<1x2xf32, #tp.chip<0>>
    %s_p0s2 = tp.section "s.p0s2" on [0] {
      %2 = tensor.extract_slice %p0[0, 4] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<0>> to tensor<1x2xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1x2xf32, #tp.chip<0>>
    } : tensor<1x2xf32, #tp.chip<0>>
    %s_p1s0 = tp.section "s.p1s0" on [1] {
      %3 = tensor.extract_slice %p1[0, 0] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<1>> to tensor<1x2xf32, #tp.chip<1>>
      tp.yield %3 : tensor<1x2xf32, #tp.chip<1>>
    } : tensor<1x2xf32, #tp.chip<1>>
    %s_p1s1 = tp.section "s.p1s1" on [1] {
      %4 = tensor.extract_slice %p1[0, 2] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<1>> to tensor<1x2xf32, #tp.chip<1>>
      tp.yield %4 : tensor<1x2xf32, #tp.chip<1>>
    } : tensor<1x2xf32, #tp.chip<1>>
    %s_p1s2 = tp.section "s.p1s2" on [1] {
      %5 = tensor.extract_slice %p1[0, 4] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<1>> to tensor<1x2xf32, #tp.chip<1>>
      tp.yield %5 : tensor<1x2xf32, #tp.chip<1>>
    } : tensor<1x2xf32, #tp.chip<1>>
    %s_p2s0 = tp.section "s.p2s0" on [2] {
      %6 = tensor.extract_slice %p2[0, 0] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<2>> to tensor<1x2xf32, #tp.chip<2>>
      tp.yield %6 : tensor<1x2xf32, #tp.chip<2>>
    } : tensor<1x2xf32, #tp.chip<2>>
    %s_p2s1 = tp.section "s.p2s1" on [2] {
      %7 = tensor.extract_slice %p2[0, 2] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<2>> to tensor<1x2xf32, #tp.chip<2>>
      tp.yield %7 : tensor<1x2xf32, #tp.chip<2>>
    } : tensor<1x2xf32, #tp.chip<2>>
    %s_p2s2 = tp.section "s.p2s2" on [2] {
      %8 = tensor.extract_slice %p2[0, 4] [1, 2] [1, 1] : tensor<1x6xf32, #tp.chip<2>> to tensor<1x2xf32, #tp.chip<2>>
      tp.yield %8 : tensor<1x2xf32, #tp.chip<2>>
    } : tensor<1x2xf32, #tp.chip<2>>
    tp.transfer %s_p1s0 from 1 to 2 : tensor<1x2xf32, #tp.chip<1>>
    %s_rs0t1 = tp.section "s.rs0.t1" on [2] {
      %9 = linalg.add ins(%s_p1s0, %s_p2s0 : tensor<1x2xf32, #tp.chip<1>>, tensor<1x2xf32, #tp.chip<2>>) outs(%s_z0 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %9 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_p2s1 from 2 to 0 : tensor<1x2xf32, #tp.chip<2>>
    %s_rs1t1 = tp.section "s.rs1.t1" on [0] {
      %10 = linalg.add ins(%s_p2s1, %s_p0s1 : tensor<1x2xf32, #tp.chip<2>>, tensor<1x2xf32, #tp.chip<0>>) outs(%s_z1 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %10 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_p0s2 from 0 to 1 : tensor<1x2xf32, #tp.chip<0>>
    %s_rs2t1 = tp.section "s.rs2.t1" on [1] {
      %11 = linalg.add ins(%s_p0s2, %s_p1s2 : tensor<1x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<1>>) outs(%s_z2 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %11 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_rs0t1 from 2 to 0 : tensor<1x2xf32>
    %s_rs0 = tp.section "s.rs0" on [0] {
      %12 = linalg.add ins(%s_rs0t1, %s_p0s0 : tensor<1x2xf32>, tensor<1x2xf32, #tp.chip<0>>) outs(%s_z0 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %12 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_rs1t1 from 0 to 1 : tensor<1x2xf32>
    %s_rs1 = tp.section "s.rs1" on [1] {
      %13 = linalg.add ins(%s_rs1t1, %s_p1s1 : tensor<1x2xf32>, tensor<1x2xf32, #tp.chip<1>>) outs(%s_z1 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %13 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_rs2t1 from 1 to 2 : tensor<1x2xf32>
    %s_rs2 = tp.section "s.rs2" on [2] {
      %14 = linalg.add ins(%s_rs2t1, %s_p2s2 : tensor<1x2xf32>, tensor<1x2xf32, #tp.chip<2>>) outs(%s_z2 : tensor<1x2xf32>) -> tensor<1x2xf32>
      tp.yield %14 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    tp.transfer %s_rs0 from 0 to 1 : tensor<1x2xf32>
    tp.transfer %s_rs0 from 0 to 2 : tensor<1x2xf32>
    tp.transfer %s_rs1 from 1 to 0 : tensor<1x2xf32>
    tp.transfer %s_rs1 from 1 to 2 : tensor<1x2xf32>
    tp.transfer %s_rs2 from 2 to 0 : tensor<1x2xf32>
    tp.transfer %s_rs2 from 2 to 1 : tensor<1x2xf32>
    %s = tp.section "s" on [0, 1, 2] {
      %15 = tensor.concat dim(1) %s_rs0, %s_rs1, %s_rs2 : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x6xf32>
      tp.yield %15 : tensor<1x6xf32>
    } : tensor<1x6xf32>
    func.return %s : tensor<1x6xf32>
  }
}

