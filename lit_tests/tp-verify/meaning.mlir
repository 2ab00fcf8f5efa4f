// The certificate admits only ops tp gives a meaning to, so that tp-run can run everything it
// certifies (tests/test_interpreter_ops.py runs each admitted op class against numpy): ops of
// the dialects tp runs (affine, arith, bufferization, builtin, func, linalg, math, memref,
// scf, tensor, tp, vector); not a memref op reading raw memory, nor a cast that changes what
// its values hold. Each refused program has a certified twin.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// CHECK-LABEL: error: 'llvm.add' is an op of the llvm dialect, to which tp gives no meaning (it runs affine, arith, bufferization, builtin, func, linalg, math, memref, scf, tensor, tp, vector): the shard obligation cannot be checked through it [opaque-op]
func.func @llvm_add(%a: i32) -> i32 {
  %r = llvm.add %a, %a : i32
  func.return %r : i32
}

// -----
// CHECK-LABEL: func.func @arith_add
// CHECK: arith.addi
func.func @arith_add(%a: i32) -> i32 {
  %r = arith.addi %a, %a : i32
  func.return %r : i32
}

// -----
// CHECK-LABEL: error: 'ub.poison' is an op of the ub dialect, to which tp gives no meaning
func.func @poison() -> f32 {
  %r = ub.poison : f32
  func.return %r : f32
}

// -----
// Memory no value defines: stores are refused, so it could only be read uninitialised.
// CHECK-LABEL: error: 'memref.alloc' allocates memory no value defines (memory is never written here): the shard obligation cannot be checked through it [opaque-op]
func.func @alloc() -> f32 {
  %m = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %r = memref.load %m[%c0] : memref<4xf32>
  func.return %r : f32
}

// -----
// CHECK-LABEL: func.func @view_of_a_tensor
// CHECK: memref.load
func.func @view_of_a_tensor(%a: tensor<4xf32>) -> f32 {
  %m = bufferization.to_buffer %a : tensor<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %r = memref.load %m[%c0] : memref<4xf32>
  func.return %r : f32
}

// -----
// CHECK-LABEL: error: 'builtin.unrealized_conversion_cast' casts (tensor<4xf32>) to (i32): tp gives a cast a meaning only value for value, between types holding the same elements: the shard obligation cannot be checked through it [opaque-op]
func.func @cast_changes_elements(%a: tensor<4xf32>) -> i32 {
  %r = builtin.unrealized_conversion_cast %a : tensor<4xf32> to i32
  func.return %r : i32
}

// -----
// CHECK-LABEL: func.func @cast_keeps_elements
// CHECK: builtin.unrealized_conversion_cast
func.func @cast_keeps_elements(%a: tensor<4xf32>) -> tensor<2x2xf32> {
  %r = builtin.unrealized_conversion_cast %a : tensor<4xf32> to tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}
