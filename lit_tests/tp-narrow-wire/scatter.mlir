// After tp-sequence-parallel, tp-narrow-wire narrows a reduce-scatter whose blocks are read
// as bf16 (the residual add, on sn40l) — partials rounded on their chips, the adds in bf16,
// each block widened — and an all-gather whose gathered tensor is (here by an elementwise
// square, on sn40l): each block rounded on its chip, the whole widened. A gathered tensor the
// function returns keeps its width.
// RUN: tp-opt %S/Inputs/scatter.mlir --split-input-file -p 'tp-narrow-wire' | filecheck %s --check-prefix=SCATTER
// RUN: tp-opt %s -p 'tp-narrow-wire{report=true}' 2>&1 | filecheck %s

// Each partial is rounded right after it is made (tp-fuse can then fuse the rounding into
// its contraction, a tile's before the next tile's contraction).
// SCATTER-LABEL: func.func @rows
// SCATTER:      %p0 = linalg.matmul
// SCATTER-NEXT: %p0_bf16 = arith.truncf %p0 : tensor<4x8xf32, #tp.chip<0>> to tensor<4x8xbf16, #tp.chip<0>>
// SCATTER:      %p1 = linalg.matmul
// SCATTER-NEXT: %p1_bf16 = arith.truncf %p1
// SCATTER-NEXT: %s_b0_bf16, %s_b1_bf16 = tp.reduce_scatter %p0_bf16, %p1_bf16
// SCATTER-NEXT: %s_b0 = arith.extf %s_b0_bf16 : tensor<2x8xbf16, #tp.chip<0>> to tensor<2x8xf32, #tp.chip<0>>
// SCATTER-NEXT: %s_b1 = arith.extf %s_b1_bf16
// SCATTER:      %h = tp.all_gather %h_b0, %h_b1 {{.*}} -> tensor<4x8xf32>

// CHECK: tp-narrow-wire: %g: bf16 on the wire
// CHECK-LABEL: func.func @gathered
// CHECK:      %b0 = tp.shard
// CHECK-NEXT: %b0_bf16 = arith.truncf %b0 : tensor<2x8xf32, #tp.chip<0>> to tensor<2x8xbf16, #tp.chip<0>>
// CHECK-NEXT: %b1 = tp.shard
// CHECK-NEXT: %b1_bf16 = arith.truncf %b1
// CHECK-NEXT: %g_bf16 = tp.all_gather %b0_bf16, %b1_bf16 {{.*}} -> tensor<4x8xbf16>
// CHECK-NEXT: %g = arith.extf %g_bf16 : tensor<4x8xbf16> to tensor<4x8xf32>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @gathered(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %b0 = tp.shard %x at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]> : tensor<4x8xf32> -> tensor<2x8xf32, #tp.chip<0>>
    %b1 = tp.shard %x at #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]> : tensor<4x8xf32> -> tensor<2x8xf32, #tp.chip<1>>
    %g = tp.all_gather %b0, %b1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    %q = arith.mulf %g, %g : tensor<4x8xf32>
    func.return %q : tensor<4x8xf32>
  }
}
