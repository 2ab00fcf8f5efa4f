// tp-verify refuses a module that still holds MLIR Shard ops: the obligation does not read
// them, so a certificate would vouch for what was never checked (tp-import-shard first).
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// CHECK-LABEL: error: 'shard.grid' is MLIR Shard's, which the shard obligation does not read: run tp-import-shard first (an unsharded program annotated with shard ops) [shard-not-imported]
builtin.module {
  shard.grid @g(shape = 2)
  func.func @f(%w: tensor<8x4xf32>) -> tensor<8x4xf32> {
    func.return %w : tensor<8x4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'shard.sharding' is MLIR Shard's, which the shard obligation does not read: run tp-import-shard first (an unsharded program annotated with shard ops) [shard-not-imported]
builtin.module {
  func.func @f(%w: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
    %ws = shard.shard %w to %s : tensor<8x4xf32>
    func.return %ws : tensor<8x4xf32>
  }
}
