// tp-sequence-parallel: the row-wise work after an all-reduce (the residual add, an RMSNorm's
// sum of squares and scaling) runs on each chip's block of the rows, between a
// tp.reduce_scatter and a tp.all_gather of each value read whole. The residual's rows are
// windows of it (chip c's), the norm's weight is read whole, inits are made afresh. With one
// row (a decode step) the only axis of 2 positions is the hidden one: the norm's sum of
// squares, which sums over it, reads the residual add's result whole (gathered), and only
// the scaling runs on blocks again; mode=auto keeps the all-reduce there (and, on sn40l, for
// these tiny rows too: the collectives' latency outweighs the work).
// RUN: tp-opt %s --split-input-file -p 'tp-sequence-parallel{mode=on}' | filecheck %s
// RUN: tp-opt %s --split-input-file -p 'tp-sequence-parallel{report=true}' -o /dev/null 2>&1 | filecheck %s --check-prefix=AUTO
// RUN: not tp-opt %s --split-input-file -p 'tp-relocate,tp-sequence-parallel' 2>&1 | filecheck %s --check-prefix=SECTIONED

// CHECK-LABEL: func.func @rows
// CHECK:      %s_b0, %s_b1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>]
// CHECK-NEXT: %res_w0 = tensor.extract_slice %res[0, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32, #tp.chip<0>>
// CHECK-NEXT: %h_b0 = arith.addf %s_b0, %res_w0 : tensor<2x8xf32, #tp.chip<0>>
// CHECK-NEXT: %res_w1 = tensor.extract_slice %res[2, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32, #tp.chip<1>>
// CHECK-NEXT: %h_b1 = arith.addf %s_b1, %res_w1 : tensor<2x8xf32, #tp.chip<1>>
// CHECK-NEXT: %h = tp.all_gather %h_b0, %h_b1
// CHECK:      %ss_b0 = linalg.generic {{.*}} ins(%h_b0 : tensor<2x8xf32, #tp.chip<0>>)
// CHECK:      %ss_b1 = linalg.generic {{.*}} ins(%h_b1 : tensor<2x8xf32, #tp.chip<1>>)
// CHECK:      %y_b0 = linalg.generic {{.*}} ins(%h_b0, %ss_b0, %g : tensor<2x8xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<0>>, tensor<8xf32>)
// CHECK:      %y_b1 = linalg.generic {{.*}} ins(%h_b1, %ss_b1, %g
// CHECK:      %y = tp.all_gather %y_b0, %y_b1
// CHECK-NEXT: func.return %y, %h
// CHECK-NOT:  tp.allreduce

// AUTO: tp-sequence-parallel: @rows: 1 all-reduce(s), 3 row-wise op(s), 2 gathered; {{.*}} -> kept
// AUTO: tp-sequence-parallel: @one_row: 1 all-reduce(s), 2 row-wise op(s), 2 gathered; {{.*}} -> kept

// SECTIONED: error: tp-sequence-parallel runs on statements: run it before tp-relocate
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %res: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4x8xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8xf32, #tp.chip<0>>) -> tensor<4x8xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<4x4xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<4x8xf32, #tp.chip<0>>) -> tensor<4x8xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4x8xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32, #tp.chip<1>>) -> tensor<4x8xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<4x4xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<4x8xf32, #tp.chip<1>>) -> tensor<4x8xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    %h = arith.addf %s, %res : tensor<4x8xf32>
    %ze = tensor.empty() : tensor<4xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%ze : tensor<4xf32>) -> tensor<4xf32>
    %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%h : tensor<4x8xf32>) outs(%zs : tensor<4xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %sum = arith.addf %acc, %sq : f32
      linalg.yield %sum : f32
    } -> tensor<4xf32>
    %ye = tensor.empty() : tensor<4x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h, %ss, %g : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) outs(%ye : tensor<4x8xf32>) {
    ^bb0(%b: f32, %q: f32, %gw: f32, %o: f32):
      %r = math.rsqrt %q : f32
      %n = arith.mulf %b, %r : f32
      %m = arith.mulf %n, %gw : f32
      linalg.yield %m : f32
    } -> tensor<4x8xf32>
    func.return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
// -----
// CHECK-LABEL: func.func @one_row
// CHECK:      %s_b0, %s_b1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]>]
// CHECK:      %h = tp.all_gather %h_b0, %h_b1
// CHECK:      %ss = linalg.generic {{.*}} ins(%h : tensor<1x8xf32>)
// CHECK:      %g_w0 = tensor.extract_slice %g[0] [4] [1] : tensor<8xf32> to tensor<4xf32, #tp.chip<0>>
// CHECK:      %y_b0 = linalg.generic {{.*}} ins(%h_b0, %ss, %g_w0 : tensor<1x4xf32, #tp.chip<0>>, tensor<1xf32>, tensor<4xf32, #tp.chip<0>>)
// CHECK:      %y = tp.all_gather %y_b0, %y_b1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @one_row(%x: tensor<1x8xf32>, %w: tensor<8x8xf32>, %res: tensor<1x8xf32>, %g: tensor<8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]> : tensor<1x8xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %p0 = linalg.matmul ins(%x0, %w0 : tensor<1x4xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x8xf32, #tp.chip<0>>) -> tensor<1x8xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]> : tensor<1x8xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %p1 = linalg.matmul ins(%x1, %w1 : tensor<1x4xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x8xf32, #tp.chip<1>>) -> tensor<1x8xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %p1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>> -> tensor<1x8xf32>
    %h = arith.addf %s, %res : tensor<1x8xf32>
    %ze = tensor.empty() : tensor<1xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%ze : tensor<1xf32>) -> tensor<1xf32>
    %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%h : tensor<1x8xf32>) outs(%zs : tensor<1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %sum = arith.addf %acc, %sq : f32
      linalg.yield %sum : f32
    } -> tensor<1xf32>
    %ye = tensor.empty() : tensor<1x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h, %ss, %g : tensor<1x8xf32>, tensor<1xf32>, tensor<8xf32>) outs(%ye : tensor<1x8xf32>) {
    ^bb0(%b: f32, %q: f32, %gw: f32, %o: f32):
      %r = math.rsqrt %q : f32
      %n = arith.mulf %b, %r : f32
      %m = arith.mulf %n, %gw : f32
      linalg.yield %m : f32
    } -> tensor<1x8xf32>
    func.return %y, %h : tensor<1x8xf32>, tensor<1x8xf32>
  }
}