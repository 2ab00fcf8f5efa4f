// Generated: tp-opt ../epilogue.mlir --split-input-file --tp-relocate="allreduce=twoshot epilogue=true"
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @residual(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>, %h: tensor<1x64xf32>, %g: tensor<1x64xf32>) -> (tensor<1x64xf32>, tensor<1x64xf32>) {
    %r, %y = tp.section "s" on [0, 1] {
      %s = tp.allreduce %p0, %p1 algorithm "twoshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      %r_1 = arith.addf %h, %s : tensor<1x64xf32>
      %y_1 = arith.mulf %r_1, %r_1 : tensor<1x64xf32>
      tp.yield %r_1, %y_1 : tensor<1x64xf32>, tensor<1x64xf32>
    } : tensor<1x64xf32>, tensor<1x64xf32>
    %other = tp.section "other" on [0, 1] {
      %0 = arith.mulf %g, %g : tensor<1x64xf32>
      tp.yield %0 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %z = tp.section "z" on [0, 1] {
      %1 = arith.addf %y, %other : tensor<1x64xf32>
      tp.yield %1 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    func.return %r, %z : tensor<1x64xf32>, tensor<1x64xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_work(%p0: tensor<1x64xf32, #tp.chip<0>>, %p1: tensor<1x64xf32, #tp.chip<1>>) -> tensor<1x32xf32, #tp.chip<0>> {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "twoshot" : tensor<1x64xf32, #tp.chip<0>>, tensor<1x64xf32, #tp.chip<1>> -> tensor<1x64xf32>
      tp.yield %0 : tensor<1x64xf32>
    } : tensor<1x64xf32>
    %t = tp.section "t" on [0] {
      %1 = tp.shard %s at #tp.slice<axis = 1, ranges = [(0, 32)], full = [1, 64]> : tensor<1x64xf32> -> tensor<1x32xf32, #tp.chip<0>>
      tp.yield %1 : tensor<1x32xf32, #tp.chip<0>>
    } : tensor<1x32xf32, #tp.chip<0>>
    func.return %t : tensor<1x32xf32, #tp.chip<0>>
  }
}

