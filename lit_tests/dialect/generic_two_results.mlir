// RUN: tp-opt %s | tp-opt | filecheck %s

// A linalg.generic of two results (an argmax: the largest value and its index) prints its
// result types in parentheses, as MLIR does; tp reads that back (xDSL 0.75 alone takes only
// the bare spelling, which it still accepts).

// CHECK-LABEL: func.func @argmax
// CHECK:       linalg.generic
// CHECK:       } -> (tensor<2xf32>, tensor<2xi64>)
func.func @argmax(%x: tensor<2x5xf32>, %m: tensor<2xf32>, %i: tensor<2xi64>) -> tensor<2xi64> {
  %v, %j = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "argmax"} ins(%x : tensor<2x5xf32>) outs(%m, %i : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%a: f32, %b: f32, %c: i64):
    %k = linalg.index 1 : index
    %g = arith.index_cast %k : index to i64
    %gt = arith.cmpf ogt, %a, %b : f32
    %n = arith.select %gt, %a, %b : f32
    %p = arith.select %gt, %g, %c : i64
    linalg.yield %n, %p : f32, i64
  } -> (tensor<2xf32>, tensor<2xi64>)
  func.return %j : tensor<2xi64>
}

// CHECK-LABEL: func.func @bare
// CHECK:       } -> (tensor<2xf32>, tensor<2xi64>)
func.func @bare(%x: tensor<2x5xf32>, %m: tensor<2xf32>, %i: tensor<2xi64>) -> tensor<2xi64> {
  %v, %j = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x5xf32>) outs(%m, %i : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%a: f32, %b: f32, %c: i64):
    linalg.yield %a, %c : f32, i64
  } -> tensor<2xf32>, tensor<2xi64>
  func.return %j : tensor<2xi64>
}
