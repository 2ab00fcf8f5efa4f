// A chip count is a positive integer. xDSL reads an i64 written at 2**63 or above as its
// two's complement: 2**63 was "-9223372036854775808 chips (0..-9223372036854775809)" at the
// first op that reads N; it is refused at the module, before any op reads it, and says so.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate | filecheck %s

// CHECK-LABEL: error: 'tp.chips' must be a positive integer, got -9223372036854775808 : i64 (an integer too large for its type reads as negative)
// CHECK-NEXT: {{^}}builtin.module attributes {tp.chips = 9223372036854775808 : i64} {
// CHECK-NEXT: {{^}}^
builtin.module attributes {tp.chips = 9223372036854775808 : i64} {
  func.func @decode(%w: tensor<4xf32>) -> tensor<2xf32, #tp.chip<0>> {
    %s = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4]> : tensor<4xf32> -> tensor<2xf32, #tp.chip<0>>
    func.return %s : tensor<2xf32, #tp.chip<0>>
  }
}

// -----
// CHECK-LABEL: error: 'tp.chips' must be a positive integer, got -1 : i64 (an integer too large for its type reads as negative)
builtin.module attributes {tp.chips = 18446744073709551615 : i64} {
  func.func @decode(%w: tensor<4xf32>) -> tensor<2xf32, #tp.chip<0>> {
    %s = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4]> : tensor<4xf32> -> tensor<2xf32, #tp.chip<0>>
    func.return %s : tensor<2xf32, #tp.chip<0>>
  }
}

// -----
// CHECK-LABEL: error: 'tp.chips' must be a positive integer, got 0 : i64{{$}}
builtin.module attributes {tp.chips = 0 : i64} {
  func.func @decode(%w: tensor<4xf32>) -> tensor<2xf32, #tp.chip<0>> {
    %s = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4]> : tensor<4xf32> -> tensor<2xf32, #tp.chip<0>>
    func.return %s : tensor<2xf32, #tp.chip<0>>
  }
}
