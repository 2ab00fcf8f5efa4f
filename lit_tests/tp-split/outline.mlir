// tp-split on an outlined program (@decode calls @layer once a layer): @layer is split
// once, its weights loaded by tp.shard of its own arguments and its partial sums all-reduced
// inside it; @decode's calls hand each layer its weights whole, so the ports do not change.
// The plan names @decode's ports; the values every call hands one argument must be cut alike.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-split="chips=2 plan=%S/Inputs/mlp.json" --tp-verify | filecheck %s

// Two layers of Megatron's MLP, each called with its own weights: every call hands argument
// %up a colwise weight and %down a rowwise one, so @layer cuts them once.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// CHECK:       func.func private @layer(%x: tensor<1x4xf32>, %up: tensor<8x4xf32>, %down: tensor<4x8xf32>) -> tensor<1x4xf32> {
// CHECK:         %h_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
// CHECK-NEXT:    %h_weight_c1 = tp.shard %up at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
// CHECK:         %y_weight_c0 = tp.shard %down at #tp.slice<axis = 1, ranges = [(0, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<0>>
// CHECK-NEXT:    %y_weight_c1 = tp.shard %down at #tp.slice<axis = 1, ranges = [(4, 4)], full = [4, 8]> : tensor<4x8xf32> -> tensor<4x4xf32, #tp.chip<1>>
// CHECK:         %y_sum = tp.allreduce %y_c0, %y_c1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
// CHECK-NEXT:    %out = arith.addf %x, %y_sum : tensor<1x4xf32>
// CHECK-NEXT:    func.return %out : tensor<1x4xf32>
// CHECK-LABEL: func.func @decode(
// CHECK-NOT:     tp.shard
// CHECK:         %l0 = func.call @layer(%x, %up.0, %down.0) : (tensor<1x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %l1 = func.call @layer(%l0, %up.1, %down.1) : (tensor<1x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    func.return %l1 : tensor<1x4xf32>
builtin.module {
  func.func private @layer(%x: tensor<1x4xf32>, %up: tensor<8x4xf32>, %down: tensor<4x8xf32>) -> tensor<1x4xf32> {
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
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %up.0: tensor<8x4xf32> {tp.name = "layers.0.mlp.up.weight"}, %down.0: tensor<4x8xf32> {tp.name = "layers.0.mlp.down.weight"}, %up.1: tensor<8x4xf32> {tp.name = "layers.1.mlp.up.weight"}, %down.1: tensor<4x8xf32> {tp.name = "layers.1.mlp.down.weight"}) -> tensor<1x4xf32> {
    %l0 = func.call @layer(%x, %up.0, %down.0) : (tensor<1x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
    %l1 = func.call @layer(%l0, %up.1, %down.1) : (tensor<1x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
    func.return %l1 : tensor<1x4xf32>
  }
}
// -----
// A cut result: @layer stores it whole by tp.unshard (a host output, as a KV cache is), so
// @layer's signature and @decode's results stay; @decode returns it as before.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate
// CHECK:       func.func private @layer(%x: tensor<1x4xf32>, %up: tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<1x8xf32>) {
// CHECK:         %h_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>
// CHECK-NEXT:    %h_weight_c1 = tp.shard %up at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>
// CHECK:         %h = tp.unshard %h_c0, %h_c1 slices [#tp.slice<axis = 1, ranges = [(0, 4)], full = [1, 8]>, #tp.slice<axis = 1, ranges = [(4, 4)], full = [1, 8]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x8xf32>
// CHECK-NEXT:    func.return %x, %h : tensor<1x4xf32>, tensor<1x8xf32>
// CHECK-LABEL: func.func @decode(
// CHECK-NEXT:    %l0, %h0 = func.call @layer(%x, %up.0) : (tensor<1x4xf32>, tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<1x8xf32>)
// CHECK-NEXT:    %l1, %h1 = func.call @layer(%l0, %up.1) : (tensor<1x4xf32>, tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<1x8xf32>)
// CHECK-NEXT:    func.return %l1, %h0, %h1
builtin.module {
  func.func private @layer(%x: tensor<1x4xf32>, %up: tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<1x8xf32>) {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    func.return %x, %h : tensor<1x4xf32>, tensor<1x8xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %up.0: tensor<8x4xf32> {tp.name = "layers.0.mlp.up.weight"}, %up.1: tensor<8x4xf32> {tp.name = "layers.1.mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> (tensor<1x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>) {
    %l0, %h0 = func.call @layer(%x, %up.0) : (tensor<1x4xf32>, tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<1x8xf32>)
    %l1, %h1 = func.call @layer(%l0, %up.1) : (tensor<1x4xf32>, tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<1x8xf32>)
    func.return %l1, %h0, %h1 : tensor<1x4xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  }
}

// -----
// Layer 1 handed its weights swapped: @layer's %up would be cut along axis 0 at the first call
// (colwise) and along axis 1 at the second (rowwise), but @layer is split once.
builtin.module {
  func.func private @layer(%x: tensor<1x4xf32>, %up: tensor<8x4xf32>) -> tensor<1x4xf32> {
    func.return %x : tensor<1x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %up.0: tensor<8x4xf32> {tp.name = "layers.0.mlp.up.weight"}, %down.1: tensor<8x4xf32> {tp.name = "layers.1.mlp.down.weight"}) -> tensor<1x4xf32> {
    %l0 = func.call @layer(%x, %up.0) : (tensor<1x4xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
// CHECK-LABEL: error: @layer's argument %up is cut otherwise at two calls: call 0 (%l0) hands 'layers.0.mlp.up.weight', cut by plan entry 'mlp.up' (colwise) along axis 0, chip 0 holding [0, 4) of 8, but call 1 (%l1) hands 'layers.1.mlp.down.weight', cut by plan entry 'mlp.down' (rowwise) along axis 1, chip 0 holding [0, 2) of 4; @layer is split once, so the plan must cut what every call hands it alike [plan-mismatch]
    %l1 = func.call @layer(%l0, %down.1) : (tensor<1x4xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
    func.return %l1 : tensor<1x4xf32>
  }
}

// -----
// A cut result read by the next layer: @layer stored it whole by tp.unshard, a host output.
builtin.module {
  func.func private @layer(%x: tensor<1x8xf32>, %up: tensor<8x4xf32>, %down: tensor<4x8xf32>) -> tensor<1x8xf32> {
    func.return %x : tensor<1x8xf32>
  }
  func.func private @cut(%x: tensor<1x4xf32>, %up: tensor<8x4xf32>) -> tensor<1x8xf32> {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    func.return %h : tensor<1x8xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x8xf32> {
    %h = func.call @cut(%x, %up) : (tensor<1x4xf32>, tensor<8x4xf32>) -> tensor<1x8xf32>
// CHECK-LABEL: error: 'func.call' reads %h, which @cut returns cut and stores whole by tp.unshard: a host output, which only @decode's func.return may read [cannot-split]
    %l = func.call @layer(%h, %up, %down) : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
    func.return %l : tensor<1x8xf32>
  }
}

// -----
// A value cut in @decode handed to @layer: a callee is handed whole values only.
builtin.module {
  func.func private @layer(%h: tensor<1x8xf32>, %down: tensor<4x8xf32>) -> tensor<1x8xf32> {
    func.return %h : tensor<1x8xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x8xf32> {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
// CHECK-LABEL: error: 'func.call' reads %h (cut along axis 1, chip 0 holding [0, 4) of 8): @layer is handed whole values only: a value cut in @decode cannot be passed to it [cannot-split]
    %l = func.call @layer(%h, %down) : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
    func.return %l : tensor<1x8xf32>
  }
}
