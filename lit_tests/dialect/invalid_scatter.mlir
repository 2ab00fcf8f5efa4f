// Every verifier message of tp.reduce_scatter and tp.all_gather: one partial (or block) per
// chip, each on its chip; the blocks one run each, in chip order, covering one axis.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' has 2 partials and 2 results, the module has 3 chips: it needs exactly one of each per chip
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' has 1 slices, the module has 2 chips: it needs exactly one block per chip
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' slice #0 is of full shape [4, 9], the whole tensor is [4, 8]
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 9]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 9]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' slice #1 cuts axis 1, slice #0 axis 0: the blocks cut one axis
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 1, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' slice #0 is [(2, 2)]: chip 0's block must be one run starting at 0 (the blocks one after another in chip order), not empty
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' blocks cover 3 of the 4 positions of axis 0
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(1, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<1x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<1>>, %b: tensor<4x8xf32, #tp.chip<0>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' partial #0 %a must be on chip 0, it is on chip 1
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<1>>, tensor<4x8xf32, #tp.chip<0>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf16, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' partial #1 %b on chip 1 has type tensor<4x8xf16, #tp.chip<1>>, partial #0 tensor<4x8xf32, #tp.chip<0>>: the partials must agree
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf16, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' result #1 %r1 must be on chip 1, it is on the spine
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' result #1 %r1 on chip 1 has shape [3, 8], its block [2, 8]
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<3x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' result #1 holds f16, the partials f32
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf16, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xf32, #tp.chip<0>>, %b: tensor<4x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' algorithm "twoshot" is not one of direct, ring
// CHECK-NEXT: algorithm "twoshot" :
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] algorithm "twoshot" : tensor<4x8xf32, #tp.chip<0>>, tensor<4x8xf32, #tp.chip<1>> -> tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @f(%a: tensor<2x8xf32, #tp.chip<0>>, %b: tensor<2x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.all_gather' has 2 blocks, the module has 3 chips: it needs exactly one block per chip
// CHECK-NEXT: %g = tp.all_gather %a, %b
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<2x8xf32, #tp.chip<0>>, %b: tensor<2x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.all_gather' result must be the replicated spine (no chip encoding)
// CHECK-NEXT: %g = tp.all_gather %a, %b
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<4x8xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<2x8xf32, #tp.chip<0>>, %b: tensor<2x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.all_gather' slice #1 is [(3, 1)]: chip 1's block must be one run starting at 2 (the blocks one after another in chip order), not empty
// CHECK-NEXT: %g = tp.all_gather %a, %b
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(3, 1)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<4x8xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<2x8xf32, #tp.chip<0>>, %b: tensor<2x8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.all_gather' blocks cover 4 of the 5 positions of axis 0
// CHECK-NEXT: %g = tp.all_gather %a, %b
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [5, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [5, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<1>> -> tensor<5x8xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<2x8xf32, #tp.chip<0>>, %b: tensor<2x8xf32, #tp.chip<0>>) {
// CHECK-LABEL: error: 'tp.all_gather' block #1 %b must be on chip 1, it is on chip 0
// CHECK-NEXT: %g = tp.all_gather %a, %b
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf32, #tp.chip<0>> -> tensor<4x8xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<2x8xf32, #tp.chip<0>>, %b: tensor<2x8xf16, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.all_gather' block #1 holds f16, the result f32
// CHECK-NEXT: %g = tp.all_gather %a, %b
    %g = tp.all_gather %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<2x8xf32, #tp.chip<0>>, tensor<2x8xf16, #tp.chip<1>> -> tensor<4x8xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4x8xi64, #tp.chip<0>>, %b: tensor<4x8xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.reduce_scatter' sums i64: it sums floats (its lowered adds are float adds)
// CHECK-NEXT: %r0, %r1 = tp.reduce_scatter %a, %b
    %r0, %r1 = tp.reduce_scatter %a, %b slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 8]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 8]>] : tensor<4x8xi64, #tp.chip<0>>, tensor<4x8xi64, #tp.chip<1>> -> tensor<2x8xi64, #tp.chip<0>>, tensor<2x8xi64, #tp.chip<1>>
    func.return
  }
}
