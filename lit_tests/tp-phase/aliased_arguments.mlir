// A lowered call may not hand one storage to two parameters of a callee that writes one of
// them in place: the callee's statements are placed, fused and phased ONCE, for every call,
// by the storages its parameters name, so a read of %b could be moved past the in-place
// write of %a (tests/test_storage_aliases.py: off by 1.1 under storage semantics before).
// Every pass that orders a callee's statements refuses such a call, at the call, naming both
// parameters; one storage handed to two parameters that are only read is fine.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate --tp-transfers --tp-phase | filecheck %s --check-prefixes=ERR,PHASE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-fuse | filecheck %s --check-prefix=ERR
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-phase | filecheck %s --check-prefix=SECTIONED

// The issue's shape: one chip-0 cache as %a and %b; @layer reads %b, then writes %a.
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @layer(%a: tensor<4x2xf32, #tp.chip<0>>, %b: tensor<4x2xf32, #tp.chip<0>>, %row: tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>) {
    %y = arith.mulf %b, %b : tensor<4x2xf32, #tp.chip<0>>
    %u = tensor.insert_slice %row into %a[0, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<0>> into tensor<4x2xf32, #tp.chip<0>>
    func.return %y, %u : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>
  }
  func.func @decode(%cache: tensor<4x2xf32, #tp.chip<0>> {tp.name = "cache"}, %row: tensor<1x2xf32, #tp.chip<0>> {tp.name = "row"}) -> (tensor<4x2xf32> {tp.name = "y"}) {
// ERR-LABEL: error: 'func.call' hands @layer one storage, %cache, for argument #0 (%a) and argument #1 (%b), and @layer writes %a in place: its statements are ordered once, for every call, as if %a and %b were two (hand it two storages, or inline the call before lowering: tp-inline) [aliased-arguments]
// ERR-NEXT: func.call @layer(%cache, %cache, %row)
    %y, %u = func.call @layer(%cache, %cache, %row) : (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>)
    %o = tp.unshard %y slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 2]>] : tensor<4x2xf32, #tp.chip<0>> -> tensor<4x2xf32>
    func.return %o : tensor<4x2xf32>
  }
}

// -----

// Sharing storage without being one SSA value: the cache and its in-place update's result
// (the written parameter second, the read one first).
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @layer(%b: tensor<4x2xf32, #tp.chip<0>>, %a: tensor<4x2xf32, #tp.chip<0>>, %row: tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>) {
    %y = arith.mulf %b, %b : tensor<4x2xf32, #tp.chip<0>>
    %u = tensor.insert_slice %row into %a[1, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<0>> into tensor<4x2xf32, #tp.chip<0>>
    func.return %y, %u : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>
  }
  func.func @decode(%cache: tensor<4x2xf32, #tp.chip<0>> {tp.name = "cache"}, %row: tensor<1x2xf32, #tp.chip<0>> {tp.name = "row"}) -> (tensor<4x2xf32> {tp.name = "y"}) {
    %new = tensor.insert_slice %row into %cache[0, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<0>> into tensor<4x2xf32, #tp.chip<0>>
// ERR-LABEL: error: 'func.call' hands @layer one storage, %cache, for argument #0 (%b) and argument #1 (%a), and @layer writes %a in place
// ERR-NEXT: func.call @layer(%new, %cache, %row)
    %y, %u = func.call @layer(%new, %cache, %row) : (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>)
    %o = tp.unshard %y slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 2]>] : tensor<4x2xf32, #tp.chip<0>> -> tensor<4x2xf32>
    func.return %o : tensor<4x2xf32>
  }
}

// -----

