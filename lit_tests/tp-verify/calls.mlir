// Calls are followed into the callee with the placement of each argument; a call the checker
// cannot follow (no body in the module, recursion) is refused. Each refused case has a sound
// twin beside it, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// A chip scalar handed to a callee that writes it into a spine tensor: refused at the call.
// CHECK-LABEL: error: 'func.call' computes spine value %r from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
// CHECK-NEXT: %r = func.call @fill(%s, %x)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @fill(%s: f32, %x: tensor<4xf32>) -> tensor<4xf32> {
    %f = linalg.fill ins(%s : f32) outs(%x : tensor<4xf32>) -> tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    %r = func.call @fill(%s, %x) : (f32, tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @decode
// CHECK: func.call @fill(%s, %x)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @fill(%s: f32, %x: tensor<4xf32>) -> tensor<4xf32> {
    %f = linalg.fill ins(%s : f32) outs(%x : tensor<4xf32>) -> tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %x[%c0] : tensor<4xf32>
    %r = func.call @fill(%s, %x) : (f32, tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// What a callee returns carries the chips it was computed from.
// CHECK-LABEL: error: 'tensor.splat' computes spine value %t from %r (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @first(%p: tensor<4xf32, #tp.chip<1>>) -> f32 {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p[%c0] : tensor<4xf32, #tp.chip<1>>
    func.return %s : f32
  }
  func.func @decode(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %r = func.call @first(%p1) : (tensor<4xf32, #tp.chip<1>>) -> f32
    %t = tensor.splat %r : tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'func.call' calls @external, which has no body in the module to follow: the shard obligation cannot be checked through it [opaque-call]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @external(tensor<4xf32>) -> tensor<4xf32>
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = func.call @external(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'func.call' calls @loop recursively: a recursion's placements cannot be followed: the shard obligation cannot be checked through it [opaque-call]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @loop(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = func.call @loop(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = func.call @loop(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// The entry function (@decode, as tp-run binds it) hands the host chip 1's data, even when
// some dead function also calls it.
// CHECK-LABEL: error: result #0 %p1 on chip 1 is chip 1's data: the host gets the spine (an all-reduce's sum) or a host store (tp.unshard), never one chip's data [chip-result]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>> {
    func.return %p1 : tensor<4xf32, #tp.chip<1>>
  }
  func.func private @unused(%p1: tensor<4xf32, #tp.chip<1>>) {
    %r = func.call @decode(%p1) : (tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
// An all-reduce inside a helper: its result is the spine, whatever chips its arguments hold.
// CHECK-LABEL: func.func @decode
// CHECK: func.call @sum(%p0, %p1)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @sum(%a: tensor<4xf32, #tp.chip<0>>, %b: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %s = tp.allreduce %a, %b : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %r = func.call @sum(%p0, %p1) : (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}
