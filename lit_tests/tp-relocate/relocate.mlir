// tp-relocate: every statement a section on the chip(s) of what it binds. Chip-local
// statements on their chip; spine statements on every chip (replicated, unmarked); an
// all-reduce as one section over all chips (the seed's fold by default, or a ring); the
// host's store over its parts' chips. Constants stay outside sections.
// RUN: tp-opt %s --split-input-file --tp-relocate | filecheck %s
// RUN: tp-opt %s --split-input-file --tp-relocate=allreduce=ring | filecheck %s --check-prefix=RING
// RUN: not tp-opt %s --tp-relocate=allreduce=tree 2>&1 | filecheck %s --check-prefix=BADOPT

// The Megatron MLP on 2 chips.
// CHECK-LABEL: func.func @mlp
// CHECK:      %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
// CHECK:      %w0 = tp.section "w0" on [0] {
// CHECK-NEXT:   %{{.*}} = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>
// CHECK:      } : tensor<1x4xf32, #tp.chip<0>>
// CHECK:      %w1 = tp.section "w1" on [1] {
// CHECK:      %h0 = tp.section "h0" on [0] {
// CHECK-NEXT:   %{{.*}} = linalg.add ins(%x, %w0
// CHECK:      %h1 = tp.section "h1" on [1] {
// CHECK:      %s = tp.section "s" on [0, 1] {
// CHECK-NEXT:   %{{.*}} = tp.allreduce %h0, %h1 algorithm "fold"
// CHECK:      } : tensor<1x4xf32>
// The residual add is spine: replicated on every chip, unmarked.
// CHECK:      %out = tp.section "out" on [0, 1] {
// CHECK-NEXT:   %{{.*}} = arith.addf %x, %s : tensor<1x4xf32>
// CHECK:      func.return %out
// RING-LABEL: func.func @mlp
// RING:       tp.allreduce %h0, %h1 algorithm "ring"
// BADOPT: error: bad pass pipeline 'tp-relocate{allreduce=tree}': Incompatible types: given ('tree',), expected typing.Optional[typing.Literal['fold', 'ring', 'oneshot', 'twoshot', 'auto']]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x4xf32> {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.add ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.add ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %out = arith.addf %x, %s : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
// Attention's KV cache: each chip's slice of the cache is written in place on that chip,
// and the host stores the chips' caches back (a section over the chips of the parts).
// CHECK-LABEL: func.func @cache
// CHECK:      %k0 = tp.section "k0" on [0] {
// CHECK:      %new0 = tp.section "new0" on [0] {
// CHECK-NEXT:   %{{.*}} = tensor.insert_slice %row0 into %k0[0, %pos, 0]
// CHECK:      %new1 = tp.section "new1" on [1] {
// CHECK:      %present = tp.section "present" on [0, 1] {
// CHECK-NEXT:   %{{.*}} = tp.unshard %new0, %new1
// CHECK:      func.return %present
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cache(%past: tensor<2x4x2xf32>, %row0: tensor<1x1x2xf32, #tp.chip<0>>, %row1: tensor<1x1x2xf32, #tp.chip<1>>, %pos: index) -> tensor<2x4x2xf32> {
    %k0 = tp.shard %past at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4, 2]> : tensor<2x4x2xf32> -> tensor<1x4x2xf32, #tp.chip<0>>
    %k1 = tp.shard %past at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4, 2]> : tensor<2x4x2xf32> -> tensor<1x4x2xf32, #tp.chip<1>>
    %new0 = tensor.insert_slice %row0 into %k0[0, %pos, 0] [1, 1, 2] [1, 1, 1] : tensor<1x1x2xf32, #tp.chip<0>> into tensor<1x4x2xf32, #tp.chip<0>>
    %new1 = tensor.insert_slice %row1 into %k1[0, %pos, 0] [1, 1, 2] [1, 1, 1] : tensor<1x1x2xf32, #tp.chip<1>> into tensor<1x4x2xf32, #tp.chip<1>>
    %present = tp.unshard %new0, %new1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4, 2]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4, 2]>] : tensor<1x4x2xf32, #tp.chip<0>>, tensor<1x4x2xf32, #tp.chip<1>> -> tensor<2x4x2xf32>
    func.return %present : tensor<2x4x2xf32>
  }
}
