// Every verifier message of #tp.chip, #tp.slice and the module's chip grid.
// RUN: tp-opt %s --split-input-file --verify-diagnostics | filecheck %s

"test.op"() {c = #tp.chip<-1>} : () -> ()
// CHECK-LABEL: error: #tp.chip<-1>: chip index is negative

// -----
"test.op"() {s = #tp.slice<axis = 0, ranges = [(0, 1)], full = []>} : () -> ()
// CHECK-LABEL: error: #tp.slice: the full shape has rank 0; nothing to cut

// -----
"test.op"() {s = #tp.slice<axis = 0, ranges = [(0, 1)], full = [4, 0]>} : () -> ()
// CHECK-LABEL: error: #tp.slice: full shape [4, 0] has a non-positive dim

// -----
"test.op"() {s = #tp.slice<axis = 2, ranges = [(0, 1)], full = [4, 4]>} : () -> ()
// CHECK-LABEL: error: #tp.slice: axis 2 is out of range for full shape [4, 4]

// -----
"test.op"() {s = #tp.slice<axis = 0, ranges = [], full = [4, 4]>} : () -> ()
// CHECK-LABEL: error: #tp.slice: no ranges; a slice takes at least one

// -----
"test.op"() {s = #tp.slice<axis = 0, ranges = [(1, 0)], full = [4, 4]>} : () -> ()
// CHECK-LABEL: error: #tp.slice: range (1, 0) is empty

// -----
"test.op"() {s = #tp.slice<axis = 1, ranges = [(2, 3)], full = [4, 4]>} : () -> ()
// CHECK-LABEL: error: #tp.slice: range (2, 3) is out of bounds for axis 1 of size 4

// -----
"test.op"() {s = #tp.slice<axis = 0, ranges = [(2, 2), (0, 3)], full = [4, 4]>} : () -> ()
// CHECK-LABEL: error: #tp.slice: ranges (0, 3) and (2, 2) overlap

// -----
// A chip count must be a positive integer.
builtin.module attributes {tp.chips = 0 : i64} {}
// CHECK-LABEL: error: 'tp.chips' must be a positive integer, got 0 : i64

// -----
// A chip-owned type anywhere (here a function argument) is checked against N.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%a: tensor<4xf32, #tp.chip<2>>) {
    func.return
  }
}
// CHECK-LABEL: error: 'func.func' block argument #0 is on chip 2, but the module has 2 chips (0..1)

// -----
// A chip index in a module that states no chip count.
func.func @g() -> tensor<4xf32, #tp.chip<0>> {
  %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
  func.return %e : tensor<4xf32, #tp.chip<0>>
}
// CHECK-LABEL: error: 'func.func' attribute 'function_type' is on chip 0 but the module states no chip count (tp.chips)
