// tp-legalize: every op checked against the chip; an unsupported or non-fitting op is a
// diagnostic naming the op, its class and the reason.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize=shim=sn40l | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize=shim=reference | filecheck %s --check-prefix=REF

// The Megatron MLP is legal on the sn40l shim (and everything is on the reference shim).
// CHECK-LABEL: func.func @mlp
// REF-LABEL: func.func @mlp
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @mlp(%x: tensor<1x8xf32>, %w: tensor<16x8xf32>) -> tensor<1x8xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(8, 8)], full = [16, 8]> : tensor<16x8xf32> -> tensor<8x8xf32, #tp.chip<1>>
    %z0 = tensor.empty() : tensor<1x8xf32, #tp.chip<0>>
    %z1 = tensor.empty() : tensor<1x8xf32, #tp.chip<1>>
    %h0 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w0 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<0>>) outs(%z0 : tensor<1x8xf32, #tp.chip<0>>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<0>>
    %h1 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w1 : tensor<1x8xf32>, tensor<8x8xf32, #tp.chip<1>>) outs(%z1 : tensor<1x8xf32, #tp.chip<1>>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32, #tp.chip<1>>
    %sum = tp.allreduce %h0, %h1 : tensor<1x8xf32, #tp.chip<0>>, tensor<1x8xf32, #tp.chip<1>> -> tensor<1x8xf32>
    func.return %sum : tensor<1x8xf32>
  }
}

// -----
// An op tp does not know has no kernel on the chip (the reference shim emulates it).
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @other(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
    %e = tensor.empty() : tensor<4x2xf32>
// CHECK-LABEL: error: 'linalg.transpose' (other) is not supported by sn40l:bf16
// CHECK-NEXT: %t = linalg.transpose
// REF-LABEL: func.func @other
    %t = linalg.transpose ins(%x : tensor<2x4xf32>) outs(%e : tensor<4x2xf32>) permutation = [1, 0]
    func.return %t : tensor<4x2xf32>
  }
}

// -----
// A contraction over 4 elements does not fit the chip's tiles.
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @narrow(%x: tensor<1x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x8xf32> {
    %z = tensor.empty() : tensor<1x8xf32>
// CHECK-LABEL: error: 'linalg.generic' (matmul) does not fit sn40l:bf16: 'linalg.generic' contracts over 4 elements; the chip's tiles need a multiple of 8
    %h = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x4xf32>, tensor<8x4xf32>) outs(%z : tensor<1x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    func.return %h : tensor<1x8xf32>
  }
}

// -----
// No f64 datapath.
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @wide(%x: tensor<4xf64>) -> tensor<4xf64> {
// CHECK-LABEL: error: 'arith.addf' (elementwise) does not fit sn40l:bf16: 'arith.addf' computes in f64, which the chip has no datapath for
    %y = arith.addf %x, %x : tensor<4xf64>
    func.return %y : tensor<4xf64>
  }
}
