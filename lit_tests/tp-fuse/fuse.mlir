// tp-fuse: producer-consumer statements become one section when the chip allows it. The shim
// is always wrapped in TensorParallelShim: a fused op runs on one chip, never mixes a chip's
// tensors with the spine, never holds a collective's fold.
// RUN: tp-opt %s --split-input-file --tp-fuse=shim=sn40l | filecheck %s
// RUN: tp-opt %s --split-input-file --tp-fuse="shim=sn40l report=true" -o %t 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: not tp-opt %s --tp-fuse=shim=tpu 2>&1 | filecheck %s --check-prefix=BADSHIM

// A legal chip-local fusion: chip 0's chain becomes one section on chip 0, yielding what is
// used outside it; chip 1's chain another.
// CHECK-LABEL: func.func @chains
// CHECK:      %b0 = tp.section "b0" on [0] {
// CHECK-NEXT:   %a0 = arith.mulf %x0, %x0 : tensor<4xf32, #tp.chip<0>>
// CHECK-NEXT:   %b0_1 = arith.addf %a0, %x0 : tensor<4xf32, #tp.chip<0>>
// CHECK-NEXT:   tp.yield %b0_1 : tensor<4xf32, #tp.chip<0>>
// CHECK-NEXT: } : tensor<4xf32, #tp.chip<0>>
// CHECK:      %b1 = tp.section "b1" on [1] {
// CHECK-NEXT:   %c1 = linalg.add
// BADSHIM: error: bad pass pipeline 'tp-fuse{shim=tpu}': Incompatible types: given ('tpu',), expected typing.Literal['reference', 'sn40l', 'sn40l-int8']
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chains(%x0: tensor<4xf32, #tp.chip<0>>, %x1: tensor<4xf32, #tp.chip<1>>) -> (tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) {
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %a0 = arith.mulf %x0, %x0 : tensor<4xf32, #tp.chip<0>>
    %b0 = arith.addf %a0, %x0 : tensor<4xf32, #tp.chip<0>>
    %c1 = linalg.add ins(%x1, %x1 : tensor<4xf32, #tp.chip<1>>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    %a1 = arith.mulf %c1, %c1 : tensor<4xf32, #tp.chip<1>>
    %b1 = arith.addf %a1, %x1 : tensor<4xf32, #tp.chip<1>>
    func.return %b0, %b1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>
  }
}

// -----
// A fusion across two chips is refused: %c1 reads chip 0's %b0 (a program tp-verify refuses
// as mixed-chips; the shim refuses to fuse it all the same).
// CHECK-LABEL: func.func @across_chips
// CHECK:      %b0 = tp.section "b0" on [0]
// CHECK-NEXT:   arith.mulf
// CHECK-NEXT:   arith.addf
// CHECK-NEXT:   tp.yield
// CHECK-NEXT: }
// CHECK-NEXT: %c1 = linalg.add
// REPORT: tp-fuse: did not fuse %c1 into the section ending at %b0: it would fuse work of chips [0, 1]: a fused op runs on one chip [tp(sn40l:bf16)]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @across_chips(%x0: tensor<4xf32, #tp.chip<0>>, %x1: tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>> {
    %e1 = tensor.empty() : tensor<4xf32, #tp.chip<1>>
    %a0 = arith.mulf %x0, %x0 : tensor<4xf32, #tp.chip<0>>
    %b0 = arith.addf %a0, %x0 : tensor<4xf32, #tp.chip<0>>
    %c1 = linalg.add ins(%b0, %x1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
    func.return %c1 : tensor<4xf32, #tp.chip<1>>
  }
}

// -----
// A spine scalar (the cache position) is not fused with chip 0's in-place cache write: the
// section would run on chip 0 alone, and chip 1, which needs the position too, could not
// read it (scalars do not cross chips).
// CHECK-LABEL: func.func @position_then_cache_write
// CHECK-NOT:  tp.section
// REPORT: tp-fuse: did not fuse %k0_new into the section ending at %pos: it would fuse chip 0's work with the spine's: a fused op runs where what it binds lives, and the spine lives on every chip [tp(sn40l:bf16)]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @position_then_cache_write(%n: i64, %r0: tensor<1x8xf32, #tp.chip<0>>, %k0: tensor<16x8xf32, #tp.chip<0>>) -> tensor<16x8xf32, #tp.chip<0>> {
    %pos = arith.index_cast %n : i64 to index
    %k0_new = tensor.insert_slice %r0 into %k0[%pos, 0] [1, 8] [1, 1] : tensor<1x8xf32, #tp.chip<0>> into tensor<16x8xf32, #tp.chip<0>>
    func.return %k0_new : tensor<16x8xf32, #tp.chip<0>>
  }
}

// -----
// A position read from chip 0's own data is chip 0's work: it fuses with chip 0's write.
// CHECK-LABEL: func.func @chip_position_then_cache_write
// CHECK:      %k0_new = tp.section "k0_new" on [0] {
// CHECK-NEXT:   %i = tensor.extract %idx0
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @chip_position_then_cache_write(%idx0: tensor<1xindex, #tp.chip<0>>, %r0: tensor<1x8xf32, #tp.chip<0>>, %k0: tensor<16x8xf32, #tp.chip<0>>) -> tensor<16x8xf32, #tp.chip<0>> {
    %c0 = arith.constant 0 : index
    %i = tensor.extract %idx0[%c0] : tensor<1xindex, #tp.chip<0>>
    %k0_new = tensor.insert_slice %r0 into %k0[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32, #tp.chip<0>> into tensor<16x8xf32, #tp.chip<0>>
    func.return %k0_new : tensor<16x8xf32, #tp.chip<0>>
  }
}

