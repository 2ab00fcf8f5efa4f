// tp-import-shard: MLIR Shard annotations on an unsharded program become the tp program tp-split
// writes from the plan they state; every shard op is consumed.
// RUN: tp-opt %s --split-input-file --tp-import-shard | filecheck %s

// Megatron's MLP annotated as MLIR's sharding propagation takes it: up split along its output
// features (axis 0 of [out, in]), down along its input features (axis 1). The same program as
// tp-split with {"mlp.up": "colwise", "mlp.down": "rowwise"}: the row-split product summed by
// one all-reduce, certified.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// CHECK-NOT:     shard.
// CHECK:         func.func @mlp
// CHECK:         %h_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>
// CHECK:         %h_weight_c1 = tp.shard %up at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>
// CHECK:         %y_weight_c0 = tp.shard %down at #tp.slice<axis = 1, ranges = [(0, 4)], full = [4, 8]>
// CHECK:         %y_sum = tp.allreduce %y_c0, %y_c1
// CHECK-NEXT:    %out = arith.addf %x, %y_sum
// CHECK-NOT:     shard.
builtin.module {
  shard.grid @chips(shape = 2)
  func.func @mlp(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    %col = shard.sharding @chips split_axes = [[0]] : !shard.sharding
    %row = shard.sharding @chips split_axes = [[], [0]] : !shard.sharding
    %up_s = shard.shard %up to %col : tensor<8x4xf32>
    %down_s = shard.shard %down to %row : tensor<4x8xf32>
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up_s : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h, %down_s : tensor<1x8xf32>, tensor<4x8xf32>) outs(%zeros4 : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %out = arith.addf %x, %y : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
// An annotation of an intermediate value that agrees with propagation (the hidden activation
// cut along its features, axis 1) is accepted and consumed.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64
// CHECK:         func.func @claims
// CHECK:         %y_sum = tp.allreduce
// CHECK-NOT:     shard.
builtin.module {
  shard.grid @chips(shape = 2)
  func.func @claims(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    %col = shard.sharding @chips split_axes = [[0]] : !shard.sharding
    %row = shard.sharding @chips split_axes = [[], [0]] : !shard.sharding
    %up_s = shard.shard %up to %col : tensor<8x4xf32>
    %down_s = shard.shard %down to %row : tensor<4x8xf32>
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up_s : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %cut1 = shard.sharding @chips split_axes = [[], [0]] : !shard.sharding
    %h_s = shard.shard %h to %cut1 annotate_for_users : tensor<1x8xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h_s, %down_s : tensor<1x8xf32>, tensor<4x8xf32>) outs(%zeros4 : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %out = arith.addf %x, %y : tensor<1x4xf32>
    func.return %out : tensor<1x4xf32>
  }
}

// -----
// Arguments without tp.name take the names the host binds them by (their SSA names): a column
// split returned whole, stored back by tp.unshard.
// CHECK-LABEL: func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}, %x: tensor<1x4xf32> {tp.name = "x"})
// CHECK:         %h_w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>
// CHECK:         %h = tp.unshard %h_c0, %h_c1
// CHECK-NOT:     shard.
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32>, %x: tensor<1x4xf32>) -> tensor<1x8xf32> {
    %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x8xf32>
    %zs = linalg.fill ins(%z : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %ws : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zs : tensor<1x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %t = arith.addf %c, %m : f32
      linalg.yield %t : f32
    } -> tensor<1x8xf32>
    func.return %h : tensor<1x8xf32>
  }
}
