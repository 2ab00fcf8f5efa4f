// Every verifier message of tp.allreduce: one partial per chip, each on its chip.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module attributes {tp.chips = 3 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.allreduce' has 2 partials, the module has 3 chips: it needs exactly one partial per chip
// CHECK-NEXT: %s = tp.allreduce %a, %b
    %s = tp.allreduce %a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.allreduce' result must be the replicated spine (no chip encoding)
// CHECK-NEXT: %s = tp.allreduce %a, %b
    %s = tp.allreduce %a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<1>>, %b: tensor<4xf32, #tp.chip<0>>) {
// CHECK-LABEL: error: 'tp.allreduce' partial #0 %a must be on chip 0, it is on chip 1
// CHECK-NEXT: %s = tp.allreduce %a, %b
    %s = tp.allreduce %a, %b : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>, %x: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.allreduce' partial #1 %x must be on chip 1, it is on the spine
// CHECK-NEXT: %s = tp.allreduce %a, %x
    %s = tp.allreduce %a, %x : tensor<4xf32, #tp.chip<0>>, tensor<4xf32> -> tensor<4xf32>
    func.return
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<0>>, %b: tensor<8xf32, #tp.chip<1>>) {
// CHECK-LABEL: error: 'tp.allreduce' partial #1 %b on chip 1 has type tensor<8xf32, #tp.chip<1>>, which does not match the result tensor<4xf32>
// CHECK-NEXT: %s = tp.allreduce %a, %b
    %s = tp.allreduce %a, %b : tensor<4xf32, #tp.chip<0>>, tensor<8xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return
  }
}

// -----
func.func @f(%a: tensor<4xf32>) {
// CHECK-LABEL: error: 'tp.allreduce' needs the module to state its chip count (module attributes {tp.chips = N : i64})
// CHECK-NEXT: %s = tp.allreduce %a
  %s = tp.allreduce %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}