// -----
// A spine statement and a chip statement are not fused: the chip's work would move to the
// spine or the spine's onto one chip.
// CHECK-LABEL: func.func @spine_then_chip
// CHECK-NOT:  tp.section
// REPORT: tp-fuse: did not fuse %c into the section ending at %s: it would fuse chip 0's work with the spine's: a fused op runs where what it binds lives, and the spine lives on every chip [tp(sn40l:bf16)]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @spine_then_chip(%x: tensor<4xf32>) -> tensor<4xf32, #tp.chip<0>> {
    %e0 = tensor.empty() : tensor<4xf32, #tp.chip<0>>
    %s = arith.mulf %x, %x : tensor<4xf32>
    %c = linalg.add ins(%s, %x : tensor<4xf32>, tensor<4xf32>) outs(%e0 : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
    func.return %c : tensor<4xf32, #tp.chip<0>>
  }
}

// -----
// A collective's fold (the seed's left fold of adds over one partial per chip) is never
// fused, with its own adds or with what consumes its sum.
// CHECK-LABEL: func.func @fold
// CHECK-NOT:  tp.section
// REPORT: tp-fuse: did not fuse %s into the section ending at %s1: it would hold a collective's fold: the all-reduce over every chip would be lowered as a sum on the spine [tp(sn40l:bf16)]
// REPORT: tp-fuse: did not fuse %out into the section ending at %s: it would hold a collective's fold
builtin.module attributes {tp.chips = 3 : i64} {
  func.func @fold(%p0: tensor<4xf32, #tp.chip<0>>, %p1: tensor<4xf32, #tp.chip<1>>, %p2: tensor<4xf32, #tp.chip<2>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s1 = linalg.add ins(%p0, %p1 : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%s1, %p2 : tensor<4xf32>, tensor<4xf32, #tp.chip<2>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %out = arith.addf %s, %x : tensor<4xf32>
    func.return %out : tensor<4xf32>
  }
}

// -----
// A split program lists chip 0's copy of a statement, then chip 1's: each chip's chain is
// grouped on its own, and a constant fill of a fresh tensor (a reduction's start) joins the
// chain on its way to the reduction that reads it.
// CHECK-LABEL: func.func @interleaved
// CHECK:      %s0 = tp.section "s0" on [0] {
// CHECK-NEXT:   %a0 = arith.mulf %x0, %x0
// CHECK-NEXT:   %z0 = linalg.fill
// CHECK-NEXT:   %s0_1 = linalg.generic
// CHECK:        tp.yield %s0_1
// CHECK:      %s1 = tp.section "s1" on [1] {
// CHECK-NEXT:   %a1 = arith.mulf %x1, %x1
// CHECK-NEXT:   %z1 = linalg.fill
// CHECK-NEXT:   %s1_1 = linalg.generic
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @interleaved(%x0: tensor<4xf32, #tp.chip<0>>, %x1: tensor<4xf32, #tp.chip<1>>) -> (tensor<f32, #tp.chip<0>>, tensor<f32, #tp.chip<1>>) {
    %zero = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<f32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<f32, #tp.chip<1>>
    %a0 = arith.mulf %x0, %x0 : tensor<4xf32, #tp.chip<0>>
    %a1 = arith.mulf %x1, %x1 : tensor<4xf32, #tp.chip<1>>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32, #tp.chip<0>>) -> tensor<f32, #tp.chip<0>>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<f32, #tp.chip<1>>) -> tensor<f32, #tp.chip<1>>
    %s0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%a0 : tensor<4xf32, #tp.chip<0>>) outs(%z0 : tensor<f32, #tp.chip<0>>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %acc, %v : f32
      linalg.yield %r : f32
    } -> tensor<f32, #tp.chip<0>>
    %s1 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%a1 : tensor<4xf32, #tp.chip<1>>) outs(%z1 : tensor<f32, #tp.chip<1>>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %acc, %v : f32
      linalg.yield %r : f32
    } -> tensor<f32, #tp.chip<1>>
    func.return %s0, %s1 : tensor<f32, #tp.chip<0>>, tensor<f32, #tp.chip<1>>
  }
}

// -----

// Two tiles of one elementwise op reading one weight's shard: the shard joins its first
// reader only (sharing a weight is no reason to fuse), so tile 1's section does not wait
// with tile 0's.
// CHECK-LABEL: func.func @tiles
// CHECK:       %w0, %q_t0 = tp.section "q_t0" on [0] {
// CHECK-NEXT:    tp.shard %w
// CHECK-NEXT:    arith.mulf %x0
// CHECK:       %q_t1 = tp.section "q_t1" on [0] {
// CHECK-NEXT:    arith.mulf %x1
// CHECK-NEXT:    arith.addf
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @tiles(%x0: tensor<8xf32, #tp.chip<0>>, %x1: tensor<8xf32, #tp.chip<0>>, %w: tensor<8xf32>) -> (tensor<8xf32, #tp.chip<0>>, tensor<8xf32, #tp.chip<0>>) {
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 8)], full = [8]> : tensor<8xf32> -> tensor<8xf32, #tp.chip<0>>
    %m0 = arith.mulf %x0, %w0 : tensor<8xf32, #tp.chip<0>>
    %q_t0 = arith.addf %m0, %m0 : tensor<8xf32, #tp.chip<0>>
    %m1 = arith.mulf %x1, %w0 : tensor<8xf32, #tp.chip<0>>
    %q_t1 = arith.addf %m1, %m1 : tensor<8xf32, #tp.chip<0>>
    func.return %q_t0, %q_t1 : tensor<8xf32, #tp.chip<0>>, tensor<8xf32, #tp.chip<0>>
  }
}
