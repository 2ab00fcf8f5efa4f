// A program computing on a host output (a tp.unshard's result, which the host stores once
// every chip has finished) cannot become per-chip programs: tp-link-points refuses it at the
// op that reads it (it failed on an erased value before). tp-verify names the same fault.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate --tp-transfers --tp-link-points | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate --tp-transfers --tp-phase --tp-link-points --tp-relay | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: error: 'arith.addf' reads %k, a host output (a tp.unshard's result, stored once every chip has finished): only the function's return may use it [host-store-used]
// CHECK-NEXT: %d = arith.addf %k, %k
// VERIFY-LABEL: error: 'arith.addf' computes on %k, a host output (a tp.unshard's result): only the function's return may use it, computing on it would move chip data to the spine without an all-reduce [host-store-used]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @store(%k0: tensor<1x4xf32, #tp.chip<0>>, %k1: tensor<1x4xf32, #tp.chip<1>>) -> tensor<2x4xf32> {
    %k = tp.unshard %k0, %k1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    %d = arith.addf %k, %k : tensor<2x4xf32>
    func.return %d : tensor<2x4xf32>
  }
}

// -----
// Read inside a region: the refusal points at the op in the region that reads it.
// CHECK-LABEL: error: 'arith.mulf' reads %k, a host output
// CHECK-NEXT: %m = arith.mulf %k, %k
// VERIFY-LABEL: error: 'arith.mulf' computes on %k, a host output
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @store_in_region(%k0: tensor<2x4xf32, #tp.chip<0>>, %k1: tensor<2x4xf32, #tp.chip<1>>) -> tensor<4x4xf32> {
    %k = tp.unshard %k0, %k1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 4]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 4]>] : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<4x4xf32>
    %d = scf.execute_region -> (tensor<4x4xf32>) {
      %m = arith.mulf %k, %k : tensor<4x4xf32>
      scf.yield %m : tensor<4x4xf32>
    }
    func.return %d : tensor<4x4xf32>
  }
}
