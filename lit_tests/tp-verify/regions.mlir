// Nested regions are looked into: what is refused at the top level is refused inside
// scf.if, scf.for and scf.execute_region, and a region that captures a chip's value from
// above computes chip data. Each refused case has a sound twin beside it, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// CHECK-LABEL: error: 'linalg.add' computes spine value %l from %p1 on chip 1: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
// CHECK-NEXT: %l = linalg.add ins(%x, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @leak_in_if(%c: i1, %x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %r = scf.if %c -> (tensor<4xf32>) {
      %e = tensor.empty() : tensor<4xf32>
      %l = linalg.add ins(%x, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      scf.yield %l : tensor<4xf32>
    } else {
      scf.yield %x : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @spine_in_if
// CHECK: scf.if %c
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @spine_in_if(%c: i1, %x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %r = scf.if %c -> (tensor<4xf32>) {
      %e = tensor.empty() : tensor<4xf32>
      %l = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      scf.yield %l : tensor<4xf32>
    } else {
      scf.yield %x : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'linalg.add' mixes %a on chip 0 with %b on chip 1: a statement works on one chip's tensors (and the spine) [mixed-chips]
// CHECK-NEXT: %m = linalg.add ins(%a, %b
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mixed_in_for(%n: index, %a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) -> () {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
      %m = linalg.add ins(%a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    }
    func.return
  }
}

// -----
// CHECK-LABEL: func.func @chip_in_for
// CHECK: scf.for
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_in_for(%n: index, %a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) -> () {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %m = arith.addf %a, %a : tensor<4xf32, #tp.chip<0>>
    }
    func.return
  }
}

// -----
// CHECK-LABEL: error: 'arith.addf' computes on %k, a host output (a tp.unshard's result): only the function's return may use it, computing on it would move chip data to the spine without an all-reduce [host-store-used]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @host_output_in_region(%k0: tensor<1x4xf32, #tp.chip<0>>, %k1: tensor<1x4xf32, #tp.chip<1>>) -> tensor<2x4xf32> {
    %k = tp.unshard %k0, %k1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
    %d = scf.execute_region -> (tensor<2x4xf32>) {
      %s = arith.addf %k, %k : tensor<2x4xf32>
      scf.yield %s : tensor<2x4xf32>
    }
    func.return %d : tensor<2x4xf32>
  }
}

// -----
// A host output handed straight back through a region is sound.
// CHECK-LABEL: func.func @host_output_through_region
// CHECK: scf.execute_region
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @host_output_through_region(%k0: tensor<1x4xf32, #tp.chip<0>>, %k1: tensor<1x4xf32, #tp.chip<1>>) -> tensor<2x4xf32> {
    %d = scf.execute_region -> (tensor<2x4xf32>) {
      %k = tp.unshard %k0, %k1 slices [#tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]>, #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]>] : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<2x4xf32>
      scf.yield %k : tensor<2x4xf32>
    }
    func.return %d : tensor<2x4xf32>
  }
}

// -----
// CHECK-LABEL: error: fold of adds into %s over partials on chips [0, 2, 1] is out of chip order [0, 2, 1]: an all-reduce needs one partial per chip 0..2, in chip order or a cyclic rotation of it [fold-not-allreduce]
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fold_in_if(%c: i1, %x: tensor<4xf32>, %p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>) -> tensor<4xf32> {
    %r = scf.if %c -> (tensor<4xf32>) {
      %e = tensor.empty() : tensor<4xf32>
      %s2 = linalg.add ins(%p0, %p2 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      %s = linalg.add ins(%s2, %p1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      scf.yield %s : tensor<4xf32>
    } else {
      scf.yield %x : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @ordered_fold_in_if
// CHECK: linalg.add ins(%p0, %p1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @ordered_fold_in_if(%c: i1, %x: tensor<4xf32>, %p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %r = scf.if %c -> (tensor<4xf32>) {
      %e = tensor.empty() : tensor<4xf32>
      %s = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      scf.yield %s : tensor<4xf32>
    } else {
      scf.yield %x : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
}

// -----
// A linalg.generic over spine tensors whose body reads chip 1's tensor, captured from above.
// CHECK-LABEL: error: 'linalg.generic' computes spine value %g from %p1 on chip 1, read inside its region: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @captured(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %i = linalg.index 0 : index
      %b = tensor.extract %p1[%i] : tensor<4xf32, #tp.chip<1>>
      %y = arith.addf %a, %b : f32
      linalg.yield %y : f32
    } -> tensor<4xf32>
    func.return %g : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @captured_spine
// CHECK: tensor.extract %w[%i]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @captured_spine(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %i = linalg.index 0 : index
      %b = tensor.extract %w[%i] : tensor<4xf32>
      %y = arith.addf %a, %b : f32
      linalg.yield %y : f32
    } -> tensor<4xf32>
    func.return %g : tensor<4xf32>
  }
}

// -----
// A value reaching a region op's result from deep inside it: scf.parallel's result is what
// its nested scf.reduce combines, here with chip 1's scalar.
// CHECK-LABEL: error: 'tensor.splat' computes spine value %t from %r (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @parallel_reduce(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %r = "scf.parallel"(%c0, %c4, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb0(%i: index):
      %one = arith.constant 1.0 : f32
      "scf.reduce"(%one) ({
      ^bb1(%lhs: f32, %rhs: f32):
        %x = arith.addf %lhs, %s : f32
        "scf.reduce.return"(%x) : (f32) -> ()
      }) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %t = tensor.splat %r : tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// Chip 0's and chip 1's partials carried through a loop each in its own iteration argument,
// all-reduced after it: each argument holds its own chip's data only.
// CHECK-LABEL: func.func @partials_through_loop
// CHECK: tp.allreduce %r, %r_1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @partials_through_loop(%n: index, %p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %p0, %b = %p1) -> (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) {
      %a2 = arith.addf %a, %a : tensor<4xf32, #tp.chip<0>>
      %b2 = arith.addf %b, %b : tensor<4xf32, #tp.chip<1>>
      scf.yield %a2, %b2 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>
    }
    %s = tp.allreduce %r#0, %r#1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
