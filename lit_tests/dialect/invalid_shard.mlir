// Every verifier message of tp.shard and tp.unshard (the host's loading and storing maps).
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) {
// CHECK-LABEL: error: 'tp.shard' result must be owned by a chip (tensor type encoding #tp.chip<c>)
// CHECK-NEXT: %a = tp.shard %w at
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) {
// CHECK-LABEL: error: 'tp.shard' result is on chip 2, but the module has 2 chips (0..1)
// CHECK-NEXT: %a = tp.shard %w at
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<2>>
    func.return
  }
}

// -----
func.func @f(%w: tensor<8x4xf32>) {
// CHECK-LABEL: error: 'tp.shard' needs the module to state its chip count (module attributes {tp.chips = N : i64})
// CHECK-NEXT: %a = tp.shard %w at
  %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
  func.return
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.shard' source %w is already on chip 1; a shard cuts a full (unowned) tensor
// CHECK-NEXT: %a = tp.shard %w at
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32, #tp.chip<1>> -> tensor<4x4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) {
// CHECK-LABEL: error: 'tp.shard' source shape [8, 4] differs from the slice's full shape [8, 8]
// CHECK-NEXT: %a = tp.shard %w at
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 8]> : tensor<8x4xf32> -> tensor<4x8xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) {
// CHECK-LABEL: error: 'tp.shard' result shape [2, 4] on chip 0 differs from the slice's shape [4, 4]
// CHECK-NEXT: %a = tp.shard %w at
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2), (6, 2)], full = [8, 4]> : tensor<8x4xf32> -> tensor<2x4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) {
// CHECK-LABEL: error: 'tp.shard' result element type differs from the source's
// CHECK-NEXT: %a = tp.shard %w at
    %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xbf16, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x4xf32, #tp.chip<0>>) -> tensor<8x4xf32> {
// CHECK-LABEL: error: 'tp.unshard' has 1 parts but 2 slices
// CHECK-NEXT: %r = tp.unshard %a slices
    %r = tp.unshard %a slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>> -> tensor<8x4xf32>
    func.return %r : tensor<8x4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x4xf32, #tp.chip<0>>, %b: tensor<4x4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.unshard' result must not be owned by a chip
// CHECK-NEXT: %r = tp.unshard %a, %b slices
    %r = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x4xf32, #tp.chip<0>>, %b: tensor<4x4xf32>) {
// CHECK-LABEL: error: 'tp.unshard' part #1 %b is not owned by a chip
// CHECK-NEXT: %r = tp.unshard %a, %b slices
    %r = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32> -> tensor<8x4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x4xf32, #tp.chip<0>>, %b: tensor<4x4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.unshard' slice #1 is of full shape [8, 8], the result is [8, 4]
// CHECK-NEXT: %r = tp.unshard %a, %b slices
    %r = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 8]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x4xf32, #tp.chip<0>>, %b: tensor<2x4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.unshard' part #1 on chip 1 has shape [2, 4], its slice [4, 4]
// CHECK-NEXT: %r = tp.unshard %a, %b slices
    %r = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x4xf32, #tp.chip<0>>, %b: tensor<4x4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.unshard' part #1 on chip 1 overlaps an earlier part
// CHECK-NEXT: %r = tp.unshard %a, %b slices
    %r = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(2, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<2x4xf32, #tp.chip<0>>, %b: tensor<4x4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.unshard' parts must cover the full tensor exactly, along one axis
// CHECK-NEXT: %r = tp.unshard %a, %b slices
    %r = tp.unshard %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<2x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return
  }
}
