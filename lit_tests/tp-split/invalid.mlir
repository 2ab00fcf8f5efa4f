// Every refusal of tp-split: it names the op, the value, how it is cut and why the cut cannot
// pass; it never writes a program it cannot justify.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-split="chips=2 plan=%S/Inputs/mlp.json" | filecheck %s

// A max along the cut axis (a softmax over split features) mixes the chips' parts.
builtin.module {
  func.func @max_along_cut(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1xf32> {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %e1 = tensor.empty() : tensor<1xf32>
// CHECK-LABEL: error: 'linalg.generic' reads %h (cut along axis 1, chip 0 holding [0, 4) of 8): it reduces along the cut axis by something other than a sum of products: the chips' parts cannot be combined by an all-reduce [cannot-split]
    %mx = linalg.generic {indexing_maps = [affine_map<(b, o) -> (b, o)>, affine_map<(b, o) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%h : tensor<1x8xf32>) outs(%e1 : tensor<1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.maximumf %acc, %a : f32
      linalg.yield %r : f32
    } -> tensor<1xf32>
    func.return %mx : tensor<1xf32>
  }
}

// -----
// A reshape into heads of 4 when each chip holds 6 features: the cut would fall inside a head.
builtin.module {
  func.func @inside_a_head(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<12x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x3x4xf32> {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x12xf32>
    %zeros = linalg.fill ins(%z : f32) outs(%e : tensor<1x12xf32>) -> tensor<1x12xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<12x4xf32>) outs(%zeros : tensor<1x12xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x12xf32>
// CHECK-LABEL: error: 'tensor.expand_shape' reads %h (cut along axis 1, chip 0 holding [0, 6) of 12): chip 0's run [0, 6) of axis 1 is not whole blocks of 4 (the dims [4] after the one it splits): the cut would fall inside a head [cannot-split]
    %heads = tensor.expand_shape %h [[0], [1, 2]] output_shape [1, 3, 4] : tensor<1x12xf32> into tensor<1x3x4xf32>
    func.return %heads : tensor<1x3x4xf32>
  }
}

// -----
// A body reading the index of the cut loop would see each chip's own positions.
builtin.module {
  func.func @index_of_cut(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x8xf32> {
    %z = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<1x8xf32>
    %zeros8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %up : tensor<1x4xf32>, tensor<8x4xf32>) outs(%zeros8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
// CHECK-LABEL: error: 'linalg.generic' reads %h (cut along axis 1, chip 0 holding [0, 4) of 8): the body reads the index of the cut loop, which differs per chip [cannot-split]
    %masked = linalg.generic {indexing_maps = [affine_map<(b, o) -> (b, o)>, affine_map<(b, o) -> (b, o)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<1x8xf32>) outs(%e8 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %i = linalg.index 1 : index
      %c2 = arith.constant 2 : index
      %keep = arith.cmpi slt, %i, %c2 : index
      %r = arith.select %keep, %a, %z : f32
      linalg.yield %r : f32
    } -> tensor<1x8xf32>
    func.return %masked : tensor<1x8xf32>
  }
}

// -----
// A row-split product accumulated into something other than zeros would add it N times.
builtin.module {
  func.func @sum_not_from_zero(%x: tensor<1x8xf32> {tp.name = "x"}, %b: tensor<1x4xf32> {tp.name = "b"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
// CHECK-LABEL: error: 'linalg.generic' reads %down (cut along axis 1, chip 0 holding [0, 4) of 8): the sum along the cut starts from %b, not zeros: each chip would add it once more [cannot-split]
    %y = linalg.generic {indexing_maps = [affine_map<(b, o, k) -> (b, k)>, affine_map<(b, o, k) -> (o, k)>, affine_map<(b, o, k) -> (b, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %down : tensor<1x8xf32>, tensor<4x8xf32>) outs(%b : tensor<1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    func.return %y : tensor<1x4xf32>
  }
}

// -----
// A plan entry that names no argument: the plan was written for another program.
builtin.module {
// CHECK-LABEL: error: plan entry 'mlp.down' ({{.*}}mlp.json) matches no argument of @no_down: check the names the program states (tp.name) [plan-mismatch]
  func.func @no_down(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}) -> tensor<1x4xf32> {
    func.return %x : tensor<1x4xf32>
  }
}

// -----
// N must divide the cut axis: 2 chips cannot hold equal runs of 5 features.
builtin.module {
// CHECK-LABEL: error: 2 chips do not divide axis 0 of 'mlp.up.weight' (5 elements): each chip must hold an equal run [plan-mismatch]
  func.func @uneven(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<5x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    func.return %x : tensor<1x4xf32>
  }
}

// -----
// A colwise entry matching a tensor of rank 3.
builtin.module {
// CHECK-LABEL: error: plan entry 'mlp.up' (colwise) matches 'mlp.up.weight' of rank 3: a colwise weight has rank 2 (or 1 for a bias) [plan-mismatch]
  func.func @rank3(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<2x8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    func.return %x : tensor<1x4xf32>
  }
}

// -----
// A program already over chips is not split again.
// CHECK-LABEL: error: the module is already over 2 chips: tp-split takes an unsharded program (tp-gen ... --unsharded) [cannot-split]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @split_twice(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<1x4xf32> {
    func.return %x : tensor<1x4xf32>
  }
}

// -----
// An op tp-split has no rule for, reading a cut value.
builtin.module {
  func.func @no_rule(%x: tensor<1x4xf32> {tp.name = "x"}, %up: tensor<8x4xf32> {tp.name = "mlp.up.weight"}, %down: tensor<4x8xf32> {tp.name = "mlp.down.weight"}) -> tensor<4x8xf32> {
    %e = tensor.empty() : tensor<4x8xf32>
// CHECK-LABEL: error: 'linalg.transpose' reads %up (cut along axis 0, chip 0 holding [0, 4) of 8): tp-split has no rule for 'linalg.transpose' on a cut value [cannot-split]
    %t = linalg.transpose ins(%up : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]
    func.return %t : tensor<4x8xf32>
  }
}
