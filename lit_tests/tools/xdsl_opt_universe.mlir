// Plain xdsl-opt loads the tp dialect through xDSL's `xdsl.universe` entry point.
// RUN: xdsl-opt %s | filecheck %s

// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64}
builtin.module attributes {tp.chips = 2 : i64} {
  // CHECK: %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
  func.func @f(%w: tensor<8x4xf32>) {
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    func.return
  }
}
