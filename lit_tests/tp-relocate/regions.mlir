// tp-relocate places a statement with regions (an scf.for) whole, as one section on the
// chips of what it binds. A loop of the spine may hold spine work and collectives whose
// parts are made outside it; chip work inside it would run on every chip, so it is refused
// at the op, naming the chip ([section-chip]): move that work out of the loop.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate | filecheck %s

// The all-gather's blocks are made before the loop: the loop is one section on every chip.
// CHECK-LABEL: func.func @gather_in_loop
// CHECK:       %h0 = tp.section "h0" on [0] {
// CHECK:       %out = tp.section "out" on [0, 1] {
// CHECK-NEXT:    %{{.*}} = scf.for
// CHECK:           tp.all_gather %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @gather_in_loop(%x: tensor<4x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %x0 = tp.shard %x at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]> : tensor<4x5xf32> -> tensor<2x5xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]> : tensor<4x5xf32> -> tensor<2x5xf32, #tp.chip<1>>
    %e0 = tensor.empty() : tensor<2x5xf32, #tp.chip<0>>
    %h0 = linalg.add ins(%x0, %x0 : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<0>>) outs(%e0 : tensor<2x5xf32, #tp.chip<0>>) -> tensor<2x5xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<2x5xf32, #tp.chip<1>>
    %h1 = linalg.add ins(%x1, %x1 : tensor<2x5xf32, #tp.chip<1>>, tensor<2x5xf32, #tp.chip<1>>) outs(%e1 : tensor<2x5xf32, #tp.chip<1>>) -> tensor<2x5xf32, #tp.chip<1>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %out = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %res) -> (tensor<4x5xf32>) {
      %g = tp.all_gather %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 5]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 5]>] : tensor<2x5xf32, #tp.chip<0>>, tensor<2x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
      %s = arith.addf %acc, %g : tensor<4x5xf32>
      scf.yield %s : tensor<4x5xf32>
    }
    func.return %out : tensor<4x5xf32>
  }
}

// -----

// Chip 0's work inside a loop of the spine: the loop would run it on every chip.
// CHECK-LABEL: error: %q0 is chip 0's work inside 'scf.for', which tp-relocate places whole on every chip: move that work out of the region (a section runs on its chips only) [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_work_in_loop(%x: tensor<4x5xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %x0 = tp.shard %x at #tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 5]> : tensor<4x5xf32> -> tensor<4x5xf32, #tp.chip<0>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %out = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %res) -> (tensor<4x5xf32>) {
      %q0 = arith.addf %x0, %x0 : tensor<4x5xf32, #tp.chip<0>>
      scf.yield %acc : tensor<4x5xf32>
    }
    func.return %out : tensor<4x5xf32>
  }
}

// -----

// Chip 1's work inside a loop of chip 0's.
// CHECK-LABEL: error: %q1 is chip 1's work inside 'scf.for', which tp-relocate places whole on chip 0: move that work out of the region (a section runs on its chips only) [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @other_chip_in_loop(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %x0 = tp.shard %x at #tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 5]> : tensor<4x5xf32> -> tensor<4x5xf32, #tp.chip<0>>
    %x1 = tp.shard %x at #tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 5]> : tensor<4x5xf32> -> tensor<4x5xf32, #tp.chip<1>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %out = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x0) -> (tensor<4x5xf32, #tp.chip<0>>) {
      %q1 = arith.addf %x1, %x1 : tensor<4x5xf32, #tp.chip<1>>
      scf.yield %acc : tensor<4x5xf32, #tp.chip<0>>
    }
    %e = tensor.empty() : tensor<4x5xf32>
    %s = tp.allreduce %out, %x1 : tensor<4x5xf32, #tp.chip<0>>, tensor<4x5xf32, #tp.chip<1>> -> tensor<4x5xf32>
    func.return %s : tensor<4x5xf32>
  }
}
