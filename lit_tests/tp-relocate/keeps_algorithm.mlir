// tp-relocate without allreduce= or maxloc= keeps the algorithm a collective states (what
// tp-choose-collectives wrote: `tp-choose-collectives{allreduce=ring},tp-relocate` places a
// ring) and gives `fold` to one stating none; allreduce= (or maxloc=) rewrites every one.
// RUN: tp-opt %s --tp-relocate | filecheck %s
// RUN: tp-opt %s --tp-relocate=allreduce=fold | filecheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @two
// CHECK:      %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:   %{{.*}} = tp.allreduce %h0, %h1 algorithm "ring"
// CHECK:      %t = tp.section "t" on [0, 1] {
// CHECK-NEXT:   %{{.*}} = tp.allreduce %g0, %g1 algorithm "fold"
// FOLD-LABEL: func.func @two
// FOLD:       tp.allreduce %h0, %h1 algorithm "fold"
// FOLD:       tp.allreduce %g0, %g1 algorithm "fold"
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @two(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.add ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.add ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 algorithm "ring" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %g0 = linalg.add ins(%s, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %g1 = linalg.add ins(%s, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %t = tp.allreduce %g0, %g1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    func.return %t : tensor<1x4xf32>
  }
}
