// tp-narrow-wire{wire=int8 shim=sn40l-int8}: an all-gather whose every reader takes int8 (here
// each chip's projection, first operand) carries int8. Each chip finds its block's largest
// magnitude, quantizes by amax/127 (round half to even, clamp to ±127) into i8, and sends a
// scale per row of its block; the gathered i8 tensor times its rows' scales is the whole.
// RUN: tp-opt %s -p 'tp-verify,tp-narrow-wire{wire=int8 shim=sn40l-int8 report=true}' 2>&1 | filecheck %s

// CHECK: tp-narrow-wire: %g: int8 on the wire (a scale per block)
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.wire = "int8", tp.certificate
// CHECK:      %b0_amax = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%b0 : tensor<3x8xf32, #tp.chip<0>>) outs({{.*}} : tensor<f32, #tp.chip<0>>)
// CHECK:        math.absf
// CHECK:        arith.maximumf
// CHECK:      %b0_i8 = linalg.generic {{.*}} ins(%b0, %b0_amax : tensor<3x8xf32, #tp.chip<0>>, tensor<f32, #tp.chip<0>>)
// CHECK:        math.roundeven
// CHECK:        arith.fptosi {{.*}} : f32 to i8
// CHECK:      %b0_scale = linalg.generic {{.*}} ins(%b0_amax : tensor<f32, #tp.chip<0>>) outs({{.*}} : tensor<3xf32, #tp.chip<0>>)
// CHECK:      %g_i8 = tp.all_gather %b0_i8, %b1_i8 {{.*}} : tensor<3x8xi8, #tp.chip<0>>, tensor<2x8xi8, #tp.chip<1>> -> tensor<5x8xi8>
// CHECK-NEXT: %g_scale = tp.all_gather %b0_scale, %b1_scale {{.*}} : tensor<3xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> -> tensor<5xf32>
// CHECK:      %g = linalg.generic {{.*}} ins(%g_i8, %g_scale : tensor<5x8xi8>, tensor<5xf32>)
// CHECK:        arith.sitofp
// CHECK:        arith.mulf
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<5x8xf32>, %w: tensor<8x8xf32>) -> tensor<5x8xf32> {
    %zero = arith.constant 0.0 : f32
    %b0 = tp.shard %x at #tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 8]> : tensor<5x8xf32> -> tensor<3x8xf32, #tp.chip<0>>
    %b1 = tp.shard %x at #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 8]> : tensor<5x8xf32> -> tensor<2x8xf32, #tp.chip<1>>
    %g = tp.all_gather %b0, %b1 slices [#tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 8]>, #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 8]>] : tensor<3x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<5x8xf32>
    %w0 = tp.shard %w at #tp.slice<axis = 1, ranges = [(0, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<8x4xf32, #tp.chip<0>>
    %e0 = tensor.empty() : tensor<5x4xf32, #tp.chip<0>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<5x4xf32, #tp.chip<0>>) -> tensor<5x4xf32, #tp.chip<0>>
    %p0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g, %w0 : tensor<5x8xf32>, tensor<8x4xf32, #tp.chip<0>>) outs(%z0 : tensor<5x4xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    } -> tensor<5x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 1, ranges = [(4, 4)], full = [8, 8]> : tensor<8x8xf32> -> tensor<8x4xf32, #tp.chip<1>>
    %e1 = tensor.empty() : tensor<5x4xf32, #tp.chip<1>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<5x4xf32, #tp.chip<1>>) -> tensor<5x4xf32, #tp.chip<1>>
    %p1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g, %w1 : tensor<5x8xf32>, tensor<8x4xf32, #tp.chip<1>>) outs(%z1 : tensor<5x4xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    } -> tensor<5x4xf32, #tp.chip<1>>
    %y = tp.unshard %p0, %p1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [5, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [5, 8]>] : tensor<5x4xf32, #tp.chip<0>>, tensor<5x4xf32, #tp.chip<1>> -> tensor<5x8xf32>
    func.return %y : tensor<5x8xf32>
  }
}
