// Inputs on which a pass once left IR that does not verify (or failed inside): each is now
// refused up front, located and named, or lowered to valid IR.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --verify-each --tp-relocate | filecheck %s --check-prefix=RELOCATE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --verify-each --tp-fuse | filecheck %s --check-prefix=FUSE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --verify-each --tp-transfers | filecheck %s --check-prefix=TRANSFERS
// RUN: tp-opt %s --split-input-file --verify-diagnostics --verify-each --tp-phase | filecheck %s --check-prefix=PHASE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --verify-each --tp-link-points | filecheck %s --check-prefix=LINK
// RUN: tp-opt %s --split-input-file --verify-diagnostics --verify-each --tp-relocate="allreduce=twoshot epilogue=true" --tp-transfers --tp-phase --tp-verify | filecheck %s --check-prefix=EPILOGUE

// Per-chip programs already: the passes before tp-link-points place statements, and the
// function has none left (tp-relocate wrapped the programs in sections before).
// RELOCATE-LABEL: error: tp-relocate works on a function's statements, but @f is already per-chip programs (it holds a 'tp.chip_program': tp-link-points has run)
// RELOCATE-NEXT: tp.chip_program on 0
// FUSE-LABEL: func.func @f
// TRANSFERS-LABEL: error: tp-transfers works on a function's statements, but @f is already per-chip programs
// PHASE-LABEL: error: tp-phase works on a function's statements, but @f is already per-chip programs
// LINK-LABEL: error: tp-link-points works on a function's statements, but @f is already per-chip programs
// EPILOGUE-LABEL: error: tp-relocate works on a function's statements, but @f is already per-chip programs
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c = tp.chip_program on 0 (%a) {
    ^bb0(%a_1: tensor<4xf32>):
      %c_1 = tp.section "c" on [0] {
        %0 = arith.mulf %a_1, %a_1 : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      tp.finish %c_1 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 () {
      tp.finish
    } : () -> ()
    func.return %c : tensor<4xf32>
  }
}

// -----
// No chip count stated: the sections and programs written need one (they failed their
// verifier after the pass before).
// RELOCATE-LABEL: error: tp-relocate places work on chips, but the module states no chip count (module attributes {tp.chips = N : i64})
// RELOCATE-NEXT: func.func @no_chips
// FUSE-LABEL: error: tp-fuse places work on chips, but the module states no chip count
// TRANSFERS-LABEL: error: 'arith.addf' is not in a tp.section: run tp-relocate before placing transfers [not-sectioned]
// PHASE-LABEL: error: 'arith.addf' is not in a tp.section: run tp-relocate before tp-phase [not-sectioned]
// LINK-LABEL: error: tp-link-points places work on chips, but the module states no chip count
// EPILOGUE-LABEL: error: tp-relocate places work on chips, but the module states no chip count
func.func @no_chips(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %a : tensor<4xf32>
  %c = arith.mulf %b, %b : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----
// A scalar computed on chip 0 read on chip 1: only tensors cross (tp-transfers wrote a
// tp.transfer of an index before, which its verifier refuses).
// RELOCATE-LABEL: func.func @scalar_crossing
// FUSE-LABEL: func.func @scalar_crossing
// TRANSFERS-LABEL: error: a section on chip 1 reads %pos (index), computed on chip 0 only: only tensors cross between chips (tp.transfer), a scalar is read where it is computed [section-chip]
// TRANSFERS-NEXT: %w1 = tp.section "w1" on [1]
// PHASE-LABEL: func.func @scalar_crossing
// LINK-LABEL: error: a section on chip 1 reads %pos (index), computed on chip 0 only
// EPILOGUE-LABEL: error: a section on chip 1 reads %pos (index), computed on chip 0 only
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @scalar_crossing(%n: i64, %k0: tensor<4xf32, #tp.chip<0>>, %k1: tensor<4xf32, #tp.chip<1>>, %r: tensor<1xf32, #tp.chip<1>>) -> () {
    %pos = tp.section "pos" on [0] {
      %i = arith.index_cast %n : i64 to index
      tp.yield %i : index
    } : index
    %w1 = tp.section "w1" on [1] {
      %w = tensor.insert_slice %r into %k1[%pos] [1] [1] : tensor<1xf32, #tp.chip<1>> into tensor<4xf32, #tp.chip<1>>
      tp.yield %w : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
// An unnamed all-reduce (its value named after its op, 'tp.allreduce#0', which is no value
// name) followed by a section that only hands its sum on: the fused epilogue yields the sum
// itself (it yielded the fused section's own result before), and the two-shot's pieces get
// valid names.
// EPILOGUE-LABEL: func.func @unnamed_sum
// EPILOGUE:      %tp.allreduce_0_p0s0 = tp.section "tp.allreduce#0.p0s0" on [0]
// EPILOGUE:      %s, %s_1 = tp.section "tp.allreduce#0" on [0, 1]
// EPILOGUE-NEXT:   %[[SUM:.*]] = tensor.concat
// EPILOGUE-NEXT:   tp.yield %[[SUM]], %[[SUM]] : tensor<4xf32>, tensor<4xf32>
// EPILOGUE:      func.return %s_1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @unnamed_sum(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %0 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = tp.section "s" on [0, 1] {
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A relay with no programs (tp-relocate wrapped it in a section before).
// RELOCATE-LABEL: error: tp-relocate works on a function's statements, but @relay_only is already per-chip programs (it holds a 'tp.relay': tp-link-points has run)
// RELOCATE-NEXT: tp.relay {
// FUSE-LABEL: func.func @relay_only
// TRANSFERS-LABEL: error: tp-transfers works on a function's statements, but @relay_only
// PHASE-LABEL: error: tp-phase works on a function's statements, but @relay_only
// LINK-LABEL: error: tp-link-points works on a function's statements, but @relay_only
// EPILOGUE-LABEL: error: tp-relocate works on a function's statements, but @relay_only
builtin.module attributes {tp.chips = 7 : i64} {
  func.func @relay_only() {
    tp.relay {
      tp.copy round 1 "x" from 0 to 2
    }
    func.return
  }
}
