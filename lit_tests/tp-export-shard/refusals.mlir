// Every refusal of tp-export-shard: a program that is not tp-split's output over chips, or
// whose split MLIR's sharding cannot state, is named and left as it is.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-export-shard | filecheck %s

// An unsharded program: nothing to export.
// CHECK-LABEL: error: tp-export-shard: the module states no tp.chips: run tp-split first [not-exportable]
builtin.module {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    func.return %w : tensor<8x4xf32>
  }
}

// -----
// One chip: every cut is whole, so none shows.
// CHECK-LABEL: error: tp-export-shard: a program over 1 chip: no cut shows in it (export the unsharded program itself) [not-exportable]
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    func.return %w : tensor<8x4xf32>
  }
}

// -----
// A weight cut in two runs a chip (a packed gate/up): MLIR's sharding cuts one run a device.
// CHECK-LABEL: error: tp-export-shard: %w is cut axis 0, chip 0 holding [0, 2), [4, 6) of 8: MLIR's sharding splits an axis in equal contiguous runs, one a device [shard-unsupported]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(2, 2), (6, 2)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %o_c0 = arith.negf %w_c0 : tensor<4x4xf32, #tp.chip<0>>
    %o_c1 = arith.negf %w_c1 : tensor<4x4xf32, #tp.chip<1>>
    %o = tp.unshard %o_c0, %o_c1 slices [#tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(2, 2), (6, 2)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return %o : tensor<8x4xf32>
  }
}

// -----
// Chip 1 runs another program than chip 0 (%p, not %o): not what tp-split writes.
// CHECK-LABEL: error: tp-export-shard: the chips do not run one program each as tp-split writes [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<4x4xf32> {
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %o_c0 = arith.negf %w_c0 : tensor<4x4xf32, #tp.chip<0>>
    %p_c1 = arith.negf %w_c1 : tensor<4x4xf32, #tp.chip<1>>
    %o = tp.allreduce %o_c0, %p_c1 : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<4x4xf32>
    func.return %o : tensor<4x4xf32>
  }
}

// -----
// Each chip sums its own rows: written by hand, not tp-split's output for any annotation
// (tp-split keeps the result cut, not summed), so the export's claim that the sum is
// replicated contradicts the re-split and the program is refused.
// CHECK-LABEL: error: tp-export-shard: re-importing the un-split program does not give this one back (splitting it again: tp-import-shard: the annotation says %o is whole on every chip; tp-split's propagation from the arguments' cuts has it cut along axis 0 [shard-unsupported]) [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<4x4xf32> {
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %o_c0 = arith.negf %w_c0 : tensor<4x4xf32, #tp.chip<0>>
    %o_c1 = arith.negf %w_c1 : tensor<4x4xf32, #tp.chip<1>>
    %o = tp.allreduce %o_c0, %o_c1 : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<4x4xf32>
    func.return %o : tensor<4x4xf32>
  }
}

// -----
// After tp-relocate: a section is no longer tp-split's output.
// CHECK-LABEL: error: tp-export-shard: 'tp.section': export tp-split's output, before tp-relocate and later passes [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %r = tp.section "s" on [0] {
      %n = arith.negf %w : tensor<8x4xf32>
      tp.yield %n : tensor<8x4xf32>
    } : tensor<8x4xf32>
    func.return %r : tensor<8x4xf32>
  }
}

// -----
// Chip 1's copy of %o is another op than chip 0's: the chips run one program.
// CHECK-LABEL: error: tp-export-shard: chip 1's copy of %o_c0 is a 'math.absf', chip 0's a 'arith.negf': the chips run one program [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<8x4xf32> {
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %o_c0 = arith.negf %w_c0 : tensor<4x4xf32, #tp.chip<0>>
    %o_c1 = math.absf %w_c1 : tensor<4x4xf32, #tp.chip<1>>
    %o = tp.unshard %o_c0, %o_c1 slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return %o : tensor<8x4xf32>
  }
}

// -----
// A rank-reducing slice of a cut value: tp-split refuses one, so never writes one.
// CHECK-LABEL: error: tp-export-shard: a rank-reducing or dynamic slice of a cut value [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> tensor<4xf32> {
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %r_c0 = tensor.extract_slice %w_c0[0, 0] [4, 1] [1, 1] : tensor<4x4xf32, #tp.chip<0>> to tensor<4xf32, #tp.chip<0>>
    %r_c1 = tensor.extract_slice %w_c1[0, 0] [4, 1] [1, 1] : tensor<4x4xf32, #tp.chip<1>> to tensor<4xf32, #tp.chip<1>>
    %r = tp.allreduce %r_c0, %r_c1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// A cut argument without a tp.name: a plan, and the annotation read back, name arguments.
// CHECK-LABEL: error: tp-export-shard: %w is cut but states no tp.name: a plan, and the annotation tp-import-shard reads back, names an argument [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %o_c0 = arith.negf %w_c0 : tensor<4x4xf32, #tp.chip<0>>
    %o_c1 = arith.negf %w_c1 : tensor<4x4xf32, #tp.chip<1>>
    %o = tp.unshard %o_c0, %o_c1 slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]>] : tensor<4x4xf32, #tp.chip<0>>, tensor<4x4xf32, #tp.chip<1>> -> tensor<8x4xf32>
    func.return %o : tensor<8x4xf32>
  }
}

// -----
// A whole value computed from a chip's one (here a scalar read out of it): tp-split moves
// chip data to the spine only by a collective.
// CHECK-LABEL: error: tp-export-shard: 'tensor.extract' mixes the chips' values with whole ones as tp-split never writes [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%w: tensor<8x4xf32> {tp.name = "w"}) -> f32 {
    %i = arith.constant 0 : index
    %w_c0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<0>>
    %w_c1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 4]> : tensor<8x4xf32> -> tensor<4x4xf32, #tp.chip<1>>
    %s = tensor.extract %w_c0[%i, %i] : tensor<4x4xf32, #tp.chip<0>>
    func.return %s : f32
  }
}
