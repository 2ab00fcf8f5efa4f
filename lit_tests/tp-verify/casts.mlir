// Casts through other types keep the chip: chip 1's tensor taken through a memref, an
// unrealized conversion cast or a vector is still chip 1's data when it comes back as a
// tensor. An op the checker cannot see through (one that writes memory, an unregistered op)
// is refused, never trusted. Each refused cast has a sound twin beside it, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect --tp-verify | filecheck %s

// CHECK-LABEL: error: 'bufferization.to_tensor' computes spine value %t from %m (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @memref(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %m = bufferization.to_buffer %p1 : tensor<4xf32, #tp.chip<1>> to memref<4xf32>
    %t = bufferization.to_tensor %m restrict : memref<4xf32> to tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @memref_chip
// CHECK: bufferization.to_tensor %m
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @memref_chip(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %m = bufferization.to_buffer %p1 : tensor<4xf32, #tp.chip<1>> to memref<4xf32>
    %t = bufferization.to_tensor %m restrict : memref<4xf32> to tensor<4xf32, #tp.chip<1>>
    %s = tp.allreduce %p0, %t : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'builtin.unrealized_conversion_cast' computes spine value %t from %p1 on chip 1: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @cast(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %t = builtin.unrealized_conversion_cast %p1 : tensor<4xf32, #tp.chip<1>> to tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'builtin.unrealized_conversion_cast' computes spine value %t from %v (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @vector(%p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %v = vector.transfer_read %p1[%c0], %pad : tensor<4xf32, #tp.chip<1>>, vector<4xf32>
    %t = builtin.unrealized_conversion_cast %v : vector<4xf32> to tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: func.func @vector_spine
// CHECK: vector.transfer_read %x
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @vector_spine(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %v = vector.transfer_read %x[%c0], %pad : tensor<4xf32>, vector<4xf32>
    %t = builtin.unrealized_conversion_cast %v : vector<4xf32> to tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// Writing memory cannot be followed by values: refused.
// CHECK-LABEL: error: 'memref.store' writes memory, which values cannot follow: the shard obligation cannot be checked through it [opaque-op]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @store(%x: tensor<4xf32>, %m: memref<4xf32>, %p1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = tensor.extract %p1[%c0] : tensor<4xf32, #tp.chip<1>>
    memref.store %s, %m[%c0] : memref<4xf32>
    %t = bufferization.to_tensor %m restrict : memref<4xf32> to tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// CHECK-LABEL: error: 'test.mystery' is not a registered op: what it computes is unknown: the shard obligation cannot be checked through it [opaque-op]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
    %t = "test.mystery"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}

// -----
// Branches between blocks are not followed (structured control flow only): refused.
// CHECK-LABEL: error: 'cf.cond_br' branches between blocks, which placements do not follow: the shard obligation cannot be checked through it [opaque-op]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @branch(%c: i1, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    cf.cond_br %c, ^bb1(%x : tensor<4xf32>), ^bb1(%y : tensor<4xf32>)
  ^bb1(%r: tensor<4xf32>):
    func.return %r : tensor<4xf32>
  }
}

// -----
// A memref whose memory space is chip 1 holds chip 1's data.
// CHECK-LABEL: error: 'tensor.splat' computes spine value %t from %s (chip 1's data): chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_memref(%m: memref<4xf32, #tp.chip<1>>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %s = memref.load %m[%c0] : memref<4xf32, #tp.chip<1>>
    %t = tensor.splat %s : tensor<4xf32>
    func.return %t : tensor<4xf32>
  }
}
