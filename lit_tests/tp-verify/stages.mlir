// The obligation holds at every stage: in sections, in per-chip programs and in what a
// program hands the host. Each refused case has a sound twin beside it, certified.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// A leak at the top level of a chip's own program.
// CHECK-LABEL: error: 'linalg.add' computes spine value %bad from %h1 on chip 1: chip data reaches the spine only through an all-reduce over every chip [leak-to-spine]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @program_leak(%x: tensor<4xf32>) -> tensor<4xf32> {
    %out = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.finish %x0 : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %h1 = tp.section "h1" on [1] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<1>>
        %m = linalg.add ins(%x1, %x1 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
        tp.yield %m : tensor<4xf32, #tp.chip<1>>
      } : tensor<4xf32, #tp.chip<1>>
      %e1 = tensor.empty() : tensor<4xf32>
      %bad = linalg.add ins(%x1, %h1 : tensor<4xf32>, tensor<4xf32, #tp.chip<1>>) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %out : tensor<4xf32>
  }
}

// -----
// The same partial reaching the spine through the all-reduce on chip 0, its sum sent back.
// CHECK-LABEL: func.func @program_allreduce
// CHECK: tp.allreduce %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @program_allreduce(%x: tensor<4xf32>) -> tensor<4xf32> {
    %out = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %h0 = tp.section "h0" on [0] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
        %m = linalg.add ins(%x0, %x0 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
        tp.yield %m : tensor<4xf32, #tp.chip<0>>
      } : tensor<4xf32, #tp.chip<0>>
      %h1 = tp.link 1 sends() as [] receives ["h1"] : () -> tensor<4xf32, #tp.chip<1>>
      %s = tp.section "s" on [0] {
        %r = tp.allreduce %h0, %h1 algorithm "fold" : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<4xf32>
        tp.yield %r : tensor<4xf32>
      } : tensor<4xf32>
      tp.link 2 sends(%s) as ["s"] receives [] : (tensor<4xf32>) -> ()
      tp.finish %s : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %h1 = tp.section "h1" on [1] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<1>>
        %m = linalg.add ins(%x1, %x1 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
        tp.yield %m : tensor<4xf32, #tp.chip<1>>
      } : tensor<4xf32, #tp.chip<1>>
      %s = tp.link 1 sends(%h1) as ["h1"] receives ["s"] : (tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32>
      tp.finish
    } : (tensor<4xf32>) -> ()
    func.return %out : tensor<4xf32>
  }
}

// -----
// A function handing the host chip 1's partial: no all-reduce, no host store.
// CHECK-LABEL: error: result #0 %h on chip 1 is chip 1's data: the host gets the spine (an all-reduce's sum) or a host store (tp.unshard), never one chip's data [chip-result]
// CHECK-NEXT: func.return %h
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @partial_out(%x: tensor<4xf32>) -> tensor<4xf32, #tp.chip<1>> {
    tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      tp.finish
    } : (tensor<4xf32>) -> ()
    %h = tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %h1 = tp.section "h1" on [1] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<1>>
        %m = linalg.add ins(%x1, %x1 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
        tp.yield %m : tensor<4xf32, #tp.chip<1>>
      } : tensor<4xf32, #tp.chip<1>>
      tp.finish %h1 : tensor<4xf32, #tp.chip<1>>
    } : (tensor<4xf32>) -> (tensor<4xf32, #tp.chip<1>>)
    func.return %h : tensor<4xf32, #tp.chip<1>>
  }
}

// -----
// Each chip's slice stored back by the host: a host output.
// CHECK-LABEL: func.func @stored_out
// CHECK: tp.unshard %h0, %h1
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @stored_out(%x: tensor<4xf32>) -> tensor<8xf32> {
    %h0 = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %m0 = tp.section "h0" on [0] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<0>>
        %m = linalg.add ins(%x0, %x0 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<0>>) -> tensor<4xf32, #tp.chip<0>>
        tp.yield %m : tensor<4xf32, #tp.chip<0>>
      } : tensor<4xf32, #tp.chip<0>>
      tp.finish %m0 : tensor<4xf32, #tp.chip<0>>
    } : (tensor<4xf32>) -> (tensor<4xf32, #tp.chip<0>>)
    %h1 = tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %m1 = tp.section "h1" on [1] {
        %e = tensor.empty() : tensor<4xf32, #tp.chip<1>>
        %m = linalg.add ins(%x1, %x1 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32, #tp.chip<1>>) -> tensor<4xf32, #tp.chip<1>>
        tp.yield %m : tensor<4xf32, #tp.chip<1>>
      } : tensor<4xf32, #tp.chip<1>>
      tp.finish %m1 : tensor<4xf32, #tp.chip<1>>
    } : (tensor<4xf32>) -> (tensor<4xf32, #tp.chip<1>>)
    %k = tp.unshard %h0, %h1 slices [#tp.slice<axis = 0, ranges = [(0, 4)], full = [8]>, #tp.slice<axis = 0, ranges = [(4, 4)], full = [8]>] : tensor<4xf32, #tp.chip<0>>, tensor<4xf32, #tp.chip<1>> -> tensor<8xf32>
    func.return %k : tensor<8xf32>
  }
}

// -----
// A spine scalar computed by chip 0's section (as a bad fusion would place it) and read by
// chip 1: scalars do not cross chips.
// CHECK-LABEL: error: %pos is computed on chips [0], but is read on chip 1: a scalar does not cross chips, so it is computed wherever it is read [section-chip]
// CHECK-NEXT: %w1 = tp.section "w1" on [1]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @scalar_on_one_chip(%n: i64, %k0: tensor<4xf32, #tp.chip<0>>, %k1: tensor<4xf32, #tp.chip<1>>, %r: tensor<1xf32, #tp.chip<1>>) -> () {
    %pos, %w0 = tp.section "w0" on [0] {
      %i = arith.index_cast %n : i64 to index
      %r0 = tensor.extract_slice %k0[0] [1] [1] : tensor<4xf32, #tp.chip<0>> to tensor<1xf32, #tp.chip<0>>
      %w = tensor.insert_slice %r0 into %k0[%i] [1] [1] : tensor<1xf32, #tp.chip<0>> into tensor<4xf32, #tp.chip<0>>
      tp.yield %i, %w : index, tensor<4xf32, #tp.chip<0>>
    } : index, tensor<4xf32, #tp.chip<0>>
    %w1 = tp.section "w1" on [1] {
      %w = tensor.insert_slice %r into %k1[%pos] [1] [1] : tensor<1xf32, #tp.chip<1>> into tensor<4xf32, #tp.chip<1>>
      tp.yield %w : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}

// -----
// CHECK-LABEL: func.func @scalar_everywhere
// CHECK: tp.section "pos" on [0, 1]
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @scalar_everywhere(%n: i64, %k0: tensor<4xf32, #tp.chip<0>>, %k1: tensor<4xf32, #tp.chip<1>>, %r: tensor<1xf32, #tp.chip<1>>) -> () {
    %pos = tp.section "pos" on [0, 1] {
      %i = arith.index_cast %n : i64 to index
      tp.yield %i : index
    } : index
    %w1 = tp.section "w1" on [1] {
      %w = tensor.insert_slice %r into %k1[%pos] [1] [1] : tensor<1xf32, #tp.chip<1>> into tensor<4xf32, #tp.chip<1>>
      tp.yield %w : tensor<4xf32, #tp.chip<1>>
    } : tensor<4xf32, #tp.chip<1>>
    func.return
  }
}