// The write one call deeper: @mid hands its two parameters to @layer, which writes the
// first; @decode hands @mid one storage for both.
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @layer(%a: tensor<4x2xf32, #tp.chip<0>>, %b: tensor<4x2xf32, #tp.chip<0>>, %row: tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>) {
    %y = arith.mulf %b, %b : tensor<4x2xf32, #tp.chip<0>>
    %u = tensor.insert_slice %row into %a[0, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<0>> into tensor<4x2xf32, #tp.chip<0>>
    func.return %y, %u : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>
  }
  func.func private @mid(%p: tensor<4x2xf32, #tp.chip<0>>, %q: tensor<4x2xf32, #tp.chip<0>>, %row: tensor<1x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>> {
    %y, %u = func.call @layer(%p, %q, %row) : (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>)
    func.return %y : tensor<4x2xf32, #tp.chip<0>>
  }
  func.func @decode(%cache: tensor<4x2xf32, #tp.chip<0>> {tp.name = "cache"}, %row: tensor<1x2xf32, #tp.chip<0>> {tp.name = "row"}) -> (tensor<4x2xf32> {tp.name = "y"}) {
// ERR-LABEL: error: 'func.call' hands @mid one storage, %cache, for argument #0 (%p) and argument #1 (%q), and @mid writes %p in place
// ERR-NEXT: func.call @mid(%cache, %cache, %row)
    %y = func.call @mid(%cache, %cache, %row) : (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %o = tp.unshard %y slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 2]>] : tensor<4x2xf32, #tp.chip<0>> -> tensor<4x2xf32>
    func.return %o : tensor<4x2xf32>
  }
}

// -----

// One storage for two parameters that are only read: nothing to reorder; lowered as ever.
// PHASE-LABEL: func.func private @reads
// PHASE:         tp.section "y" on [0] attributes {tp.phase = 0 : i64}
// PHASE-LABEL: func.func @decode
// PHASE:         func.call @reads(%cache, %cache)
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @reads(%a: tensor<4x2xf32, #tp.chip<0>>, %b: tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>> {
    %y = arith.mulf %a, %b : tensor<4x2xf32, #tp.chip<0>>
    func.return %y : tensor<4x2xf32, #tp.chip<0>>
  }
  func.func @decode(%cache: tensor<4x2xf32, #tp.chip<0>> {tp.name = "cache"}) -> (tensor<4x2xf32> {tp.name = "y"}) {
    %y = func.call @reads(%cache, %cache) : (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>) -> tensor<4x2xf32, #tp.chip<0>>
    %o = tp.unshard %y slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 2]>] : tensor<4x2xf32, #tp.chip<0>> -> tensor<4x2xf32>
    func.return %o : tensor<4x2xf32>
  }
}

// -----

// Already sectioned (tp-relocate ran before the call was made to alias): tp-phase refuses it.
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @layer(%a: tensor<4x2xf32, #tp.chip<0>>, %b: tensor<4x2xf32, #tp.chip<0>>, %row: tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>) {
    %y = tp.section "y" on [0] {
      %0 = arith.mulf %b, %b : tensor<4x2xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4x2xf32, #tp.chip<0>>
    } : tensor<4x2xf32, #tp.chip<0>>
    %u = tp.section "u" on [0] {
      %1 = tensor.insert_slice %row into %a[0, 0] [1, 2] [1, 1] : tensor<1x2xf32, #tp.chip<0>> into tensor<4x2xf32, #tp.chip<0>>
      tp.yield %1 : tensor<4x2xf32, #tp.chip<0>>
    } : tensor<4x2xf32, #tp.chip<0>>
    func.return %y, %u : tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>
  }
  func.func @decode(%cache: tensor<4x2xf32, #tp.chip<0>> {tp.name = "cache"}, %row: tensor<1x2xf32, #tp.chip<0>> {tp.name = "row"}) -> (tensor<4x2xf32> {tp.name = "y"}) {
// SECTIONED-LABEL: error: 'func.call' hands @layer one storage, %cache, for argument #0 (%a) and argument #1 (%b), and @layer writes %a in place
// SECTIONED-NEXT: func.call @layer(%cache, %cache, %row)
    %y, %u = func.call @layer(%cache, %cache, %row) : (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>, tensor<1x2xf32, #tp.chip<0>>) -> (tensor<4x2xf32, #tp.chip<0>>, tensor<4x2xf32, #tp.chip<0>>)
    %o = tp.section "o" on [0] {
      %2 = tp.unshard %y slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4, 2]>] : tensor<4x2xf32, #tp.chip<0>> -> tensor<4x2xf32>
      tp.yield %2 : tensor<4x2xf32>
    } : tensor<4x2xf32>
    func.return %o : tensor<4x2xf32>
  }
}
