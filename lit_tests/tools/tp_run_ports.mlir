// A hand-written program runs as written: no tp.name, no tp.role. Its arguments are bound by
// their SSA names (%x, %w) and take the role their uses show (%w is only cut by tp.shard: a
// weight, random-weights fills it; %x is read whole: an input, random-inputs fills it).
// RUN: tp-run %s --random-weights 1 --random-inputs 2 | filecheck %s
// RUN: not tp-run %s --random-weights 1 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tp-run %s 2>&1 | filecheck %s --check-prefix=NONE

// CHECK: ran {{.*}}tp_run_ports.mlir (2 chip(s)): load

// MISSING-NOT: Traceback
// MISSING: tp-run: error: the inputs have no tensor 'x' or 'arg0' (expected f32 of shape [2, 3]), nor does the checkpoint; the only tensor in the checkpoint is 'w'
// MISSING-NOT: Traceback

// NONE: tp-run: error: give the arguments: --weights CKPT or --random-weights SEED, and/or --inputs IN.npz or --random-inputs SEED (or --dry-run)

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @f(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 3]> : tensor<4x3xf32> -> tensor<2x3xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 3]> : tensor<4x3xf32> -> tensor<2x3xf32, #tp.chip<1>>
    %full = tp.unshard %w0, %w1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 3]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 3]>] : tensor<2x3xf32, #tp.chip<0>>, tensor<2x3xf32, #tp.chip<1>> -> tensor<4x3xf32>
    %e = tensor.empty() : tensor<2x4xf32>
    %zero = arith.constant 0.0 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %full : tensor<2x3xf32>, tensor<4x3xf32>) outs(%acc : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4xf32>
    func.return %y : tensor<2x4xf32>
  }
}
