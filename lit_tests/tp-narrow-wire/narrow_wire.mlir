// tp-narrow-wire: an all-reduce whose every reader reads bf16 (the shim's word) carries
// bf16: each chip rounds its partial, the sum is formed in bf16 by the same algorithm and
// widened where it is read; the module records `tp.wire = "bf16"` (what tp-run --check
// measures against). A sum the host reads (returned) or that is already narrow stays.
// RUN: tp-opt %s --split-input-file -p 'tp-narrow-wire{report=true}' 2>%t.report | filecheck %s
// RUN: filecheck %s --input-file=%t.report --check-prefix=REPORT
// RUN: tp-opt %s --split-input-file -p 'tp-narrow-wire{shim=reference}' | filecheck %s --check-prefix=REF
// RUN: tp-opt %s --split-input-file -p 'tp-narrow-wire' | filecheck %s --check-prefix=MODULE
// MODULE: builtin.module attributes {tp.chips = 2 : i64, tp.wire = "bf16"}
// MODULE-NEXT: func.func @residual
// MODULE: builtin.module attributes {tp.chips = 2 : i64} {
// MODULE-NEXT: func.func @returned

// The residual add reads the sum: sn40l's kernels read it as bf16, so it travels as bf16.
// CHECK-LABEL: func.func @residual
// CHECK-NEXT: %p0_bf16 = arith.truncf %p0 : tensor<4xf32, #tp.chip<0>> to tensor<4xbf16, #tp.chip<0>>
// CHECK-NEXT: %p1_bf16 = arith.truncf %p1 : tensor<4xf32, #tp.chip<1>> to tensor<4xbf16, #tp.chip<1>>
// CHECK-NEXT: %s_bf16 = tp.allreduce %p0_bf16, %p1_bf16 algorithm "twoshot" : tensor<4xbf16, #tp.chip<0>>, tensor<4xbf16, #tp.chip<1>> -> tensor<4xbf16>
// CHECK-NEXT: %s = arith.extf %s_bf16 : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: %r = arith.addf %x, %s : tensor<4xf32>
// REPORT: tp-narrow-wire: %s: bf16 on the wire
// The reference shim reads every operand as its values: nothing is narrowed.
// REF-LABEL: func.func @residual
// REF-NEXT: %s = tp.allreduce %p0, %p1 algorithm "twoshot"
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @residual(%x: tensor<4xf32>, %p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0, %p1 algorithm "twoshot" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %r = arith.addf %x, %s : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// A sum the function returns is read by the host, whole: it stays f32 (and the module
// records no narrow wire).
// CHECK-LABEL: func.func @returned
// CHECK-NEXT: %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
// REPORT: tp-narrow-wire: %s: kept, 'func.return' reads the sum as its values (sn40l:bf16)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @returned(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// One reader that takes bf16 and one that does not: the sum stays f32 for both.
// CHECK-LABEL: func.func @mixed_readers
// CHECK-NEXT: %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
// REPORT: tp-narrow-wire: %s: kept, 'func.return' reads the sum as its values (sn40l:bf16)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mixed_readers(%x: tensor<4xf32>, %p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> (tensor<4xf32>, tensor<4xf32>) {
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %r = arith.addf %x, %s : tensor<4xf32>
    func.return %r, %s : tensor<4xf32>, tensor<4xf32>
  }
}

// -----
// Partials already in bf16 travel as they are.
// CHECK-LABEL: func.func @already_narrow
// CHECK-NEXT: %s = tp.allreduce %p0, %p1 : tensor<4xbf16, #tp.chip<0>>, tensor<4xbf16, #tp.chip<1>> -> tensor<4xbf16>
// CHECK-NOT: arith.truncf
// REPORT: tp-narrow-wire: %s: kept, its sum is bf16, not f32
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @already_narrow(%x: tensor<4xbf16>, %p0: tensor<4xbf16, #tp.chip<0>>, %p1: tensor<4xbf16, #tp.chip<1>>) -> tensor<4xbf16> {
    %s = tp.allreduce %p0, %p1 : tensor<4xbf16, #tp.chip<0>>, tensor<4xbf16, #tp.chip<1>> -> tensor<4xbf16>
    %r = arith.addf %x, %s : tensor<4xbf16>
    func.return %r : tensor<4xbf16>
  }
}

// -----
// A reshape only moves the sum: what reads its result decides, here the host (returned).
// CHECK-LABEL: func.func @reshaped_then_returned
// CHECK-NEXT: %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
// REPORT: tp-narrow-wire: %s: kept, 'func.return' reads the sum as its values (sn40l:bf16)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @reshaped_then_returned(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<1x4xf32> {
    %s = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %r = tensor.expand_shape %s [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
    func.return %r : tensor<1x4xf32>
  }
}

// -----
// One chip: nothing crosses a link, so nothing is rounded.
// CHECK-LABEL: func.func @one_chip
// CHECK-NEXT: %s = tp.allreduce %p0 : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
// REPORT: tp-narrow-wire: %s: kept, one chip: nothing crosses a link
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @one_chip(%x: tensor<4xf32>, %p0: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32> {
    %s = tp.allreduce %p0 : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
    %r = arith.addf %x, %s : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}
