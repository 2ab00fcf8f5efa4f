// tp-verify on an outlined program (@decode calling @layer once a layer): the certificate
// covers the callee and its callers — the callee is followed once per distinct placement of
// its arguments, at every stage: source, sectioned, phased (tp-transfers and tp-phase keep
// the certificate), per-chip programs (each chip's program calling its own part of @layer,
// checked as the flat programs the calls stand for). A call to a function placing its
// own work is a statement of a function (sections never nest); it hands a scalar only to
// chips that computed it, and a scalar it returns is held where its callee left it. Each
// refused case has a sound twin beside it, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate --tp-transfers --tp-verify --tp-phase | filecheck %s --check-prefix=PHASED
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify --tp-relocate --tp-transfers --tp-phase --tp-link-points --tp-relay --tp-verify | filecheck %s --check-prefix=PROGRAMS

// The two-layer MLP, certified as written...
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation"
// CHECK-NEXT: func.func private @layer(
// CHECK:      %s = tp.allreduce %h0, %h1
// CHECK-LABEL: func.func @decode(
// CHECK:      func.call @layer(%x2, %w.0, %cache.0, %pos)
// CHECK-NEXT: func.call @layer(%y0, %w.1, %cache.1, %pos)
// ...sectioned and phased: the callee's sections once, the calls bare, still certified...
// PHASED-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation"
// PHASED-NEXT: func.func private @layer(
// PHASED:      %s = tp.section "s" on [0, 1] attributes {tp.phase = 3 : i64} {
// PHASED-LABEL: func.func @decode(
// PHASED:      func.call @layer(%x2, %w.0, %cache.0, %pos) {tp.phase = 2 : i64}
// PHASED-NEXT: tp.barrier phase 2
// PHASED-NEXT: func.call @layer(%y0, %w.1, %cache.1, %pos) {tp.phase = 3 : i64}
// ...and as per-chip programs: one function per chip, called once a layer, its links inside.
// PROGRAMS-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.certificate = {checked = "shard-obligation"
// PROGRAMS-NOT: @layer(
// PROGRAMS:     func.func private @layer.chip0(
// PROGRAMS:     tp.link 1 sends() as [] receives ["h1"]
// PROGRAMS:     func.func private @layer.chip1(
// PROGRAMS:     tp.chip_program on 0
// PROGRAMS:     func.call @layer.chip0({{.*}}) {tp.tag = "call0_"}
// PROGRAMS-NEXT: func.call @layer.chip0({{.*}}) {tp.tag = "call1_"}
// PROGRAMS:     tp.chip_program on 1
// PROGRAMS:     tp.relay
// PROGRAMS:     tp.relay_repeat 2 times
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %cache: tensor<2x4xf32>, %pos: index) -> (tensor<1x4xf32>, tensor<2x4xf32>) {
    %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %e1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %w0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<0>>
    %w1 = tp.shard %w at #tp.slice<axis = 0, ranges = [(1, 1)], full = [2, 4]> : tensor<2x4xf32> -> tensor<1x4xf32, #tp.chip<1>>
    %h0 = linalg.mul ins(%x, %w0 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<0>>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %h1 = linalg.mul ins(%x, %w1 : tensor<1x4xf32>, tensor<1x4xf32, #tp.chip<1>>) outs(%e1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %s = tp.allreduce %h0, %h1 : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
    %y = arith.addf %x, %s : tensor<1x4xf32>
    %c = tensor.insert_slice %y into %cache[%pos, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<2x4xf32>
    func.return %y, %c : tensor<1x4xf32>, tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x"}, %w.0: tensor<2x4xf32> {tp.name = "w.0"}, %w.1: tensor<2x4xf32> {tp.name = "w.1"}, %cache.0: tensor<2x4xf32> {tp.name = "cache.0"}, %cache.1: tensor<2x4xf32> {tp.name = "cache.1"}, %pos: index {tp.name = "pos"}) -> (tensor<1x4xf32> {tp.name = "out"}, tensor<2x4xf32> {tp.name = "old"}, tensor<2x4xf32> {tp.name = "cache.0"}, tensor<2x4xf32> {tp.name = "cache.1"}) {
    %x2 = arith.mulf %x, %x : tensor<1x4xf32>
    %old = arith.addf %cache.0, %cache.0 : tensor<2x4xf32>
    %y0, %c0 = func.call @layer(%x2, %w.0, %cache.0, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %y1, %c1 = func.call @layer(%y0, %w.1, %cache.1, %pos) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, index) -> (tensor<1x4xf32>, tensor<2x4xf32>)
    %out = arith.addf %y1, %y1 : tensor<1x4xf32>
    func.return %out, %old, %c0, %c1 : tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}
// -----
// A call to a function placing its own sections, inside a section: the sections would nest.
// CHECK-LABEL: error: 'func.call' calls @double, which places its own work on chips, but its section runs on chips [0, 1]: replicated spine work: sections never nest, a call placing work is a statement of a function [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @double(%x: tensor<4xf32>) -> tensor<4xf32> {
    %d = tp.section "d" on [0, 1] {
      %a = arith.addf %x, %x : tensor<4xf32>
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.section "r" on [0, 1] {
      %y = func.call @double(%x) : (tensor<4xf32>) -> tensor<4xf32>
      tp.yield %y : tensor<4xf32>
    } : tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----
// Its sound twin: the call is a statement of @decode.
// CHECK-LABEL: func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %y = func.call @double(%x)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @double(%x: tensor<4xf32>) -> tensor<4xf32> {
    %d = tp.section "d" on [0, 1] {
      %a = arith.addf %x, %x : tensor<4xf32>
      tp.yield %a : tensor<4xf32>
    } : tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = func.call @double(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----
// A scalar computed on chip 0 only, handed to a callee that reads it on chips 0 and 1: a
// scalar does not cross chips (and the callee takes its arguments for what every chip
// reading them holds).
// CHECK-LABEL: error: 'func.call' hands @fill %k, computed on chips [0], which @fill reads on chip 1: a scalar does not cross chips, so it is computed wherever it is read [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @fill(%k: f32) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %f = tp.section "f" on [0, 1] {
      %g = linalg.fill ins(%k : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %g : tensor<4xf32>
    } : tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>, %n: i64) -> tensor<4xf32> {
    %k = tp.section "k" on [0] {
      %a = arith.sitofp %n : i64 to f32
      tp.yield %a : f32
    } : f32
    %y = func.call @fill(%k) : (f32) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----
// Its sound twin: the scalar is computed on both chips that read it.
// CHECK-LABEL: func.func @decode(%x: tensor<4xf32>, %n: i64) -> tensor<4xf32> {
// CHECK: %y = func.call @fill(%k)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @fill(%k: f32) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %f = tp.section "f" on [0, 1] {
      %g = linalg.fill ins(%k : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %g : tensor<4xf32>
    } : tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>, %n: i64) -> tensor<4xf32> {
    %k = tp.section "k" on [0, 1] {
      %a = arith.sitofp %n : i64 to f32
      tp.yield %a : f32
    } : f32
    %y = func.call @fill(%k) : (f32) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----
// A scalar the callee computes on chip 1 only, read by the caller on chips 0 and 1: a call's
// result is held where its callee leaves it.
// CHECK-LABEL: error: %k is computed on chips [1], but is read on chip 0: a scalar does not cross chips, so it is computed wherever it is read [section-chip]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @scalar(%n: i64) -> f32 {
    %k = tp.section "k" on [1] {
      %a = arith.sitofp %n : i64 to f32
      tp.yield %a : f32
    } : f32
    func.return %k : f32
  }
  func.func @decode(%n: i64) -> tensor<4xf32> {
    %k = func.call @scalar(%n) : (i64) -> f32
    %e = tensor.empty() : tensor<4xf32>
    %f = tp.section "f" on [0, 1] {
      %g = linalg.fill ins(%k : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      tp.yield %g : tensor<4xf32>
    } : tensor<4xf32>
    func.return %f : tensor<4xf32>
  }
}
