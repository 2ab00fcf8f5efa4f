// tp-transfers: a tensor written on one chip and read on another crosses once, before the
// reader's first read; once per (tensor, reader chip). Host values cross nothing.
// RUN: tp-opt %S/Inputs/transfers.mlir --split-input-file --tp-transfers | filecheck %s
// RUN: tp-opt %S/Inputs/transfers.ring.mlir --split-input-file --tp-transfers | filecheck %s --check-prefix=RING
// RUN: tp-opt %S/Inputs/transfers.mlir --split-input-file --tp-transfers --tp-transfers | filecheck %s
// RUN: not tp-opt %s --split-input-file --tp-transfers 2>&1 | filecheck %s --check-prefix=UNSECTIONED

// The seed's all-reduce on 3 chips: partials 1 and 2 go to chip 0, where the fold runs;
// the sum goes back to the chips that read it (only the spine statement after it).
// CHECK-LABEL: func.func @allreduce
// CHECK:      %p2 = tp.section "p2" on [2]
// CHECK-NOT:  tp.transfer %x
// CHECK:      tp.transfer %p1 from 1 to 0 : tensor<4xf32, #tp.chip<1>>
// CHECK-NEXT: tp.transfer %p2 from 2 to 0 : tensor<4xf32, #tp.chip<2>>
// CHECK-NEXT: %s = tp.section "s" on [0, 1, 2]
// CHECK:      tp.transfer %s from 0 to 1 : tensor<4xf32>
// CHECK-NEXT: tp.transfer %s from 0 to 2 : tensor<4xf32>
// CHECK-NEXT: %out = tp.section "out" on [0, 1, 2]
// Read again later: already there, nothing crosses twice.
// CHECK-NOT:  tp.transfer
// CHECK:      func.return
// A ring all-reduce is spelled as its reduce-scatter and all-gather (ring.mlir): only 1/N
// slices of the partials, the sums so far and the reduced slices cross, never a whole
// partial; the sum is concatenated on every chip, so it crosses nothing after.
// RING-LABEL: func.func @allreduce
// RING-NOT:   tp.transfer %p{{[0-9]}} from
// RING:       %s = tp.section "s" on [0, 1, 2]
// RING-NEXT:    tensor.concat
// RING-NOT:   tp.transfer
// RING:       func.return
// UNSECTIONED: error: 'linalg.add' is not in a tp.section: run tp-relocate before placing transfers [not-sectioned]
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @allreduce(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %e2 = tensor.empty() : tensor<4xf32, #tp.chip<2>>
    %p0 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    %p1 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %p2 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32, #tp.chip<2>>
    %s = tp.allreduce %p0, %p1, %p2 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<2>> -> tensor<4xf32>
    %out = arith.addf %s, %x : tensor<4xf32>
    %again = arith.addf %s, %out : tensor<4xf32>
    func.return %again : tensor<4xf32>
  }
}

// -----
// A chip-local value read on another chip (a pipeline hand-off, which tp-verify would
// refuse in a tensor-parallel program but the placement passes handle): one transfer to
// the reader's chip, before its first read, and none for the second read.
// CHECK-LABEL: func.func @handoff
// CHECK:      %a = tp.section "a" on [0]
// CHECK-NEXT:   tensor.extract_slice %w
// CHECK:      tp.transfer %a from 0 to 1 : tensor<4xf32, #tp.chip<0>>
// CHECK-NEXT: %b = tp.section "b" on [1]
// CHECK-NOT:  tp.transfer
// CHECK:      %c = tp.section "c" on [1]
// RING-LABEL: func.func @handoff
// RING:       tp.transfer %a from 0 to 1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @handoff(%w: tensor<4xf32, #tp.chip<0>>) -> () {
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %a = tensor.extract_slice %w[0] [4] [1] : tensor<4xf32, #tp.chip<0>> to tensor<4xf32, #tp.chip<0>>
    %b = linalg.add ins(%a, %a : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<0>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %c = linalg.add ins(%a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    func.return
  }
}
