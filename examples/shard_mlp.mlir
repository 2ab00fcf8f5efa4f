// Megatron's MLP as MLIR's Shard dialect annotates it for sharding propagation: a 1-D grid of
// two devices, up_proj split along its output features (axis 0 of [out, in]), down_proj along
// its input features (axis 1). `tp-opt --tp-import-shard` makes it the tp program tp-split
// writes from the same plan: docs/shard.md.
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
