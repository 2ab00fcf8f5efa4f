// Scalars carry their chip: a scalar read out of chip 1's tensor is chip 1's data wherever it
// goes — written into a spine tensor, used as an index, a loop bound or a condition. Each
// refused case has a sound twin beside it (the same shape, reading the spine), certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// CHECK-LABEL: error: 'linalg.fill' computes spine value %f from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
// CHECK-NEXT: %f = linalg.fill ins(%s
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @fill(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %f = linalg.fill ins(%s : f32) outs(%x : tensor<4xf32>) -> tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @fill_spine
// CHECK: linalg.fill ins(%s
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @fill_spine(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %x[%c0] : tensor<4xf32>
    %f = linalg.fill ins(%s : f32) outs(%x : tensor<4xf32>) -> tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'tensor.splat' computes spine value %t from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @splat(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %t = tensor.splat %s : tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// A scalar of chip c splatted into chip c's tensor stays on chip c: sound.
// CHECK-LABEL: func.func @splat_chip
// CHECK: tensor.splat %s1 : tensor<4xf32, #tp.chip<1>>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @splat_chip(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s0 = tensor.extract %p0[%c0] : tensor<4xf32, #tp.chip<0>>
    %t0 = tensor.splat %s0 : tensor<4xf32, #tp.chip<0>>
    %s1 = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %t1 = tensor.splat %s1 : tensor<4xf32, #tp.chip<1>>
    %t = tp.allreduce %t0, %t1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'tensor.insert' computes spine value %t from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @insert(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %t = tensor.insert %s into %x[%c0] : tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'tensor.from_elements' computes spine value %t from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @from_elements(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<2xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %one = arith.constant 1.0 : f32
    %t = tensor.from_elements %one, %s : tensor<2xf32>
    func.return %t : tensor<2xf32>
  }
}

// -----
// A scalar `ins` operand of a spine linalg.generic.
// CHECK-LABEL: error: 'linalg.generic' computes spine value %g from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @generic_scalar(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %s : tensor<4xf32>, f32) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %y = arith.mulf %a, %b : f32
      linalg.yield %y : f32
    } -> tensor<4xf32>
    func.return %g : tensor<4xf32>
  }
}

// -----
// A chip scalar as an index into a spine tensor.
// CHECK-LABEL: error: 'tensor.extract_slice' computes spine value %row from %i (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @index(%x: tensor<8xf32>, %n1: tensor<1xi64, #tp.chip<1>>) -> tensor<2xf32> {
    %c0 = arith.constant 0 : index
    %n = tensor.extract %n1[%c0] : tensor<1xi64, #tp.chip<1>>
    %i = arith.index_cast %n : i64 to index
    %row = tensor.extract_slice %x[%i] [2] [1] : tensor<8xf32> to tensor<2xf32>
    func.return %row : tensor<2xf32>
  }
}

// -----
// The same index taken from a host input is sound.
// CHECK-LABEL: func.func @index_spine
// CHECK: tensor.extract_slice %x[%i]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @index_spine(%x: tensor<8xf32>, %n: i64) -> tensor<2xf32> {
    %i = arith.index_cast %n : i64 to index
    %row = tensor.extract_slice %x[%i] [2] [1] : tensor<8xf32> to tensor<2xf32>
    func.return %row : tensor<2xf32>
  }
}

// -----
// A chip scalar as a loop bound: how often the spine is updated depends on chip 1.
// CHECK-LABEL: error: 'arith.addf' computes spine value %y from %acc (chip 1's data) through 'scf.for' from %ub (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
// CHECK-NEXT: %y = arith.addf %acc, %x
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @loop_bound(%x: tensor<4xf32>, %n1: tensor<1xindex, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ub = tensor.extract %n1[%c0] : tensor<1xindex, #tp.chip<1>>
    %r = scf.for %iv = %c0 to %ub step %c1 iter_args(%acc = %x) -> (tensor<4xf32>) {
      %y = arith.addf %acc, %x : tensor<4xf32>
      scf.yield %y : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @loop_bound_spine
// CHECK: scf.for
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @loop_bound_spine(%x: tensor<4xf32>, %ub: index) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %iv = %c0 to %ub step %c1 iter_args(%acc = %x) -> (tensor<4xf32>) {
      %y = arith.addf %acc, %x : tensor<4xf32>
      scf.yield %y : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// A chip-derived condition choosing between two spine tensors.
// CHECK-LABEL: error: 'arith.select' computes spine value %r from %c (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @select(%x: tensor<4xf32>, %y: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %c = arith.cmpf olt, %s, %zero : f32
    %r = arith.select %c, %x, %y : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'scf.if' computes spine value %r from %c (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @if(%x: tensor<4xf32>, %y: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %c = arith.cmpf olt, %s, %zero : f32
    %r = scf.if %c -> (tensor<4xf32>) {
      scf.yield %x : tensor<4xf32>
    } else {
      scf.yield %y : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// The condition taken from the all-reduced sum is the spine's: sound.
// CHECK-LABEL: func.func @if_spine
// CHECK: scf.if %c
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @if_spine(%x: tensor<4xf32>, %y: tensor<4xf32>, %p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %sum = tp.allreduce %p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    %s = tensor.extract %sum[%c0] : tensor<4xf32>
    %c = arith.cmpf olt, %s, %zero : f32
    %r = scf.if %c -> (tensor<4xf32>) {
      scf.yield %x : tensor<4xf32>
    } else {
      scf.yield %y : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}
