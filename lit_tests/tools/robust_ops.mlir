// Malformed ops xDSL 0.75's verifiers let through (tp_dialect/op_guards.py): each refused at
// the op by every tool that loads a program (here tp-opt; tp-run the same), a located error
// naming what is wrong, never an internal error when the program runs.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A body yielding more values than the generic has outputs (tp-run ended in an IndexError).
// CHECK-LABEL: error: 'linalg.generic' yields 2 values for its 1 outputs: its body yields one value per output
// CHECK-NEXT: %r = linalg.generic
func.func @yield_arity(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x, %x : f32, f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'linalg.generic' yields 0 values for its 1 outputs: its body yields one value per output
func.func @yield_nothing(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'linalg.generic' yields i32 for output #0, whose elements are f32
func.func @yield_type(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 1 : i32
    linalg.yield %c : i32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'linalg.generic' has results (tensor<5xf64>), but its tensor outputs are (tensor<4xf32>)
func.func @result_type(%a: tensor<4xf32>) -> tensor<5xf64> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<5xf64>
  func.return %r : tensor<5xf64>
}

// -----
// An output written through a repeated dim: the diagonal written, the rest in no stated order.
// (An input may: a (d1, d1) read runs as a diagonal, tests/test_interpreter_ops.py.)
// CHECK-LABEL: error: 'linalg.generic' output #0's indexing map (d0) -> (d0, d0) is not a projection of distinct loop dims: two points would write one element
func.func @output_diagonal(%a: tensor<4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0, d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// -----
// CHECK-LABEL: error: 'linalg.reduce' yields 2 values for its 1 outputs: its body yields one value per output
func.func @reduce_yield(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.reduce ins(%a : tensor<4x3xf32>) outs(%e : tensor<4xf32>) dimensions = [1]
  (%x: f32, %acc: f32) {
    %s = arith.addf %x, %acc : f32
    linalg.yield %s, %s : f32, f32
  }
  func.return %r : tensor<4xf32>
}

// -----
// Dimensions out of range: xDSL's verifier indexes the shape with them (IndexError).
// CHECK-LABEL: error: 'linalg.reduce' dimensions [5] are not distinct dims of 0..1 (its input has rank 2)
func.func @reduce_dims(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.reduce ins(%a : tensor<4x3xf32>) outs(%e : tensor<4xf32>) dimensions = [5]
  (%x: f32, %acc: f32) {
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'linalg.broadcast' dimensions [1, 1] are not distinct dims of 0..2 (its output has rank 3)
func.func @broadcast_dims(%a: tensor<4xf32>) -> tensor<4x3x2xf32> {
  %e = tensor.empty() : tensor<4x3x2xf32>
  %r = linalg.broadcast ins(%a : tensor<4xf32>) outs(%e : tensor<4x3x2xf32>) dimensions = [1, 1]
  func.return %r : tensor<4x3x2xf32>
}

// -----
// CHECK-LABEL: error: 'scf.if' has results but no else region to give them when it fails
func.func @if_without_else(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> (tensor<4xf32>) {
    scf.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'scf.if' has results (tensor<4xf32>), but its region hands on (tensor<5xf32>)
func.func @if_yield_type(%a: tensor<4xf32>, %b: tensor<5xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> (tensor<4xf32>) {
    scf.yield %b : tensor<5xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'scf.execute_region' has results (i64), but its region hands on (i64, i64)
func.func @execute_region_yield(%a: i64) -> i64 {
  %r = scf.execute_region -> (i64) {
    scf.yield %a, %a : i64, i64
  }
  func.return %r : i64
}

// -----
// CHECK-LABEL: error: 'scf.while' has results (i64), but its condition hands on (i64, i64)
func.func @while_condition(%a: i64) -> i64 {
  %r = scf.while (%x = %a) : (i64) -> i64 {
    %c = arith.constant 10 : i64
    %p = arith.cmpi slt, %x, %c : i64
    scf.condition(%p) %x, %x : i64, i64
  } do {
  ^bb0(%y: i64):
    scf.yield %y : i64
  }
  func.return %r : i64
}

// -----
// CHECK-LABEL: error: 'scf.while' after region yields (i64, i64), but its before region takes (i64)
func.func @while_after(%a: i64) -> i64 {
  %r = scf.while (%x = %a) : (i64) -> i64 {
    %c = arith.constant 10 : i64
    %p = arith.cmpi slt, %x, %c : i64
    scf.condition(%p) %x : i64
  } do {
  ^bb0(%y: i64):
    scf.yield %y, %y : i64, i64
  }
  func.return %r : i64
}

// -----
// CHECK-LABEL: error: 'tensor.extract' gives 1 indices into a tensor<4x4xf32> of rank 2
func.func @extract_rank(%a: tensor<4x4xf32>, %i: index) -> f32 {
  %r = tensor.extract %a[%i] : tensor<4x4xf32>
  func.return %r : f32
}

// -----
// The affine and memref dialects load only when a program uses them; their ops are still checked
// (memref.load's indices by xDSL's own verifier).
// CHECK-LABEL: error: 'memref.load' is malformed: xDSL's verifier fails on it (Exception: expected an index for each dimension)
func.func @load_rank(%m: memref<4x4xf32>, %i: index) -> f32 {
  %r = memref.load %m[%i] : memref<4x4xf32>
  func.return %r : f32
}

// -----
// CHECK-LABEL: error: 'affine.if' has results but no else region to give them when it fails
func.func @affine_if_without_else(%k: index, %a: f32) -> f32 {
  %r = "affine.if"(%k) <{condition = affine_set<(d0) : (d0 - 2 >= 0)>}> ({
    "affine.yield"(%a) : (f32) -> ()
  }, {
  }) : (index) -> f32
  func.return %r : f32
}

// -----
// CHECK-LABEL: error: 'tensor.from_elements' gives 2 elements for a tensor<3xf32> of 3
func.func @from_elements(%a: f32) -> tensor<3xf32> {
  %r = tensor.from_elements %a, %a : tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----
// CHECK-LABEL: error: 'tensor.pad' pads axis 0 of size 4 by 1 and 1 into size 9, not 6
func.func @pad_shape(%a: tensor<4xf32>) -> tensor<9xf32> {
  %r = tensor.pad %a low[1] high[1] {
  ^bb0(%i: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<4xf32> to tensor<9xf32>
  func.return %r : tensor<9xf32>
}
