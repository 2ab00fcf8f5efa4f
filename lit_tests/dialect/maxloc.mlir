// tp.maxloc's assembly round-trips (with and without an algorithm), and every verifier
// message: one (value, index) pair per chip, each on its chip, the results the spine.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK-LABEL: func.func @roundtrip
// CHECK-NEXT: %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
// CHECK-NEXT: %w, %j = tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "oneshot" : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @roundtrip(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) -> (tensor<2xi64>, tensor<2xi64>) {
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
    %w, %j = tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "oneshot" : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
    func.return %i, %j : tensor<2xi64>, tensor<2xi64>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' algorithm "ring" is not one of fold, oneshot
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "ring" : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' has 2 values and 2 indices, the module has 3 chips: it needs exactly one pair per chip
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' value result must be the replicated spine (no chip encoding)
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32, #tp.chip<0>>, tensor<2xi64>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' index result must be the replicated spine (no chip encoding)
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64, #tp.chip<1>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<3xi64, #tp.chip<0>>, %i1: tensor<3xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' value result tensor<2xf32> and index result tensor<3xi64> differ in shape
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<3xi64, #tp.chip<0>>, tensor<3xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<3xi64>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xf32, #tp.chip<0>>, %i1: tensor<2xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' index result tensor<2xf32> must hold integers
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> -> tensor<2xf32>, tensor<2xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<1>>, %v1: tensor<2xf32, #tp.chip<0>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' value #0 %v0 must be on chip 0, it is on chip 1
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<1>>, tensor<2xf32, #tp.chip<0>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<2xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64>) {
// CHECK-LABEL: error: 'tp.maxloc' index #1 %i1 must be on chip 1, it is on the spine
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64> -> tensor<2xf32>, tensor<2xi64>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%v0: tensor<2xf32, #tp.chip<0>>, %v1: tensor<3xf32, #tp.chip<1>>, %i0: tensor<2xi64, #tp.chip<0>>, %i1: tensor<2xi64, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.maxloc' value #1 %v1 on chip 1 has type tensor<3xf32, #tp.chip<1>>, which does not match the result tensor<2xf32>
// CHECK-NEXT: %v, %i = tp.maxloc
    %v, %i = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<2xf32, #tp.chip<0>>, tensor<3xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
    func.return
  }
}
