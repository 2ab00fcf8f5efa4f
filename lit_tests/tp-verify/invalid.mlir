// Every TpReject reason tp-verify gives, naming the op, the leaking value and its chip.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// A leak: chip 1's value fed to a spine statement.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @leak(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
// CHECK-LABEL: error: 'linalg.add' computes spine value %bad from %p1 on chip 1: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
// CHECK-NEXT: %bad = linalg.add ins(%x, %p1
    %bad = linalg.add ins(%x, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %bad : tensor<4xf32>
  }
}

// -----
// A fold that misses a chip is not an all-reduce.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @missing(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
// CHECK-LABEL: error: fold of adds into %s over partials on chips [0, 1] misses chip 2: an all-reduce needs one partial per chip 0..2, in chip order or a cyclic rotation of it [fold-not-allreduce]
// CHECK-NEXT: %s = linalg.add ins(%p0, %p1
    %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// ... or repeats one ...
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @repeat(%p0: tensor<4xf32, #tp.chip<0>>, %q0: tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
// CHECK-LABEL: error: fold of adds into %s over partials on chips [0, 0] repeats chip 0 and misses chip 1: an all-reduce needs one partial per chip 0..1, in chip order or a cyclic rotation of it [fold-not-allreduce]
    %s = linalg.add ins(%p0, %q0 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// ... or is neither in chip order nor a cyclic rotation of it (ring.mlir: rotations) ...
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @order(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p1, %p0 : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: error: fold of adds into %s over partials on chips [1, 0, 2] is out of chip order [1, 0, 2]: an all-reduce needs one partial per chip 0..2, in chip order or a cyclic rotation of it [fold-not-allreduce]
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// ... or adds in spine data between its partials.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @spine(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %x : tensor<4xf32, #tp.chip<0>>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: error: fold of adds into %s adds spine value %x to chip partials: an all-reduce sums one partial per chip and nothing else [fold-mixes-spine]
// CHECK-NEXT: %s = linalg.add ins(%s1, %p1
    %s = linalg.add ins(%s1, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// A statement mixing two chips' tensors.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mixed(%a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) -> () {
    %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
// CHECK-LABEL: error: 'linalg.add' mixes %a on chip 0 with %b on chip 1: a statement works on one chip's tensors (and the spine) [mixed-chips]
    %m = linalg.add ins(%a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    func.return
  }
}

// -----
// A host output computed on.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @store(%k0: tensor<1x4xf32, #tp.chip<0>>, %k1: tensor<1x4xf32, #tp.chip<1>>) -> tensor<2x4xf32> {
    %k = tp.unshard %k0, %k1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
// CHECK-LABEL: error: 'arith.addf' computes on %k, a host output (a tp.unshard's result): only the function's return may use it, computing on it would move chip data to the spine without an all-reduce [host-store-used]
// CHECK-NEXT: %d = arith.addf %k, %k
    %d = arith.addf %k, %k : tensor<2x4xf32>
    func.return %d : tensor<2x4xf32>
  }
}

// -----
// A section holding chip 1's value while running on chip 0 only.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @section(%a: tensor<4xf32, #tp.chip<1>>) -> () {
    tp.section on [0] {
// CHECK-LABEL: error: %b is on chip 1, but its section runs on chips [0] [section-chip]
// CHECK-NEXT: %b = arith.addf %a, %a
      %b = arith.addf %a, %a : tensor<4xf32, #tp.chip<1>>
      tp.yield
    }
    func.return
  }
}

// -----
// A fold's partial sum read by anything but the next add: %s1 lacks chip 2's partial.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @escape(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
// CHECK-LABEL: error: fold of adds: the partial sum %s1 of chips [0, 1] is also read by 'arith.mulf', which sees a sum missing chip 2: only the next add of a fold may read its partial sums [fold-not-allreduce]
// CHECK-NEXT: %s1 = linalg.add ins(%p0, %p1
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %m = arith.mulf %s1, %s1 : tensor<4xf32>
    func.return %s, %m : tensor<4xf32>, tensor<4xf32>
  }
}

// -----
// The same escape inside one section, where the partial sum is yielded and also read.
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @escape_in_section(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %s1, %m = tp.section "s1" on [0, 1, 2] {
// CHECK-LABEL: error: fold of adds: the partial sum %s1 of chips [0, 1] is also read by 'arith.mulf', which sees a sum missing chip 2: only the next add of a fold may read its partial sums [fold-not-allreduce]
      %a = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      %b = arith.mulf %a, %a : tensor<4xf32>
      tp.yield %a, %b : tensor<4xf32>, tensor<4xf32>
    } : tensor<4xf32>, tensor<4xf32>
    %s = tp.section "s" on [0, 1, 2] {
      %c = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %c : tensor<4xf32>
    } : tensor<4xf32>
    func.return %s, %m : tensor<4xf32>, tensor<4xf32>
  }
}

// -----
// A linalg.add written with a body of its own (here: a product with another chip-1 tensor)
// is no add, so no fold: its sum of two chips' data is a leak.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @custom_add(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %q1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
// CHECK-LABEL: error: 'linalg.add' computes spine value %s from %p0 on chip 0: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
    %s = "linalg.add"(%p0, %p1, %e) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%a: f32, %b: f32, %o: f32):
      %i = arith.constant 0 : index
      %x = tensor.extract %q1[%i] : tensor<4xf32, #tp.chip<1>>
      %y = arith.mulf %a, %x : f32
      linalg.yield %y : f32
    }) : (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>, tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
