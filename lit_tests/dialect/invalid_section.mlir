// Every verifier message of tp.section and tp.yield.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.section' runs on no chip; give it at least one
// CHECK-NEXT: tp.section on []
  tp.section on [] {
    tp.yield
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.section' chips [1, 0] must be strictly increasing
// CHECK-NEXT: tp.section on [1, 0]
  tp.section on [1, 0] {
    tp.yield
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.section' chip list is on chip 2, but the module has 2 chips (0..1)
// CHECK-NEXT: tp.section on [0, 2]
  tp.section on [0, 2] {
    tp.yield
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.section' body must end with 'tp.yield'
// CHECK-NEXT: tp.section on [0]
  tp.section on [0] {
    %e = tensor.empty() : tensor<4xf32>
  }
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.section' yields 0 value(s) of types [], its results are ['tensor<4xf32>']
// CHECK-NEXT: %r = tp.section on [0]
  %r = tp.section on [0] {
    tp.yield
  } : tensor<4xf32>
}

// -----
builtin.module attributes {tp.chips = 2 : i64} {
// CHECK-LABEL: error: 'tp.section' result #0 is on chip 1, which the section (on [0]) does not run on
// CHECK-NEXT: %r = tp.section on [0]
  %r = tp.section on [0] {
    %e = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    tp.yield %e : tensor<4xf32, #tp.chip<1>>
  } : tensor<4xf32, #tp.chip<1>>
}

// -----
func.func @f() {
// CHECK-LABEL: error: 'tp.yield' expects parent op 'tp.section'
// CHECK-NEXT: tp.yield
  "tp.yield"() : () -> ()
}

// -----
// A section is a statement: of a function, or of a chip's program, never nested in work.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.section "outer" on [0, 1] {
// CHECK-LABEL: error: 'tp.section' is a statement of a function or a chip program, not of 'tp.section'
      %i = tp.section "inner" on [0] {
        tp.yield %x : tensor<4xf32>
      } : tensor<4xf32>
      tp.yield %i : tensor<4xf32>
    } : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}
