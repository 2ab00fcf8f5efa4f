// tp-sequence-parallel with tiles: each partial is made and reduce-scattered tile by tile,
// and on the gather side what reads the gathered tiles row by row reads them tile by tile —
// the projection of the gathered norm (%u), what follows it row by row (%v) and the next
// partial (%d) run once per tile on that tile's rows, ordered tile by tile (a chip runs its
// statements in order): tile 0's MLP runs while tile 1's rows cross the links, and the
// reduce-scatters follow every tile, tile 0's crossing under tile 1's MLP (collective matmul
// on both sides). Only the value the function returns is joined.
// The lowered programs are certified again.
// RUN: tp-opt %s -p 'tp-sequence-parallel{mode=on tiles=2}' | filecheck %s
// RUN: tp-opt %s -p 'tp-sequence-parallel{mode=on tiles=2},tp-relocate,tp-transfers,tp-link-points' | tp-opt --tp-verify | filecheck %s --check-prefix=CERT

// CHECK-LABEL: func.func @mlp
// CHECK:       %s_t0b0, %s_t0b1 = tp.reduce_scatter %p0_t0, %p1_t0
// CHECK:       %s_t1b0, %s_t1b1 = tp.reduce_scatter %p0_t1, %p1_t1
// CHECK:       %y_t0 = tp.all_gather %y_t0b0, %y_t0b1
// CHECK-NOT:   tensor.concat
// CHECK:       %u0_t0 = linalg.generic {{.*}} ins(%y_t0, %wu0 : tensor<2x8xf32>, tensor<4x8xf32, #tp.chip<0>>)
// CHECK:       %v0_t0 = linalg.generic {{.*}} ins(%u0_t0 : tensor<2x4xf32, #tp.chip<0>>)
// CHECK:       %d0_t0 = linalg.generic {{.*}} ins(%v0_t0, %wd0 : tensor<2x4xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>)
// CHECK:       %d1_t0 = linalg.generic
// CHECK-NEXT:  ^bb0
// CHECK:       %y_t1 = tp.all_gather %y_t1b0, %y_t1b1
// CHECK:       %u0_t1 = linalg.generic {{.*}} ins(%y_t1, %wu0 : tensor<2x8xf32>, tensor<4x8xf32, #tp.chip<0>>)
// CHECK:       %v0_t1 = linalg.generic {{.*}} ins(%u0_t1 : tensor<2x4xf32, #tp.chip<0>>)
// CHECK:       %d0_t1 = linalg.generic {{.*}} ins(%v0_t1, %wd0 : tensor<2x4xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>)
// CHECK:       %t_t0b0, %t_t0b1 = tp.reduce_scatter %d0_t0, %d1_t0
// CHECK-NEXT:  %t_t1b0, %t_t1b1 = tp.reduce_scatter %d0_t1, %d1_t1
// CHECK:       %out = tensor.concat dim(0) %out_t0, %out_t1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  func.return %out

// CERT-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation"
// CERT:        tp.chip_program on 0
// CERT:        tp.chip_program on 1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %res: tensor<4x8xf32>, %g: tensor<8xf32>, %wu: tensor<8x8xf32>, %wd: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %zero = arith.constant 0.0 : f32
    %x0 = tp.shard %x at #tp.slice<axis = 1, ranges = [(0, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<4x8xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8xf32, #tp.chip<0>>) -> tensor<4x8xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x0, %w0 : tensor<4x4xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<4x8xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 1, ranges = [(4, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<4x8xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32, #tp.chip<1>>) -> tensor<4x8xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1, %w1 : tensor<4x4xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<4x8xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32, #tp.chip<1>>
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
      %mm = arith.mulf %n, %gw : f32
      linalg.yield %mm : f32
    } -> tensor<4x8xf32>
    %wu0 = tp.shard %wu at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<0>>
    %f0 = tensor.empty() : tensor<4x4xf32, #tp.chip<0>>
    %uz0 = linalg.fill ins(%zero : f32) outs(%f0 : tensor<4x4xf32, #tp.chip<0>>) -> tensor<4x4xf32, #tp.chip<0>>
    %u0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y, %wu0 : tensor<4x8xf32>, tensor<4x8xf32, #tp.chip<0>>) outs(%uz0 : tensor<4x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s2 = arith.addf %acc, %m : f32
      linalg.yield %s2 : f32
    } -> tensor<4x4xf32, #tp.chip<0>>
    %v0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%u0 : tensor<4x4xf32, #tp.chip<0>>) outs(%f0 : tensor<4x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %o: f32):
      %q = arith.mulf %a, %a : f32
      linalg.yield %q : f32
    } -> tensor<4x4xf32, #tp.chip<0>>
    %wd0 = tp.shard %wd at #tp.slice<axis = 1, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %dz0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8xf32, #tp.chip<0>>) -> tensor<4x8xf32, #tp.chip<0>>
    %d0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%v0, %wd0 : tensor<4x4xf32, #tp.chip<0>>, tensor<8x4xf32, #tp.chip<0>>) outs(%dz0 : tensor<4x8xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s2 = arith.addf %acc, %m : f32
      linalg.yield %s2 : f32
    } -> tensor<4x8xf32, #tp.chip<0>>
    %wu1 = tp.shard %wu at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<4x8xf32, #tp.chip<1>>
    %f1 = tensor.empty() : tensor<4x4xf32, #tp.chip<1>>
    %uz1 = linalg.fill ins(%zero : f32) outs(%f1 : tensor<4x4xf32, #tp.chip<1>>) -> tensor<4x4xf32, #tp.chip<1>>
    %u1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y, %wu1 : tensor<4x8xf32>, tensor<4x8xf32, #tp.chip<1>>) outs(%uz1 : tensor<4x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s2 = arith.addf %acc, %m : f32
      linalg.yield %s2 : f32
    } -> tensor<4x4xf32, #tp.chip<1>>
    %v1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%u1 : tensor<4x4xf32, #tp.chip<1>>) outs(%f1 : tensor<4x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %o: f32):
      %q = arith.mulf %a, %a : f32
      linalg.yield %q : f32
    } -> tensor<4x4xf32, #tp.chip<1>>
    %wd1 = tp.shard %wd at #tp.slice<axis = 1, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %dz1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32, #tp.chip<1>>) -> tensor<4x8xf32, #tp.chip<1>>
    %d1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%v1, %wd1 : tensor<4x4xf32, #tp.chip<1>>, tensor<8x4xf32, #tp.chip<1>>) outs(%dz1 : tensor<4x8xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s2 = arith.addf %acc, %m : f32
      linalg.yield %s2 : f32
    } -> tensor<4x8xf32, #tp.chip<1>>
    %t = tp.allreduce %d0, %d1 : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    %out = arith.addf %t, %h : tensor<4x8xf32>
    func.return %out : tensor<4x8xf32>
  }
}
