// tp-run runs what tp-verify certifies: a generic reading a diagonal ((d0, d1) -> (d1, d1),
// which ended in "cannot reshape"), scf.for / scf.if / scf.while, linalg.matmul, tensor.cast;
// and refuses at the op, before running, a yield with more values than outputs (which ended
// in an IndexError). The numbers are checked against numpy in tests/test_interpreter_ops.py.
// RUN: tp-opt %s --tp-verify -o %t.mlir
// RUN: tp-run %t.mlir --random-inputs 1 | filecheck %s
// RUN: tp-run %t.mlir --random-inputs 1 --storage | filecheck %s --check-prefix=STORAGE
// RUN: not tp-run %S/Inputs/yield_arity.mlir --random-inputs 1 2>&1 | filecheck %s --check-prefix=YIELD

// CHECK: ran {{.*}}.mlir (1 chip(s)): load
// STORAGE: ran {{.*}}.mlir (1 chip(s), storage semantics): load

// YIELD-NOT: internal error
// YIELD: Inputs{{/|\\}}yield_arity.mlir:3:3: error: 'linalg.generic' yields 2 values for its 1 outputs: its body yields one value per output
// YIELD-NEXT: %r = linalg.generic

func.func @decode(%a: tensor<4x4xf32>, %c: i1, %n: i64) -> (tensor<3xf32>, tensor<4x2xf32>, i64) {
  %z = arith.constant dense<0.0> : tensor<3xf32>
  %tr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x4xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  %b = arith.constant dense<1.0> : tensor<4x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %acc = scf.for %i = %c0 to %c3 step %c1 iter_args(%t = %m) -> (tensor<4x2xf32>) {
    %u = scf.if %c -> (tensor<4x2xf32>) {
      %g = tensor.empty() : tensor<4x2xf32>
      %s = linalg.add ins(%t, %m : tensor<4x2xf32>, tensor<4x2xf32>) outs(%g : tensor<4x2xf32>) -> tensor<4x2xf32>
      scf.yield %s : tensor<4x2xf32>
    } else {
      scf.yield %t : tensor<4x2xf32>
    }
    scf.yield %u : tensor<4x2xf32>
  }
  %dyn = tensor.cast %acc : tensor<4x2xf32> to tensor<?x2xf32>
  %out = tensor.cast %dyn : tensor<?x2xf32> to tensor<4x2xf32>
  %w = scf.while (%x = %n) : (i64) -> i64 {
    %lim = arith.constant 100 : i64
    %go = arith.cmpi slt, %x, %lim : i64
    scf.condition(%go) %x : i64
  } do {
  ^bb0(%x: i64):
    %two = arith.constant 2 : i64
    %y = arith.muli %x, %two : i64
    scf.yield %y : i64
  }
  func.return %tr, %out, %w : tensor<3xf32>, tensor<4x2xf32>, i64
}
