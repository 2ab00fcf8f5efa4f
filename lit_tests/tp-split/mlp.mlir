// tp-split on Megatron's MLP: the column-split projection's output stays on its chips, the
// row-split one's product is a partial sum, summed by one tp.allreduce before it is read.
// RUN: tp-opt %s --split-input-file --tp-split="chips=2 plan=%S/Inputs/mlp.json" | filecheck %s

// Column then row: each chip loads its rows of up (colwise: the output features) and its
// columns of down (rowwise: the input features); the spine reads the sum.
// CHECK-LABEL: func.func @mlp
// CHECK-NEXT:    %z = arith.constant
// CHECK-NEXT:    %h_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
// CHECK-NEXT:    %h_weight_c1 = tp.shard %up at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
// CHECK-NEXT:    %h_e8_c0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
// CHECK-NEXT:    %h_zeros8_c0 = linalg.fill ins(%z : f32) outs(%h_e8_c0 : tensor<1x4xf32, #tp.chip<0>>)
// CHECK-NEXT:    %h_c0 = linalg.generic {{.*}} ins(%x, %h_weight_c0 : tensor<1x4xf32>, tensor<4x4xf32, #tp.chip<0>>) outs(%h_zeros8_c0
// CHECK:         %h_c1 = linalg.generic {{.*}} ins(%x, %h_weight_c1 : tensor<1x4xf32>, tensor<4x4xf32, #tp.chip<1>>)
// CHECK:         %act_c0 = linalg.generic {{.*}} ins(%h_c0 : tensor<1x4xf32, #tp.chip<0>>) outs(%h_e8_c0
// CHECK:         %act_c1 = linalg.generic {{.*}} ins(%h_c1 : tensor<1x4xf32, #tp.chip<1>>) outs(%h_e8_c1
// CHECK:         %y_weight_c0 = tp.shard %down at #tp.slice<axis = 1, ranges = [(0, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<0>>
// CHECK-NEXT:    %y_weight_c1 = tp.shard %down at #tp.slice<axis = 1, ranges = [(4, 4)], full = [4, 8]>
// CHECK:         %y_c0 = linalg.generic {{.*}} ins(%act_c0, %y_weight_c0 : tensor<1x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<0>>) outs(%y_zeros4_c0
// CHECK:         %y_c1 = linalg.generic {{.*}} ins(%act_c1, %y_weight_c1 : tensor<1x4xf32, #tp.chip<1>>, tensor<4x4xf32, #tp.chip<1>>) outs(%y_zeros4_c1
// CHECK:         %y_sum = tp.allreduce %y_c0, %y_c1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
// CHECK-NEXT:    %out = arith.addf %x, %y_sum : tensor<1x4xf32>
// CHECK-NEXT:    func.return %out
builtin.module {
  func.func @mlp(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %act = linalg.generic {indexing_maps = [affine_map<(b, o) -> (b, o)>, affine_map<(b, o) -> (b, o)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<1x8xf32>) outs(%e8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.maximumf %a, %z : f32
      linalg.yield %r : f32
    } -> tensor<1x8xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%act, %down : tensor<1x8xf32>, tensor<4x8xf32>) outs(%zeros4 : tensor<1x4xf32>) {
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
// A column-split result returned whole: the chips' parts stored back by tp.unshard, as soon
// as the last chip's part is made (before the rest of the program reads the parts on).
// CHECK-LABEL: func.func @column_out
// CHECK:         %h_c1 = linalg.generic
// CHECK:         %h = tp.unshard %h_c0, %h_c1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x8xf32>
// CHECK-NEXT:    %y_weight_c0 = tp.shard %down
// CHECK:         func.return %h : tensor<1x8xf32>
builtin.module {
  func.func @column_out(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x8xf32> {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %e4 = tensor.empty() : tensor<1x4xf32>
    %zeros4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h, %down : tensor<1x8xf32>, tensor<4x8xf32>) outs(%zeros4 : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    func.return %h : tensor<1x8xf32>
  }
}

// -----
// Values named by number (xDSL keeps no name for them): each chip's copy is named after
// its op, spelled as a name xDSL accepts (fuzzing found the raw op name refused).
// CHECK-LABEL: func.func @numbered
// CHECK:         %linalg.generic_0_weight_c0 = tp.shard %up
// CHECK:         %linalg.generic_0_c0 = linalg.generic
// CHECK:         %linalg.generic_0_c1 = linalg.generic
// CHECK:         %[[SUM:.*]] = tp.unshard %linalg.generic_0_c0, %linalg.generic_0_c1
// CHECK-NEXT:    func.return %[[SUM]]
builtin.module {
  func.func @numbered(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x8xf32> {
    %0 = arith.constant 0.0 : f32
    %1 = tensor.empty() : tensor<1x8xf32>
    %2 = linalg.fill ins(%0 : f32) outs(%1 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %3 = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%2 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    func.return %3 : tensor<1x8xf32>
  }
}
