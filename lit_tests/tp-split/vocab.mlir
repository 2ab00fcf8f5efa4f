// tp-split over a vocabulary: an embedding table cut by rows (embedding_rowwise) is looked up
// on each chip through a mask of the rows it holds, the chips' lookups summed by one
// tp.allreduce; an LM head cut by vocab rows (colwise_gather_output) leaves each chip its
// logits, returned through tp.unshard, and a greedy argmax over them becomes each chip's argmax
// (its index offset by the chip's first row) and one tp.maxloc. 7 rows over 3 chips: ceil(7/3)
// = 3 rows on chips 0 and 1, the last chip the one left (no padding).
// RUN: tp-opt %s --split-input-file --tp-split="chips=3 plan=%S/Inputs/head.json" | filecheck %s

// CHECK-LABEL: func.func @embedding
// CHECK-NEXT:    %x_weight_c0 = tp.shard %table at #tp.slice<axis = 0, ranges = [(0, 3)], full = [7, 2]> : tensor<7x2xf32> -> tensor<3x2xf32, #tp.chip<0>>
// CHECK-NEXT:    %x_weight_c1 = tp.shard %table at #tp.slice<axis = 0, ranges = [(3, 3)], full = [7, 2]> : tensor<7x2xf32> -> tensor<3x2xf32, #tp.chip<1>>
// CHECK-NEXT:    %x_weight_c2 = tp.shard %table at #tp.slice<axis = 0, ranges = [(6, 1)], full = [7, 2]> : tensor<7x2xf32> -> tensor<1x2xf32, #tp.chip<2>>
// CHECK:         %x_c0 = linalg.generic {{.*}} ins(%ids : tensor<1x2xi64>) outs(%x_e_c0 : tensor<1x2x2xf32, #tp.chip<0>>)
// CHECK:           %row_start = arith.constant 0 : index
// CHECK-NEXT:      %rows = arith.constant 3 : index
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %local_row = arith.subi %row, %row_start : index
// CHECK-NEXT:      %[[GE:.*]] = arith.cmpi sge, %local_row, %[[Z]] : index
// CHECK-NEXT:      %[[LT:.*]] = arith.cmpi slt, %local_row, %rows : index
// CHECK-NEXT:      %holds_row = arith.andi %[[GE]], %[[LT]] : i1
// CHECK-NEXT:      %safe_row = arith.select %holds_row, %local_row, %[[Z]] : index
// CHECK-NEXT:      %v = tensor.extract %x_weight_c0[%safe_row, %col] : tensor<3x2xf32, #tp.chip<0>>
// CHECK-NEXT:      %[[F:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %masked = arith.select %holds_row, %v, %[[F]] : f32
// CHECK-NEXT:      linalg.yield %masked : f32
// CHECK:         %x_c1 = linalg.generic
// CHECK:           %row_start_1 = arith.constant 3 : index
// CHECK-NEXT:      %rows_1 = arith.constant 3 : index
// CHECK:         %x_c2 = linalg.generic
// CHECK:           %row_start_2 = arith.constant 6 : index
// CHECK-NEXT:      %rows_2 = arith.constant 1 : index
// CHECK:           %v_2 = tensor.extract %x_weight_c2[%safe_row_2, %col_2] : tensor<1x2xf32, #tp.chip<2>>
// CHECK:         %x_sum = tp.allreduce %x_c0, %x_c1, %x_c2 : tensor<1x2x2xf32, #tp.chip<0>>, tensor<1x2x2xf32, #tp.chip<1>>, tensor<1x2x2xf32, #tp.chip<2>> -> tensor<1x2x2xf32>
// CHECK-NEXT:    func.return %x_sum
builtin.module {
  func.func @embedding(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<7x2xf32> {tp.name = "model.embed_tokens.weight"}) -> tensor<1x2x2xf32> {
    %e = tensor.empty() : tensor<1x2x2xf32>
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col] : tensor<7x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x2x2xf32>
    func.return %x : tensor<1x2x2xf32>
  }
}

// -----
// A widened (bf16) table: the shard keeps the table's dtype; the mask is on what the body yields.
// CHECK-LABEL: func.func @widened
// CHECK:         %x_weight_c2 = tp.shard %table at #tp.slice<axis = 0, ranges = [(6, 1)], full = [7, 2]> : tensor<7x2xbf16> -> tensor<1x2xbf16, #tp.chip<2>>
// CHECK:           %v = tensor.extract %x_weight_c0[%safe_row, %col] : tensor<3x2xbf16, #tp.chip<0>>
// CHECK-NEXT:      %w = arith.extf %v : bf16 to f32
// CHECK-NEXT:      %[[F:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %masked = arith.select %holds_row, %w, %[[F]] : f32
// CHECK-NEXT:      linalg.yield %masked : f32
// CHECK:         %x_sum = tp.allreduce %x_c0, %x_c1, %x_c2
builtin.module {
  func.func @widened(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<7x2xbf16> {tp.name = "embed_bf16.weight"}) -> tensor<1x2x2xf32> {
    %e = tensor.empty() : tensor<1x2x2xf32>
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col] : tensor<7x2xbf16>
      %w = arith.extf %v : bf16 to f32
      linalg.yield %w : f32
    } -> tensor<1x2x2xf32>
    func.return %x : tensor<1x2x2xf32>
  }
}

