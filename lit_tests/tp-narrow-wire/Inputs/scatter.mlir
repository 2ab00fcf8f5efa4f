// Generated: tp-opt ../../tp-sequence-parallel/rows.mlir --split-input-file -p tp-sequence-parallel{mode=on}
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %res: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
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
    %s_b0, %s_b1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    %res_w0 = tensor.extract_slice %res[0, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32, #tp.chip<0>>
    %h_b0 = arith.addf %s_b0, %res_w0 : tensor<2x8xf32, #tp.chip<0>>
    %res_w1 = tensor.extract_slice %res[2, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32, #tp.chip<1>>
    %h_b1 = arith.addf %s_b1, %res_w1 : tensor<2x8xf32, #tp.chip<1>>
    %h = tp.all_gather %h_b0, %h_b1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    %0 = tensor.empty() : tensor<2xf32, #tp.chip<0>>
    %1 = linalg.fill ins(%zero : f32) outs(%0 : tensor<2xf32, #tp.chip<0>>) -> tensor<2xf32, #tp.chip<0>>
    %ss_b0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%h_b0 : tensor<2x8xf32, #tp.chip<0>>) outs(%1 : tensor<2xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %sum = arith.addf %acc, %sq : f32
      linalg.yield %sum : f32
    } -> tensor<2xf32, #tp.chip<0>>
    %2 = tensor.empty() : tensor<2xf32, #tp.chip<1>>
    %3 = linalg.fill ins(%zero : f32) outs(%2 : tensor<2xf32, #tp.chip<1>>) -> tensor<2xf32, #tp.chip<1>>
    %ss_b1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%h_b1 : tensor<2x8xf32, #tp.chip<1>>) outs(%3 : tensor<2xf32, #tp.chip<1>>) {
    ^bb0(%a_1: f32, %acc_1: f32):
      %sq_1 = arith.mulf %a_1, %a_1 : f32
      %sum_1 = arith.addf %acc_1, %sq_1 : f32
      linalg.yield %sum_1 : f32
    } -> tensor<2xf32, #tp.chip<1>>
    %4 = tensor.empty() : tensor<2x8xf32, #tp.chip<0>>
    %y_b0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h_b0, %ss_b0, %g : tensor<2x8xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<0>>, tensor<8xf32>) outs(%4 : tensor<2x8xf32, #tp.chip<0>>) {
    ^bb0(%b: f32, %q: f32, %gw: f32, %o: f32):
      %r = math.rsqrt %q : f32
      %n = arith.mulf %b, %r : f32
      %m = arith.mulf %n, %gw : f32
      linalg.yield %m : f32
    } -> tensor<2x8xf32, #tp.chip<0>>
    %5 = tensor.empty() : tensor<2x8xf32, #tp.chip<1>>
    %y_b1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h_b1, %ss_b1, %g : tensor<2x8xf32, #tp.chip<1>>, tensor<2xf32, #tp.chip<1>>, tensor<8xf32>) outs(%5 : tensor<2x8xf32, #tp.chip<1>>) {
    ^bb0(%b_1: f32, %q_1: f32, %gw_1: f32, %o_1: f32):
      %r_1 = math.rsqrt %q_1 : f32
      %n_1 = arith.mulf %b_1, %r_1 : f32
      %m_1 = arith.mulf %n_1, %gw_1 : f32
      linalg.yield %m_1 : f32
    } -> tensor<2x8xf32, #tp.chip<1>>
    %y = tp.all_gather %y_b0, %y_b1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    func.return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @one_row(%x: tensor<1x8xf32>, %w: tensor<8x8xf32>, %res: tensor<1x8xf32>, %g: tensor<8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
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
    %s_b0, %s_b1 = tp.reduce_scatter %p0, %p1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]>] : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>> -> tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>>
    %res_w0 = tensor.extract_slice %res[0, 0] [1, 4] [1, 1] : tensor<1x8xf32> to tensor<1x4xf32, #tp.chip<0>>
    %h_b0 = arith.addf %s_b0, %res_w0 : tensor<1x4xf32, #tp.chip<0>>
    %res_w1 = tensor.extract_slice %res[0, 4] [1, 4] [1, 1] : tensor<1x8xf32> to tensor<1x4xf32, #tp.chip<1>>
    %h_b1 = arith.addf %s_b1, %res_w1 : tensor<1x4xf32, #tp.chip<1>>
    %h = tp.all_gather %h_b0, %h_b1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x8xf32>
    %ze = tensor.empty() : tensor<1xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%ze : tensor<1xf32>) -> tensor<1xf32>
    %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%h : tensor<1x8xf32>) outs(%zs : tensor<1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %sum = arith.addf %acc, %sq : f32
      linalg.yield %sum : f32
    } -> tensor<1xf32>
    %g_w0 = tensor.extract_slice %g[0] [4] [1] : tensor<8xf32> to tensor<4xf32, #tp.chip<0>>
    %0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %y_b0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h_b0, %ss, %g_w0 : tensor<1x4xf32, #tp.chip<0>>, tensor<1xf32>, tensor<4xf32, #tp.chip<0>>) outs(%0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%b: f32, %q: f32, %gw: f32, %o: f32):
      %r = math.rsqrt %q : f32
      %n = arith.mulf %b, %r : f32
      %m = arith.mulf %n, %gw : f32
      linalg.yield %m : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %g_w1 = tensor.extract_slice %g[4] [4] [1] : tensor<8xf32> to tensor<4xf32, #tp.chip<1>>
    %1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %y_b1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h_b1, %ss, %g_w1 : tensor<1x4xf32, #tp.chip<1>>, tensor<1xf32>, tensor<4xf32, #tp.chip<1>>) outs(%1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%b_1: f32, %q_1: f32, %gw_1: f32, %o_1: f32):
      %r_1 = math.rsqrt %q_1 : f32
      %n_1 = arith.mulf %b_1, %r_1 : f32
      %m_1 = arith.mulf %n_1, %gw_1 : f32
      linalg.yield %m_1 : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %y = tp.all_gather %y_b0, %y_b1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x8xf32>
    func.return %y, %h : tensor<1x8xf32>, tensor<1x8xf32>
  }
}

