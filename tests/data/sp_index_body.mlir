
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
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %fi = arith.sitofp %ii : i64 to f32
      %mm = arith.mulf %m, %fi : f32
      linalg.yield %mm : f32
    } -> tensor<4x8xf32>
    func.return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
