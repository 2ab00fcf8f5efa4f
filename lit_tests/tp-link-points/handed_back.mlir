// A callee's result that no chip computes — one of its own arguments handed straight back, or
// a constant — is taken by the host where the caller had it: the caller's operand (here
// computed by a replicated section, so chip 0 hands it out) or the constant, cloned.
// RUN: tp-opt %S/Inputs/handed_back.mlir --tp-link-points | filecheck %s

// CHECK-LABEL: func.func @decode
// CHECK:      %y, %x2 = tp.chip_program on 0 (%x, %w) {
// CHECK:        %y_1 = func.call @layer.chip0(%x2_1, %w_1) {tp.tag = "call0_"}
// CHECK-NEXT:   tp.finish %y_1, %x2_1 : tensor<4xf32>, tensor<4xf32>
// CHECK:      tp.chip_program on 1 (%x, %w) {
// CHECK:        func.call @layer.chip1
// CHECK-NEXT:   tp.finish
// CHECK:      %c = arith.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT: func.return %y, %x2, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<4xf32>, %w: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %w0, %w1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %y = arith.addf %x, %s : tensor<4xf32>
    %c = arith.constant dense<2.0> : tensor<4xf32>
    func.return %y, %x, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32> {tp.name = "x", tp.role = "input"}, %w: tensor<8xf32> {tp.name = "w", tp.role = "weight"}) -> (tensor<4xf32> {tp.name = "y"}, tensor<4xf32> {tp.name = "z"}, tensor<4xf32> {tp.name = "c"}) {
    %x2 = arith.mulf %x, %x : tensor<4xf32>
    %y, %z, %c = func.call @layer(%x2, %w) : (tensor<4xf32>, tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    func.return %y, %z, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
