// Bad input xDSL 0.75 itself mishandles, guarded in tp-opt (tools/source.py): each is a
// located error naming what is wrong, never an internal error or a hang.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A named linalg op without its inputs: xDSL's parser indexes them (IndexError).
// CHECK-LABEL: error: 'linalg.add' is malformed: xDSL's parser fails on it (IndexError: tuple index out of range); check its operands, types and attributes
// CHECK-NEXT: %s = linalg.add outs(%e : tensor<4xf32>) -> tensor<4xf32>
func.func @add_without_inputs(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add outs(%e : tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'linalg.matmul' is malformed: xDSL's parser fails on it (IndexError
// CHECK-NEXT: %s = linalg.matmul ins(%a : tensor<4x4xf32>)
func.func @matmul_one_input(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %s = linalg.matmul ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %s : tensor<4x4xf32>
}

// -----
// A transpose permutation beyond the rank: xDSL's verifier indexes the shape with it.
// CHECK-LABEL: error: 'linalg.transpose' permutation [1, 5] is not a permutation of 0..1 (its input has rank 2)
// CHECK-NEXT: %t = linalg.transpose
func.func @transpose_out_of_range(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 5]
  func.return %t : tensor<8x4xf32>
}

// -----
// A negative entry: xDSL reads it from the end of the shape and accepts the op.
// CHECK-LABEL: error: 'linalg.transpose' permutation [1, -1] is not a permutation of 0..1 (its input has rank 2)
func.func @transpose_negative(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) permutation = [1, -1]
  func.return %t : tensor<4x4xf32>
}

// -----
// A block label xDSL cannot name (its name setter raises a ValueError).
// CHECK-LABEL: error: block label '^3' is not supported: xDSL 0.75 names blocks only with a letter or '_' first (e.g. ^bb3)
// CHECK-NEXT: cf.br ^3b0
func.func @numeric_successor(%a: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^3b0
^3b0:
  func.return %a : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: block label '^7' is not supported
// CHECK-NEXT: {{^}}^7:
func.func @numeric_label(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
^7:
  func.return %a : tensor<4xf32>
}

// -----
// A builtin attribute's verifier failing while an op is built: at the op (it named no
// place before).
// CHECK-LABEL: error: All inner arrays must be contiguous: [[0 : i64], [1 : i64, 5 : i64, 3 : i64]]
// CHECK-NEXT: %b = tensor.expand_shape %a [[0], [1, 5, 3]]
func.func @reassociation(%a: tensor<1x128xf32>) -> tensor<1x8x2x8xf32> {
  %b = tensor.expand_shape %a [[0], [1, 5, 3]] output_shape [1, 8, 2, 8] : tensor<1x128xf32> into tensor<1x8x2x8xf32>
  func.return %b : tensor<1x8x2x8xf32>
}

// -----
// A static size written as 2**63 wraps to xDSL's dynamic marker, with no value for it:
// xDSL's verifier accepts it and its printer fails on it (IndexError).
// CHECK-LABEL: error: 'tensor.expand_shape' static_output_shape: 1 of its entries are xDSL's dynamic marker -9223372036854775808 (2**63 wraps to it), but 0 values are given for dynamic entries
// CHECK-NEXT: %b = tensor.expand_shape %a [[0], [1, 2, 3]] output_shape [1, 8, 9223372036854775808, 8]
func.func @dynamic_marker(%a: tensor<1x64xf32>) -> tensor<1x8x1x8xf32> {
  %b = tensor.expand_shape %a [[0], [1, 2, 3]] output_shape [1, 8, 9223372036854775808, 8] : tensor<1x64xf32> into tensor<1x8x1x8xf32>
  func.return %b : tensor<1x8x1x8xf32>
}

// -----
// A block label defined twice after a forward reference (xDSL fails with a KeyError).
// CHECK-LABEL: error: re-declaration of block 'bb7'
// CHECK-NEXT: {{^}}^bb7:
func.func @label_twice() {
  cf.br ^bb7
^bb7:
  cf.br ^bb7
^bb7:
  func.return
}

// -----
// A use before its definition, in one block: refused (xDSL does not verify dominance).
// CHECK-LABEL: error: 'arith.subf' uses %b where its definition does not dominate the use (before it is defined, or outside its scope)
// CHECK-NEXT: %r = arith.subf %a, %b
func.func @use_before_definition(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.subf %a, %b : tensor<4xf32>
  %b = arith.addf %a, %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
// A forward reference into a nested region, and out of one.
// CHECK-LABEL: error: 'scf.yield' uses %b where its definition does not dominate the use
// CHECK-NEXT: scf.yield %b
func.func @forward_into_region(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.execute_region -> (tensor<4xf32>) {
    scf.yield %b : tensor<4xf32>
  }
  %b = arith.addf %a, %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----
// CHECK-LABEL: error: 'arith.addf' uses %x where its definition does not dominate the use
// CHECK-NEXT: %r = arith.addf %a, %x
func.func @forward_out_of_region(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.addf %a, %x : tensor<4xf32>
  %c = scf.execute_region -> (tensor<4xf32>) {
    %x = arith.addf %a, %a : tensor<4xf32>
    scf.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----
// A value never defined: at its use (xDSL points at the end of the input).
// CHECK-LABEL: error: %zz is used but never defined
// CHECK-NEXT: %b = arith.addf %a, %zz
func.func @never_defined(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %zz : tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----
// Another dialect's terminator ending a function (xDSL accepts a linalg.yield there, and
// what it returns would go unchecked).
// CHECK-LABEL: error: 'linalg.yield' ends a function: a function's blocks end with func.return
// CHECK-NEXT: linalg.yield %a
func.func @yield_ends_function(%a: tensor<4xf32>) -> tensor<4xf32> {
  linalg.yield %a : tensor<4xf32>
}

// -----
// An empty function body: at the function (xDSL names no op).
// CHECK-LABEL: error: Operation func.func contains empty block in single-block region that expects at least a terminator
// CHECK-NEXT: func.func @empty_body
func.func @empty_body(%a: tensor<4xf32>) -> tensor<4xf32> {
}

// -----
// An unterminated string: xDSL's lexer rule backtracks exponentially on it (tp-opt lexes
// it in linear time; tests/test_robust_opt.py times a long one).
// CHECK-LABEL: error: End of file reached before closing string literal.
// CHECK-NEXT: {{^}}"test.op"() {note = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
"test.op"() {note = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
} : () -> ()
