// tp-to-mpi refuses, before changing anything, what one SPMD function over MPI cannot spell.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-to-mpi | filecheck %s

// No per-chip programs yet: the pass reads the links tp-link-points and tp-relay write.
// CHECK-LABEL: error: @f has no per-chip programs and relay: run tp-link-points and tp-relay first [not-sectioned]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----
// An outlined program calls per-chip functions: the branches would have to call them too.
// CHECK-LABEL: error: tp-to-mpi: a per-chip function call (an outlined program): run tp-inline first [not-exportable]
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @g(%a: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>> {
    func.return %a : tensor<4xf32, #tp.chip<0>>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %out = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %c = tp.shard %x0 at #tp.slice<axis = 0, ranges = [(0, 4)], full = [4]> : tensor<4xf32> -> tensor<4xf32, #tp.chip<0>>
      %y = func.call @g(%c) : (tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
      %s = tp.allreduce %y : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
      tp.finish %s : tensor<4xf32>
    } -> (tensor<4xf32>)
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
    }
    func.return %out : tensor<4xf32>
  }
}

// -----
// A buffer received that no relay copy brings: no rank would send it.
// CHECK-LABEL: error: tp-to-mpi: chip 1 receives "q", which no relay copy brings [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %out = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.finish %x0 : tensor<4xf32>
    } -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %q = tp.link 1 sends() as [] receives ["q"] : () -> tensor<4xf32, #tp.chip<1>>
      tp.finish
    } -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
    }
    func.return %out : tensor<4xf32>
  }
}

// -----
// Rank 0 gathers what the host reads: a module with no program on chip 0 has nobody to.
// CHECK-LABEL: error: tp-to-mpi: no program on chip 0, whose rank gathers the host's values [not-exportable]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %out = tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      tp.finish %x1 : tensor<4xf32>
    } -> (tensor<4xf32>)
    tp.relay {
      tp.run_to round 0 chip 1 halt 1
    }
    func.return %out : tensor<4xf32>
  }
}
