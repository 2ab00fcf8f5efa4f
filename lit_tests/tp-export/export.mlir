// tp-export cuts each chip's program at its link points into plain-MLIR segments
// (@chip<c>_halt<h>: what chip c runs when the relay runs it to halt h) and @host (the host's
// stores), every #tp.chip encoding dropped and no tp op left; the module's tp.export
// attribute (JSON) says which segment runs when and what each argument and result is.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-export | filecheck %s

// Two chips: chip 1 sends its partial, chip 0 folds it with its own (the left fold in chip
// order, as plain arith.addf) and sends the sum back. A halt receives into the next segment's
// arguments and sends from the closing segment's results; values live across a halt are
// carried (the index %i as a 0-d i64 tensor); a weight cut by tp.shard arrives as its chip's
// slice (the sections loading it run nowhere); the constant %two is cloned into each segment
// reading it; linalg.add (gone from upstream MLIR) becomes its linalg.generic; an argument a
// segment writes in place (an outs, an insert_slice destination) is marked "written"; @host
// unshards with tensor.insert_slice and returns chip 0's output unchanged ("argument": 2).
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.export = "{\22chips\22:2,\22segments\22:[
// CHECK-SAME: {\22function\22:\22chip0_halt1\22,\22chip\22:0,\22halt\22:1,\22arguments\22:[{\22kind\22:\22input\22,\22name\22:\22p\22},{\22kind\22:\22input\22,\22name\22:\22x\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c0_h0_0\22},{\22kind\22:\22carry\22,\22name\22:\22c0_i_2\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt2\22,\22chip\22:0,\22halt\22:2,\22arguments\22:[{\22kind\22:\22receive\22,\22name\22:\22h1\22},{\22kind\22:\22carry\22,\22name\22:\22c0_h0_0\22}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22s\22},{\22kind\22:\22carry\22,\22name\22:\22c0_s_1\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt3\22,\22chip\22:0,\22halt\22:3,\22arguments\22:[{\22kind\22:\22carry\22,\22name\22:\22c0_s_1\22},{\22kind\22:\22input\22,\22name\22:\22x\22,\22written\22:true},{\22kind\22:\22carry\22,\22name\22:\22c0_i_2\22},{\22kind\22:\22shard\22,\22name\22:\22w\22,\22axis\22:0,\22ranges\22:[[0,2]],\22written\22:true}],\22results\22:[{\22kind\22:\22output\22,\22index\22:0},{\22kind\22:\22output\22,\22index\22:1}]},
// CHECK-SAME: {\22function\22:\22chip1_halt1\22,\22chip\22:1,\22halt\22:1,\22arguments\22:[{\22kind\22:\22input\22,\22name\22:\22x\22}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22h1\22}]},
// CHECK-SAME: {\22function\22:\22chip1_halt2\22,\22chip\22:1,\22halt\22:2,\22arguments\22:[{\22kind\22:\22receive\22,\22name\22:\22s\22},{\22kind\22:\22shard\22,\22name\22:\22w\22,\22axis\22:0,\22ranges\22:[[2,2]],\22written\22:true}],\22results\22:[{\22kind\22:\22output\22,\22index\22:0}]}],
// CHECK-SAME: \22relay\22:[{\22round\22:0,\22run\22:\22chip0_halt1\22},{\22round\22:0,\22run\22:\22chip1_halt1\22},{\22round\22:1,\22copy\22:\22h1\22,\22from\22:1,\22to\22:0},{\22round\22:1,\22run\22:\22chip0_halt2\22},{\22round\22:2,\22run\22:\22chip0_halt3\22},{\22round\22:2,\22copy\22:\22s\22,\22from\22:0,\22to\22:1},{\22round\22:2,\22run\22:\22chip1_halt2\22}],
// CHECK-SAME: \22host\22:{\22function\22:\22host\22,\22arguments\22:[{\22kind\22:\22output\22,\22chip\22:0,\22index\22:1},{\22kind\22:\22output\22,\22chip\22:1,\22index\22:0},{\22kind\22:\22output\22,\22chip\22:0,\22index\22:0}],\22results\22:[{\22kind\22:\22result\22,\22name\22:\22result0\22,\22argument\22:2},{\22kind\22:\22result\22,\22name\22:\22result1\22}]}}"} {
// CHECK-NOT:  tp.
// CHECK:      func.func @chip0_halt1(%p: tensor<i64>, %x: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<i64>) {
// CHECK-NEXT:   %0 = tensor.extract %p[] : tensor<i64>
// CHECK-NEXT:   %1 = arith.index_cast %0 : i64 to index
// CHECK-NEXT:   %2 = arith.mulf %x, %x : tensor<1x4xf32>
// CHECK-NEXT:   %e0 = tensor.empty() : tensor<1x4xf32>
// CHECK-NEXT:   %c0 = linalg.generic {{.*}} ins(%2 : tensor<1x4xf32>) outs(%e0 : tensor<1x4xf32>) {
// CHECK:        %5 = arith.index_cast %1 : index to i64
// CHECK-NEXT:   %6 = tensor.from_elements %5 : tensor<i64>
// CHECK-NEXT:   func.return %c0, %6 : tensor<1x4xf32>, tensor<i64>
// CHECK:      func.func @chip0_halt2(%h1: tensor<1x4xf32>, %h0: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
// CHECK-NEXT:   %0 = arith.addf %h0, %h1 : tensor<1x4xf32>
// CHECK-NEXT:   func.return %0, %0 : tensor<1x4xf32>, tensor<1x4xf32>
// CHECK:      func.func @chip0_halt3(%s: tensor<1x4xf32>, %x: tensor<1x4xf32>, %i: tensor<i64>, %w0: tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<2x4xf32>) {
// CHECK-NEXT:   %0 = tensor.extract %i[] : tensor<i64>
// CHECK-NEXT:   %1 = arith.index_cast %0 : i64 to index
// CHECK-NEXT:   %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:   %2 = tensor.insert_slice %s into %x[%1, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<1x4xf32>
// CHECK-NEXT:   %3 = linalg.generic {{.*}} ins(%2, %s : tensor<1x4xf32>, tensor<1x4xf32>) outs(%x : tensor<1x4xf32>) {
// CHECK:          %7 = arith.addf %4, %5 : f32
// CHECK:        %8 = linalg.fill ins(%two : f32) outs(%w0 : tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   func.return %3, %8 : tensor<1x4xf32>, tensor<2x4xf32>
// CHECK:      func.func @chip1_halt1(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
// CHECK:        func.return %2 : tensor<1x4xf32>
// CHECK:      func.func @chip1_halt2(%s: tensor<1x4xf32>, %w1: tensor<2x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:   %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:   %0 = linalg.fill ins(%two : f32) outs(%w1 : tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   func.return %0 : tensor<2x4xf32>
// CHECK:      func.func @host(%y0: tensor<2x4xf32>, %y1: tensor<2x4xf32>, %out: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<4x4xf32>) {
// CHECK-NEXT:   %0 = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT:   %1 = tensor.insert_slice %y0 into %0[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
// CHECK-NEXT:   %2 = tensor.insert_slice %y1 into %1[2, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
// CHECK-NEXT:   func.return %out, %2 : tensor<1x4xf32>, tensor<4x4xf32>
// CHECK-NOT:  tp.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @step(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>, %p: i64) -> (tensor<1x4xf32>, tensor<4x4xf32>) {
    %out, %y0 = tp.chip_program on 0 (%w, %x, %p) {
    ^bb0(%w_1: tensor<4x4xf32>, %x_1: tensor<1x4xf32>, %p_1: i64):
      %two = arith.constant 2.000000e+00 : f32
      %w0 = tp.section "w0" on [0] {
        %0 = tp.shard %w_1 at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 4]> : tensor<4x4xf32> -> tensor<2x4xf32, #tp.chip<0>>
        tp.yield %0 : tensor<2x4xf32, #tp.chip<0>>
      } : tensor<2x4xf32, #tp.chip<0>>
      %i = tp.section "i" on [0] {
        %1 = arith.index_cast %p_1 : i64 to index
        tp.yield %1 : index
      } : index
      %h0 = tp.section "h0" on [0] {
        %2 = arith.mulf %x_1, %x_1 : tensor<1x4xf32>
        %e0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
        %c0 = linalg.copy ins(%2 : tensor<1x4xf32>) outs(%e0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
        tp.yield %c0 : tensor<1x4xf32, #tp.chip<0>>
      } : tensor<1x4xf32, #tp.chip<0>>
      %h1 = tp.link 1 sends() as [] receives ["h1"] : () -> tensor<1x4xf32, #tp.chip<1>>
      %s = tp.section "s" on [0] {
        %3 = tp.allreduce %h0, %h1 algorithm "fold" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
        tp.yield %3 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      tp.link 2 sends(%s) as ["s"] receives [] : (tensor<1x4xf32>) -> ()
      %out_1 = tp.section "out" on [0] {
        %4 = tensor.insert_slice %s into %x_1[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<1x4xf32>
        %5 = linalg.add ins(%4, %s : tensor<1x4xf32>, tensor<1x4xf32>) outs(%x_1 : tensor<1x4xf32>) -> tensor<1x4xf32>
        tp.yield %5 : tensor<1x4xf32>
      } : tensor<1x4xf32>
      %y = tp.section "y" on [0] {
        %6 = linalg.fill ins(%two : f32) outs(%w0 : tensor<2x4xf32, #tp.chip<0>>) -> tensor<2x4xf32, #tp.chip<0>>
        tp.yield %6 : tensor<2x4xf32, #tp.chip<0>>
      } : tensor<2x4xf32, #tp.chip<0>>
      tp.finish %out_1, %y : tensor<1x4xf32>, tensor<2x4xf32, #tp.chip<0>>
    } : (tensor<4x4xf32>, tensor<1x4xf32>, i64) -> (tensor<1x4xf32>, tensor<2x4xf32, #tp.chip<0>>)
    %y1 = tp.chip_program on 1 (%w, %x) {
    ^bb0(%w_2: tensor<4x4xf32>, %x_2: tensor<1x4xf32>):
      %two_1 = arith.constant 2.000000e+00 : f32
      %w1 = tp.section "w1" on [1] {
        %7 = tp.shard %w_2 at #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 4]> : tensor<4x4xf32> -> tensor<2x4xf32, #tp.chip<1>>
        tp.yield %7 : tensor<2x4xf32, #tp.chip<1>>
      } : tensor<2x4xf32, #tp.chip<1>>
      %h1_1 = tp.section "h1" on [1] {
        %8 = arith.addf %x_2, %x_2 : tensor<1x4xf32>
        %9 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
        %10 = linalg.copy ins(%8 : tensor<1x4xf32>) outs(%9 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
        tp.yield %10 : tensor<1x4xf32, #tp.chip<1>>
      } : tensor<1x4xf32, #tp.chip<1>>
      %s_1 = tp.link 1 sends(%h1_1) as ["h1"] receives ["s"] : (tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32>
      %y_1 = tp.section "y" on [1] {
        %11 = linalg.fill ins(%two_1 : f32) outs(%w1 : tensor<2x4xf32, #tp.chip<1>>) -> tensor<2x4xf32, #tp.chip<1>>
        tp.yield %11 : tensor<2x4xf32, #tp.chip<1>>
      } : tensor<2x4xf32, #tp.chip<1>>
      tp.finish %y_1 : tensor<2x4xf32, #tp.chip<1>>
    } : (tensor<4x4xf32>, tensor<1x4xf32>) -> (tensor<2x4xf32, #tp.chip<1>>)
    %ys = tp.unshard %y0, %y1 slices [#tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 4]>, #tp.slice<axis = 0, ranges = [(2, 2)], full = [4, 4]>] : tensor<2x4xf32, #tp.chip<0>>, tensor<2x4xf32, #tp.chip<1>> -> tensor<4x4xf32>
    func.return %out, %ys : tensor<1x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A maxloc (fold, on chip 0) becomes one linalg.generic picking pair by pair, as the
// reference does: a larger value wins, an equal one only with a smaller index. Empty
// segments stay (the relay runs every halt); a result that is an argument sent on
// unchanged names it ("argument"), so the host passes on its own buffer.
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.export =
// CHECK-SAME: {\22function\22:\22chip1_halt1\22,\22chip\22:1,\22halt\22:1,\22arguments\22:[{\22kind\22:\22shard\22,\22name\22:\22v\22,\22axis\22:0,\22ranges\22:[[0,2]]},{\22kind\22:\22shard\22,\22name\22:\22i\22,\22axis\22:0,\22ranges\22:[[0,2]]}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22v1\22,\22argument\22:0},{\22kind\22:\22send\22,\22name\22:\22i1\22,\22argument\22:1}]}
// CHECK:      func.func @chip0_halt1() {
// CHECK-NEXT:   func.return
// CHECK:      func.func @chip0_halt2(%v1: tensor<2xf32>, %i1: tensor<2xi64>, %v0: tensor<2xf32>, %i0: tensor<2xi64>) -> tensor<2xi64> {
// CHECK:        %2, %3 = linalg.generic {{.*}} ins(%v0, %v1, %i0, %i1 : tensor<2xf32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) outs(%0, %1 : tensor<2xf32>, tensor<2xi64>) {
// CHECK-NEXT:   ^bb0(%4: f32, %5: f32, %6: i64, %7: i64, %8: f32, %9: i64):
// CHECK-NEXT:     %10 = arith.cmpf ogt, %5, %4 : f32
// CHECK-NEXT:     %11 = arith.cmpf oeq, %5, %4 : f32
// CHECK-NEXT:     %12 = arith.cmpi slt, %7, %6 : i64
// CHECK-NEXT:     %13 = arith.andi %11, %12 : i1
// CHECK-NEXT:     %14 = arith.ori %10, %13 : i1
// CHECK-NEXT:     %15 = arith.select %14, %5, %4 : f32
// CHECK-NEXT:     %16 = arith.select %14, %7, %6 : i64
// CHECK-NEXT:     linalg.yield %15, %16 : f32, i64
// CHECK:        func.return %3 : tensor<2xi64>
// CHECK:      func.func @chip1_halt1(%v1: tensor<2xf32>, %i1: tensor<2xi64>) -> (tensor<2xf32>, tensor<2xi64>) {
// CHECK-NEXT:   func.return %v1, %i1 : tensor<2xf32>, tensor<2xi64>
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @pick(%v: tensor<2xf32>, %i: tensor<2xi64>) -> tensor<2xi64> {
    %ids = tp.chip_program on 0 (%v, %i) {
    ^bb0(%v_0: tensor<2xf32>, %i_0: tensor<2xi64>):
      %v0 = tp.shard %v_0 at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2]> : tensor<2xf32> -> tensor<2xf32, #tp.chip<0>>
      %i0 = tp.shard %i_0 at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2]> : tensor<2xi64> -> tensor<2xi64, #tp.chip<0>>
      %v1, %i1 = tp.link 1 sends() as [] receives ["v1", "i1"] : () -> (tensor<2xf32, #tp.chip<1>>, tensor<2xi64, #tp.chip<1>>)
      %best, %at = tp.section "pick" on [0] {
        %m, %j = tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "fold" : tensor<2xf32, #tp.chip<0>>, tensor<2xf32, #tp.chip<1>> indices tensor<2xi64, #tp.chip<0>>, tensor<2xi64, #tp.chip<1>> -> tensor<2xf32>, tensor<2xi64>
        tp.yield %m, %j : tensor<2xf32>, tensor<2xi64>
      } : tensor<2xf32>, tensor<2xi64>
      tp.finish %at : tensor<2xi64>
    } : (tensor<2xf32>, tensor<2xi64>) -> (tensor<2xi64>)
    tp.chip_program on 1 (%v, %i) {
    ^bb0(%v_1: tensor<2xf32>, %i_1: tensor<2xi64>):
      %v1_1 = tp.shard %v_1 at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2]> : tensor<2xf32> -> tensor<2xf32, #tp.chip<1>>
      %i1_1 = tp.shard %i_1 at #tp.slice<axis = 0, ranges = [(0, 2)], full = [2]> : tensor<2xi64> -> tensor<2xi64, #tp.chip<1>>
      tp.link 1 sends(%v1_1, %i1_1) as ["v1", "i1"] receives [] : (tensor<2xf32, #tp.chip<1>>, tensor<2xi64, #tp.chip<1>>) -> ()
      tp.finish
    } : (tensor<2xf32>, tensor<2xi64>) -> ()
    func.return %ids : tensor<2xi64>
  }
}

// -----

// A tp.shard of a value the chip computed (not a host input: nothing to place) is cut in
// the segment: each range's tensor.extract_slice inserted in turn into the chip's slice.
// CHECK-LABEL: func.func @chip0_halt1(%x0: tensor<4x2xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT:   %d = arith.addf %x0, %x0 : tensor<4x2xf32>
// CHECK-NEXT:   %0 = tensor.empty() : tensor<3x2xf32>
// CHECK-NEXT:   %1 = tensor.extract_slice %d[3, 0] [1, 2] [1, 1] : tensor<4x2xf32> to tensor<1x2xf32>
// CHECK-NEXT:   %2 = tensor.insert_slice %1 into %0[0, 0] [1, 2] [1, 1] : tensor<1x2xf32> into tensor<3x2xf32>
// CHECK-NEXT:   %3 = tensor.extract_slice %d[0, 0] [2, 2] [1, 1] : tensor<4x2xf32> to tensor<2x2xf32>
// CHECK-NEXT:   %4 = tensor.insert_slice %3 into %2[1, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<3x2xf32>
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%x: tensor<4x2xf32>) -> tensor<3x2xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4x2xf32>):
      %y = tp.section "y" on [0] {
        %d = arith.addf %x0, %x0 : tensor<4x2xf32>
        %a = tp.shard %d at #tp.slice<axis = 0, ranges = [(3, 1), (0, 2)], full = [4, 2]> : tensor<4x2xf32> -> tensor<3x2xf32, #tp.chip<0>>
        tp.yield %a : tensor<3x2xf32, #tp.chip<0>>
      } : tensor<3x2xf32, #tp.chip<0>>
      %u = tp.section "u" on [0] {
        %e = tensor.empty() : tensor<3x2xf32>
        %c = linalg.copy ins(%y : tensor<3x2xf32, #tp.chip<0>>) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
        tp.yield %c : tensor<3x2xf32>
      } : tensor<3x2xf32>
      tp.finish %u : tensor<3x2xf32>
    } : (tensor<4x2xf32>) -> (tensor<3x2xf32>)
    func.return %r : tensor<3x2xf32>
  }
}

// -----

// Before tp-link-points there is nothing to cut.
// CHECK-LABEL: error: @sectioned has no per-chip programs: run tp-link-points first [not-sectioned]
builtin.module attributes {tp.chips = 1 : i64} {
  // expected-error @+1 {{@sectioned has no per-chip programs: run tp-link-points first [not-sectioned]}}
  func.func @sectioned(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = tp.section "y" on [0] {
      %0 = arith.addf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----

// An outlined program (per-chip functions called per layer, after tp-link-points and
// tp-relay): each function's body is cut at its links once (@layer_chip<c>_part<k>, whatever
// the number of calls); the program's own ops are cut at its links and at its calls. The
// manifest has one entry per call and part: "function" is its own name (what the relay runs),
// "code" the function it calls, with that call's ports: its layer's weight slice (w.0, then
// w.1), its buffers named by its tag (l0_p, l1_p), its carried values keyed per call. A run of
// one halt may run several entries in order (chip0_halt1_0, then chip0_halt1_1: the program's
// x2, then the first call's part 0). A part doing nothing (after a function's last link) is
// no entry; the program's last stretch stays one even when empty (chip1_halt3_1).
// CHECK-LABEL: builtin.module attributes {tp.chips = 2 : i64, tp.export = "{\22chips\22:2,\22segments\22:[
// CHECK-SAME: {\22function\22:\22chip0_halt1_0\22,\22chip\22:0,\22halt\22:1,\22arguments\22:[{\22kind\22:\22input\22,\22name\22:\22x\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c0_x2_0\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt1_1\22,\22code\22:\22layer_chip0_part0\22,\22chip\22:0,\22halt\22:1,\22arguments\22:[{\22kind\22:\22shard\22,\22name\22:\22w.0\22,\22axis\22:0,\22ranges\22:[[0,4]]},{\22kind\22:\22carry\22,\22name\22:\22c0_x2_0\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c0_a_3\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt2\22,\22code\22:\22layer_chip0_part1\22,\22chip\22:0,\22halt\22:2,\22arguments\22:[{\22kind\22:\22receive\22,\22name\22:\22l0_p\22},{\22kind\22:\22carry\22,\22name\22:\22c0_a_3\22}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22l0_s\22},{\22kind\22:\22carry\22,\22name\22:\22c0_s_1\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt3\22,\22code\22:\22layer_chip0_part0\22,\22chip\22:0,\22halt\22:3,\22arguments\22:[{\22kind\22:\22shard\22,\22name\22:\22w.1\22,\22axis\22:0,\22ranges\22:[[0,4]]},{\22kind\22:\22carry\22,\22name\22:\22c0_s_1\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c0_a_4\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt4\22,\22code\22:\22layer_chip0_part1\22,\22chip\22:0,\22halt\22:4,\22arguments\22:[{\22kind\22:\22receive\22,\22name\22:\22l1_p\22},{\22kind\22:\22carry\22,\22name\22:\22c0_a_4\22}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22l1_s\22},{\22kind\22:\22carry\22,\22name\22:\22c0_s_2\22}]},
// CHECK-SAME: {\22function\22:\22chip0_halt5\22,\22chip\22:0,\22halt\22:5,\22arguments\22:[{\22kind\22:\22carry\22,\22name\22:\22c0_s_2\22}],\22results\22:[{\22kind\22:\22output\22,\22index\22:0,\22argument\22:0}]},
// CHECK-SAME: {\22function\22:\22chip1_halt1_0\22,\22chip\22:1,\22halt\22:1,\22arguments\22:[{\22kind\22:\22input\22,\22name\22:\22x\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c1_x3_0\22}]},
// CHECK-SAME: {\22function\22:\22chip1_halt1_1\22,\22code\22:\22layer_chip1_part0\22,\22chip\22:1,\22halt\22:1,\22arguments\22:[{\22kind\22:\22shard\22,\22name\22:\22w.0\22,\22axis\22:0,\22ranges\22:[[4,4]]},{\22kind\22:\22carry\22,\22name\22:\22c1_x3_0\22}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22l0_p\22}]},
// CHECK-SAME: {\22function\22:\22chip1_halt2_0\22,\22code\22:\22layer_chip1_part1\22,\22chip\22:1,\22halt\22:2,\22arguments\22:[{\22kind\22:\22receive\22,\22name\22:\22l0_s\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c1_s_1\22,\22argument\22:0}]},
// CHECK-SAME: {\22function\22:\22chip1_halt2_1\22,\22code\22:\22layer_chip1_part0\22,\22chip\22:1,\22halt\22:2,\22arguments\22:[{\22kind\22:\22shard\22,\22name\22:\22w.1\22,\22axis\22:0,\22ranges\22:[[4,4]]},{\22kind\22:\22carry\22,\22name\22:\22c1_s_1\22}],\22results\22:[{\22kind\22:\22send\22,\22name\22:\22l1_p\22}]},
// CHECK-SAME: {\22function\22:\22chip1_halt3_0\22,\22code\22:\22layer_chip1_part1\22,\22chip\22:1,\22halt\22:3,\22arguments\22:[{\22kind\22:\22receive\22,\22name\22:\22l1_s\22}],\22results\22:[{\22kind\22:\22carry\22,\22name\22:\22c1_s_2\22,\22argument\22:0}]},
// CHECK-SAME: {\22function\22:\22chip1_halt3_1\22,\22chip\22:1,\22halt\22:3,\22arguments\22:[],\22results\22:[]}],
// CHECK-SAME: \22relay\22:[{\22round\22:0,\22run\22:\22chip0_halt1_0\22},{\22round\22:0,\22run\22:\22chip0_halt1_1\22},{\22round\22:0,\22run\22:\22chip1_halt1_0\22},{\22round\22:0,\22run\22:\22chip1_halt1_1\22},{\22round\22:1,\22copy\22:\22l0_p\22,\22from\22:1,\22to\22:0},{\22round\22:1,\22run\22:\22chip0_halt2\22},{\22round\22:2,\22run\22:\22chip0_halt3\22},{\22round\22:2,\22copy\22:\22l0_s\22,\22from\22:0,\22to\22:1},{\22round\22:2,\22run\22:\22chip1_halt2_0\22},{\22round\22:2,\22run\22:\22chip1_halt2_1\22},{\22round\22:3,\22copy\22:\22l1_p\22,\22from\22:1,\22to\22:0},{\22round\22:3,\22run\22:\22chip0_halt4\22},{\22round\22:4,\22run\22:\22chip0_halt5\22},{\22round\22:4,\22copy\22:\22l1_s\22,\22from\22:0,\22to\22:1},{\22round\22:4,\22run\22:\22chip1_halt3_0\22},{\22round\22:4,\22run\22:\22chip1_halt3_1\22}],
// CHECK-SAME: \22host\22:{\22function\22:\22host\22,
// CHECK-NOT:  tp.
// CHECK:      func.func @chip0_halt1_0(%x0: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   %0 = arith.addf %x0, %x0 : tensor<4xf32>
// CHECK-NEXT:   func.return %0 : tensor<4xf32>
// CHECK:      func.func @layer_chip0_part0(%w0: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK:        %2 = arith.mulf %x, %c : tensor<4xf32>
// CHECK-NEXT:   func.return %2 : tensor<4xf32>
// CHECK:      func.func @layer_chip0_part1(%p: tensor<4xf32>, %a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %0 = arith.addf %a, %p : tensor<4xf32>
// CHECK-NEXT:   func.return %0, %0 : tensor<4xf32>, tensor<4xf32>
// CHECK:      func.func @chip0_halt5(%y1: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NOT:  func.func @layer_chip0
// CHECK:      func.func @layer_chip1_part0(%w1: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK:      func.func @layer_chip1_part1(%s: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   func.return %s : tensor<4xf32>
// CHECK:      func.func @chip1_halt3_1() {
// CHECK-NOT:  func.func @layer
// CHECK:      func.func @host(%r: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NOT:  tp.
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %w0 = tp.section "l_w0" on [0] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(0, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<0>>
      tp.yield %0 : tensor<4xf32, #tp.chip<0>>
    } : tensor<4xf32, #tp.chip<0>>
    %a = tp.section "l_a" on [0] {
      %e = tensor.empty() : tensor<4xf32>
      %c = linalg.copy ins(%w0 : tensor<4xf32, #tp.chip<0>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      %1 = arith.mulf %x, %c : tensor<4xf32>
      tp.yield %1 : tensor<4xf32>
    } : tensor<4xf32>
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %2 = arith.addf %a, %p : tensor<4xf32>
      tp.yield %2 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %w1 = tp.section "l_w1" on [1] {
      %0 = tp.shard %w at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]> : tensor<8xf32> -> tensor<4xf32, #tp.chip<1>>
      tp.yield %0 : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    %p = tp.section "l_p" on [1] {
      %e = tensor.empty() : tensor<4xf32>
      %c = linalg.copy ins(%w1 : tensor<4xf32, #tp.chip<1>>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      %1 = arith.mulf %x, %c : tensor<4xf32>
      tp.yield %1 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>, %w.0: tensor<8xf32>, %w.1: tensor<8xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x, %w.0, %w.1) {
    ^bb0(%x0: tensor<4xf32>, %v0: tensor<8xf32>, %v1: tensor<8xf32>):
      %x2 = tp.section "x2" on [0] {
        %0 = arith.addf %x0, %x0 : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      %y0 = func.call @layer.chip0(%x2, %v0) {tp.tag = "l0_"} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0, %v1) {tp.tag = "l1_"} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
      tp.finish %y1 : tensor<4xf32>
    } : (tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x, %w.0, %w.1) {
    ^bb0(%x1: tensor<4xf32>, %u0: tensor<8xf32>, %u1: tensor<8xf32>):
      %x3 = tp.section "x2" on [1] {
        %0 = arith.addf %x1, %x1 : tensor<4xf32>
        tp.yield %0 : tensor<4xf32>
      } : tensor<4xf32>
      %y0 = func.call @layer.chip1(%x3, %u0) {tp.tag = "l0_"} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0, %u1) {tp.tag = "l1_"} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
      tp.relay_repeat 2 times every 2 rounds strides array<i64: 2, 1> tags ["l0_", "l1_"] {
        tp.copy round 1 "l0_p" from 1 to 0
        tp.run_to round 1 chip 0 halt 2
        tp.run_to round 2 chip 0 halt 3
        tp.copy round 2 "l0_s" from 0 to 1
        tp.run_to round 2 chip 1 halt 2
      }
    }
    func.return %r : tensor<4xf32>
  }
}

// -----

// A per-chip function calling another is refused (functions are one level deep), naming it.
// CHECK-LABEL: error: 'func.call' of @inner.chip0, chip 0's per-chip function, outside a chip's program: only chip 0's program calls it, as one of its statements [not-linkable]
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @inner.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    func.return %x : tensor<4xf32>
  }
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    // expected-error @+1 {{'func.call' of @inner.chip0, chip 0's per-chip function, outside a chip's program: only chip 0's program calls it, as one of its statements [not-linkable]}}
    %y = func.call @inner.chip0(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    func.return %r : tensor<4xf32>
  }
}

// -----

// A program calling a function that is not a per-chip function is refused, naming it.
// CHECK-LABEL: error: tp-export: chip 0's program calls @helper, which is not a per-chip function: only a per-chip function's calls are cut into segments [not-exportable]
builtin.module attributes {tp.chips = 1 : i64} {
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      // expected-error @+1 {{tp-export: chip 0's program calls @helper, which is not a per-chip function: only a per-chip function's calls are cut into segments [not-exportable]}}
      %y = func.call @helper(%x0) : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    func.return %r : tensor<4xf32>
  }
}

// -----

// A tp op with no plain form inside a chip's program (a host store on a chip) is refused.
// CHECK-LABEL: error: tp-export: 'tp.unshard' has no plain form inside a chip's program [not-exportable]
builtin.module attributes {tp.chips = 1 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %a = tp.shard %x0 at #tp.slice<axis = 0, ranges = [(0, 4)], full = [4]> : tensor<4xf32> -> tensor<4xf32, #tp.chip<0>>
      // expected-error @+1 {{tp-export: 'tp.unshard' has no plain form inside a chip's program [not-exportable]}}
      %u = tp.unshard %a slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [4]>] : tensor<4xf32, #tp.chip<0>> -> tensor<4xf32>
      tp.finish %u : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    func.return %r : tensor<4xf32>
  }
}
