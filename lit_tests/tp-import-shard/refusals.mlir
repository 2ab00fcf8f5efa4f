// Every refusal of tp-import-shard: what MLIR Shard can say and tp cannot honour is named at
// its op, and nothing is written.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-import-shard | filecheck %s

// A grid of two axes: tp splits over a 1-D grid of chips.
// CHECK-LABEL: error: tp-import-shard: grid @g has shape 2x2: tp splits over a 1-D grid of 1 to 1024 chips [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2x2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// Halo sizes: tp cuts disjoint runs.
// CHECK-LABEL: error: tp-import-shard: halo sizes: tp cuts disjoint runs [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[0]] halo_sizes = [1, 1] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// Explicit offsets: tp cuts an axis in equal runs.
// CHECK-LABEL: error: tp-import-shard: explicit shard offsets: tp cuts an axis in equal runs [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 3, 8] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// Two tensor axes split (a 2-D sharding of one weight).
// CHECK-LABEL: error: tp-import-shard: two tensor axes split: tp cuts one axis of a tensor [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[0], [0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// A split over a grid axis the 1-D grid does not have.
// CHECK-LABEL: error: tp-import-shard: axis 0 split over grid axes [1]: the grid has one axis, 0 [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[1]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// Two grids.
// CHECK-LABEL: error: tp-import-shard: the module holds 2 shard.grid ops: tp splits over one grid of chips [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  shard.grid @h(shape = 4)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// A collective in an unsharded program; a max at that.
// CHECK-LABEL: error: tp-import-shard: 'shard.all_reduce' in an unsharded program: tp-split places the collectives from the cuts (and its reduction max: tp sums) [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %r = shard.all_reduce %w on @g grid_axes = [0] reduction = max : tensor<8x4xf32> -> tensor<8x4xf32>
    func.return %r : tensor<8x4xf32>
  }
}

// -----
// N not dividing the axis: 3 chips over 4 input features.
// CHECK-LABEL: error: 3 chips do not divide axis 1 of 'w' (4 elements)
builtin.module {
  shard.grid @g(shape = 3)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}

// -----
// An annotation contradicting propagation: the hidden activation claimed whole, which the column split of up cuts along its features.
// CHECK-LABEL: error: tp-import-shard: the annotation says %h is whole on every chip; tp-split's propagation from the arguments' cuts has it cut along axis 1 [shard-unsupported]
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
    %rep = shard.sharding @chips split_axes = [[]] : !shard.sharding
    %h_s = shard.shard %h to %rep annotate_for_users : tensor<1x8xf32>
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
// One argument annotated twice, with different shardings: tp loads one cut of each argument.
// CHECK-LABEL: error: tp-import-shard: argument 'w' annotated twice, with different shardings: tp loads one cut of each argument [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %rows = shard.sharding @g split_axes = [[0]] : !shard.sharding
    %cols = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
    %a = shard.shard %w to %rows : tensor<8x4xf32>
    %b = shard.shard %w to %cols : tensor<8x4xf32>
    %s = arith.addf %a, %b : tensor<8x4xf32>
    func.return %s : tensor<8x4xf32>
  }
}

// -----
// One value annotated two ways (cut, then whole for its users: a reshard): tp holds each value
// one way.
// CHECK-LABEL: error: tp-import-shard: %h_s annotated twice, with different shardings (a reshard): tp holds each value one way [shard-unsupported]
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
    %cut1 = shard.sharding @chips split_axes = [[], [0]] : !shard.sharding
    %rep = shard.sharding @chips split_axes = [[]] : !shard.sharding
    %h_s = shard.shard %h to %cut1 : tensor<1x8xf32>
    %h_r = shard.shard %h_s to %rep annotate_for_users : tensor<1x8xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h_r, %down_s : tensor<1x8xf32>, tensor<4x8xf32>) outs(%zeros4 : tensor<1x4xf32>) {
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
// A sharding over a grid the module does not hold.
// CHECK-LABEL: error: tp-import-shard: a sharding over another grid than @g [shard-unsupported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %s = shard.sharding @other split_axes = [[0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}