// -----
// The head's logits, cut by vocab rows, are returned whole through tp.unshard.
// CHECK-LABEL: func.func @logits
// CHECK:         %logits_weight_c2 = tp.shard %head at #tp.slice<axis = 0, ranges = [(6, 1)], full = [7, 2]> : tensor<7x2xf32> -> tensor<1x2xf32, #tp.chip<2>>
// CHECK:         %logits_c2 = linalg.generic {{.*}} ins(%h, %logits_weight_c2 : tensor<1x2xf32>, tensor<1x2xf32, #tp.chip<2>>) outs(%logits_zeros_c2 : tensor<1x1xf32, #tp.chip<2>>)
// CHECK:         %logits = tp.unshard %logits_c0, %logits_c1, %logits_c2 slices [#tp.slice<axis = 1, ranges = [(0, 3)], full = [1, 7]>, #tp.slice<axis = 1, ranges = [(3, 3)], full = [1, 7]>, #tp.slice<axis = 1, ranges = [(6, 1)], full = [1, 7]>] : tensor<1x3xf32, #tp.chip<0>>, tensor<1x3xf32, #tp.chip<1>>, tensor<1x1xf32, #tp.chip<2>> -> tensor<1x7xf32>
// CHECK-NEXT:    func.return %logits
builtin.module {
  func.func @logits(%h: tensor<1x2xf32> {tp.name = "h"}, %head: tensor<7x2xf32> {tp.name = "lm_head.weight"}) -> tensor<1x7xf32> {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x7xf32>
    %zeros = linalg.fill ins(%z : f32) outs(%e : tensor<1x7xf32>) -> tensor<1x7xf32>
    %logits = linalg.generic {indexing_maps = [affine_map<(b, v, k) -> (b, k)>, affine_map<(b, v, k) -> (v, k)>, affine_map<(b, v, k) -> (b, v)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h, %head : tensor<1x2xf32>, tensor<7x2xf32>) outs(%zeros : tensor<1x7xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x7xf32>
    func.return %logits : tensor<1x7xf32>
  }
}

// -----
// The greedy argmax of the cut logits: each chip's argmax over its rows, the index offset by the
// chip's first row (none on chip 0), then one tp.maxloc; the logits are never gathered.
// CHECK-LABEL: func.func @greedy
// CHECK:         %max_c0, %next_c0 = linalg.generic {{.*}} ins(%logits_c0 : tensor<1x3xf32, #tp.chip<0>>) outs(%max_minit_c0, %max_iinit_c0 : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>)
// CHECK-NOT:       vocab_start
// CHECK:           %ni = arith.select %gt, %g, %iv : i64
// CHECK:         %max_c1, %next_c1 = linalg.generic {{.*}} ins(%logits_c1 : tensor<1x3xf32, #tp.chip<1>>)
// CHECK:           %vocab_start = arith.constant 3 : i64
// CHECK-NEXT:      %vocab_index = arith.addi %g_1, %vocab_start : i64
// CHECK-NEXT:      %ni_1 = arith.select %gt_1, %vocab_index, %iv_1 : i64
// CHECK:         %max_c2, %next_c2 = linalg.generic {{.*}} ins(%logits_c2 : tensor<1x1xf32, #tp.chip<2>>)
// CHECK:           %vocab_start_1 = arith.constant 6 : i64
// CHECK:         %max, %next = tp.maxloc %max_c0, %max_c1, %max_c2 indices %next_c0, %next_c1, %next_c2 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>>, tensor<1xf32, #tp.chip<2>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>>, tensor<1xi64, #tp.chip<2>> -> tensor<1xf32>, tensor<1xi64>
// CHECK-NOT:     tp.unshard
// CHECK:         func.return %next
builtin.module {
  func.func @greedy(%h: tensor<1x2xf32> {tp.name = "h"}, %head: tensor<7x2xf32> {tp.name = "lm_head.weight"}) -> tensor<1xi64> {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x7xf32>
    %zeros = linalg.fill ins(%z : f32) outs(%e : tensor<1x7xf32>) -> tensor<1x7xf32>
    %logits = linalg.generic {indexing_maps = [affine_map<(b, v, k) -> (b, k)>, affine_map<(b, v, k) -> (v, k)>, affine_map<(b, v, k) -> (b, v)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h, %head : tensor<1x2xf32>, tensor<7x2xf32>) outs(%zeros : tensor<1x7xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x7xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %i0 = arith.constant 0 : i64
    %em = tensor.empty() : tensor<1xf32>
    %minit = linalg.fill ins(%ninf : f32) outs(%em : tensor<1xf32>) -> tensor<1xf32>
    %ei = tensor.empty() : tensor<1xi64>
    %iinit = linalg.fill ins(%i0 : i64) outs(%ei : tensor<1xi64>) -> tensor<1xi64>
    %max, %next = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<1x7xf32>) outs(%minit, %iinit : tensor<1xf32>, tensor<1xi64>) {
    ^bb0(%lv: f32, %mv: f32, %iv: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %gt = arith.cmpf ogt, %lv, %mv : f32
      %nm = arith.select %gt, %lv, %mv : f32
      %ni = arith.select %gt, %g, %iv : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32>, tensor<1xi64>
    func.return %next : tensor<1xi64>
  }
}
